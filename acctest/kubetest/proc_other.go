//go:build !linux

package kubetest

import "syscall"

// procAttr: elsewhere than Linux, kube-scheduler is stopped by the test's
// cleanup only.
func procAttr() *syscall.SysProcAttr { return nil }
