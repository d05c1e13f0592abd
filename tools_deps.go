//go:build tools

package rdmatopo

import (
	_ "github.com/kubewharf/katalyst-api/pkg/apis/node/v1alpha1"
	_ "github.com/kubewharf/katalyst-api/pkg/client/clientset/versioned"
	_ "github.com/stretchr/testify/require"
	_ "volcano.sh/volcano/pkg/scheduler"
	_ "volcano.sh/volcano/pkg/scheduler/uthelper"
	_ "volcano.sh/volcano/cmd/scheduler/app"
)
