//go:build tools

// Package tools pins the Kubernetes commands the tests run: a real
// kube-apiserver and kube-scheduler, built from the module proxy at
// k8s.io/kubernetes v1.34.4 (scripts/kube-bins.sh builds them).
package tools

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-scheduler"
)
