// Command vulnerable calls golang.org/x/text/unicode/norm at v0.36.0, a
// version with a published vulnerability (GO-2026-5970, fixed in v0.39.0):
// scripts/govulncheck.sh scans it after the project, and fails unless
// govulncheck reports that finding, so a database that finds nothing
// cannot pass for a clean scan.
package main

import (
	"fmt"

	"golang.org/x/text/unicode/norm"
)

func main() {
	fmt.Println(norm.NFC.String("e\u0301"))
}
