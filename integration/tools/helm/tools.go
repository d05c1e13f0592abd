//go:build tools

// Package tools pins helm's command (helm.sh/helm/v4/cmd/helm) so that
// `go mod tidy` keeps the modules it needs in this module. The binary is
// built with `go build helm.sh/helm/v4/cmd/helm` from this directory (see
// integration/hack/build-tools.sh) and renders Volcano's own chart with
// config/helm/values-rdmatopo.yaml in integration/helm_test.go. helm needs
// newer Kubernetes libraries than rdmatopo's go.mod (Kubernetes 1.30, as
// Volcano v1.10 needs), so it lives in its own module.
package tools

import (
	_ "helm.sh/helm/v4/cmd/helm"
)
