// Command kubectl-rdmatopo is the kubectl plugin of rdmatopo (`kubectl
// rdmatopo ...`): read-only views of a live cluster's RDMA fabric and its
// gangs. `rdmatopo` stays the offline tool for files. What runs a Volcano
// session (simulate, explain's next session) is the second plugin binary,
// kubectl-rdmatopo-simulate; this one links no Volcano scheduler package
// (TestNoVolcanoScheduler).
//
//	kubectl rdmatopo topology [-o table|json|yaml]
//	kubectl rdmatopo explain PODGROUP|job/NAME|pytorchjob/NAME [-n NAMESPACE] [-o table|json|yaml]
//	kubectl rdmatopo simulate [--workload FILE] [-o table|json|yaml] [--map FILE.svg]
//	kubectl rdmatopo map [--file FILE.svg] [-o svg|table|json|yaml]
//	kubectl rdmatopo dashboard [--listen 127.0.0.1:8080]
//	kubectl rdmatopo version [-o table|json|yaml]
//
// The usual kubectl flags select the cluster ($KUBECONFIG, --kubeconfig,
// --context, -n, --as and the other impersonation flags).
package main

import (
	"os"

	// Silences klog before anything logs (see its doc).
	_ "github.com/rdmatopo/rdmatopo/internal/quiet"

	"github.com/rdmatopo/rdmatopo/internal/kubectlcmd"
)

func main() {
	os.Exit(kubectlcmd.Main(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}
