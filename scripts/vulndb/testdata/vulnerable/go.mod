module example.com/vulnerable

go 1.26.0

toolchain go1.26.10

require golang.org/x/text v0.36.0
