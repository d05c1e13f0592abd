//go:build tools

// Package tools pins Kueue's manager so that `go mod tidy` keeps every
// module it needs in this module's go.mod and go.sum. Kueue is built on its
// own (it needs newer Kubernetes libraries than kube-apiserver's module);
// see integration/hack/build-tools.sh.
package tools

import (
	_ "sigs.k8s.io/kueue/cmd/kueue"
)
