// Command kubectl-rdmatopo-simulate is the kubectl plugin binary of
// `kubectl rdmatopo simulate`: kubectl runs it for that command line (the
// longest plugin name the words before the first flag spell), and
// kubectl-rdmatopo runs it for `simulate` given after a flag and for
// explain's next session. It runs the real Volcano scheduler in memory,
// which kubectl-rdmatopo does not link.
//
//	kubectl rdmatopo simulate [--workload FILE] [-o table|json|yaml] [--map FILE.svg]
//
// The usual kubectl flags select the cluster ($KUBECONFIG, --kubeconfig,
// --context, --as and the other impersonation flags).
package main

import (
	"os"

	// Initialises before Volcano's packages and silences klog (see its doc).
	_ "github.com/rdmatopo/rdmatopo/internal/quiet"

	"github.com/rdmatopo/rdmatopo/internal/kubectlcmd/simulatecmd"
)

func main() {
	os.Exit(simulatecmd.Main(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}
