//go:build tools

// Package tools pins the kube-apiserver command so that `go mod tidy` keeps
// every module it needs in this module's go.mod and go.sum. The binary is
// built with `go build k8s.io/kubernetes/cmd/kube-apiserver` from this
// directory; see integration/Makefile.
package tools

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
)
