//go:build tools

// Package tools pins Volcano's vc-controller-manager command so that
// `go mod tidy` keeps the modules it needs in this module. The binary is
// built with `go build volcano.sh/volcano/cmd/controller-manager` from this
// directory (see integration/hack/build-tools.sh). It lives in its own
// module so that the controller's dependencies stay out of rdmatopo's
// go.mod.
package tools

import (
	_ "volcano.sh/volcano/cmd/controller-manager"
)
