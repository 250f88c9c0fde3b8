//go:build linux

package kubetest

import "syscall"

// procAttr makes the kernel kill kube-scheduler when the test binary dies
// without running its cleanup (a test timeout, a panic).
func procAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL} }
