//go:build unix && !linux

package acctest

import "syscall"

func setPdeathsig(*syscall.SysProcAttr) {}
