//go:build tools

// Package tools pins Volcano's vc-controller-manager command and its stock
// vc-scheduler (the end-to-end benchmark's baseline) so that `go mod tidy`
// keeps the modules they need in this module. The binaries are built with
// `go build volcano.sh/volcano/cmd/controller-manager` and `go build
// volcano.sh/volcano/cmd/scheduler` from this directory (see
// integration/hack/build-tools.sh). It lives in its own
// module so that the controller's dependencies stay out of rdmatopo's
// go.mod.
package tools

import (
	_ "volcano.sh/volcano/cmd/controller-manager"
	_ "volcano.sh/volcano/cmd/scheduler"
)
