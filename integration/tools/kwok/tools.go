//go:build tools

// Package tools pins kwok's command (sigs.k8s.io/kwok/cmd/kwok) so that
// `go mod tidy` keeps the modules it needs in this module. The binary is
// built with `go build sigs.k8s.io/kwok/cmd/kwok` from this directory (see
// integration/hack/build-tools.sh). kwok v0.8.0 needs Kubernetes 0.36
// libraries, so it lives in its own module, away from rdmatopo's go.mod
// (Kubernetes 1.30, as Volcano v1.10 needs).
package tools

import (
	_ "sigs.k8s.io/kwok/cmd/kwok"
)
