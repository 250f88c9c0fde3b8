package residency

import (
	"regexp"
	"sync"
)

// lazyRegexp compiles expr on first use, not at package init: every
// provider process Terraform starts (three a plan) pays package init, and
// most of them never match most of these expressions.
func lazyRegexp(expr string) func() *regexp.Regexp {
	return sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(expr) })
}
