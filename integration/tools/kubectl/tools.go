//go:build tools

// Package tools pins kubectl (k8s.io/kubernetes v1.30.2, the version of
// the test API server) so that `go mod tidy` keeps every module it needs
// in this module's go.mod and go.sum. The integration tests run the docs'
// kubectl commands with it, as written; see integration/hack/build-tools.sh.
// It is a module of its own so that the kube-apiserver module (and the
// stamps of the binaries built from it) stay as they are.
package tools

import (
	_ "k8s.io/kubernetes/cmd/kubectl"
)
