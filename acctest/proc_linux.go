//go:build linux

package acctest

import "syscall"

// setPdeathsig makes the kernel kill moto when the test binary dies without
// running its cleanup (a test timeout, a panic).
func setPdeathsig(a *syscall.SysProcAttr) { a.Pdeathsig = syscall.SIGKILL }
