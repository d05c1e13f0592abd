//go:build tools

// Package tools pins the kube-apiserver, kube-controller-manager and
// kube-scheduler commands so that `go mod tidy` keeps every module they need
// in this module's go.mod and go.sum. All three are built from this
// directory (one module, so they share compiled Kubernetes packages); see
// integration/hack/build-tools.sh.
package tools

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
	_ "k8s.io/kubernetes/cmd/kube-scheduler"
)
