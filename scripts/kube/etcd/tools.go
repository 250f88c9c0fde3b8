//go:build tools

// Package tools pins etcd, the store kube-apiserver runs on in the tests
// (scripts/kube-bins.sh builds it).
package tools

import _ "go.etcd.io/etcd/server/v3"
