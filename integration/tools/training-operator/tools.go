//go:build tools

// Package tools pins the Kubeflow training operator command (v1.8.1) so that
// `go mod tidy` keeps the modules it needs in this module. The operator is
// built against Kubernetes 0.29 libraries, which is why it has a module of
// its own instead of living in rdmatopo's (Kubernetes 0.30) module.
package tools

import (
	_ "github.com/kubeflow/training-operator/cmd/training-operator.v1"
)
