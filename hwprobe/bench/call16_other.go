//go:build !(amd64 && (linux || freebsd))

package bench

const canCall16 = false

func callC(fn uintptr, args ...uintptr) uintptr {
	panic("bench: 16-argument C calls are only implemented on linux/amd64")
}
