//go:build tools

// Package tools pins the Kubeflow Trainer controller manager and the JobSet
// controller so that `go mod tidy` keeps every module they need in this
// module's go.mod and go.sum. Both are built from this directory (one
// module: they share controller-runtime and the Kubernetes libraries); see
// integration/hack/build-tools.sh.
package tools

import (
	_ "github.com/kubeflow/trainer/v2/cmd/trainer-controller-manager"
	_ "sigs.k8s.io/jobset"
)
