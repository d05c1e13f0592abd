// Command vc-scheduler is the Volcano v1.10.0 scheduler with the rdmatopo
// plugin (rdma-topology) and actions (topology-allocate, topology-preempt,
// topology-reclaim) compiled in.
//
// It accepts exactly the flags of the stock volcanosh/vc-scheduler:v1.10.0
// binary and behaves like it, so the image built from this repository's
// Dockerfile is a drop-in replacement in the stock volcano-scheduler
// Deployment: only the image and the scheduler conf change. Everything
// Volcano ships (its actions and plugins) stays available; run builds the
// rdma-topology runtime and registers rdmatopo's plugin and actions over it
// (package registry) before the scheduler starts.
package main

import (
	"fmt"
	"os"
	"runtime"
	"time"

	"github.com/spf13/pflag"
	// Set GOMAXPROCS from the container's CPU quota at start-up, as the
	// stock binary does (main then raises it to the CPU count, also as the
	// stock binary does).
	_ "go.uber.org/automaxprocs"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	// Cloud-provider credential plugins for kubeconfig files.
	_ "k8s.io/client-go/plugin/pkg/client/auth"
	cliflag "k8s.io/component-base/cli/flag"
	componentbaseoptions "k8s.io/component-base/config/options"
	"k8s.io/klog/v2"

	// The stock binary serves pprof handlers on its metrics/healthz mux.
	_ "net/http/pprof"

	"volcano.sh/volcano/cmd/scheduler/app"
	"volcano.sh/volcano/cmd/scheduler/app/options"
	volcanoutil "volcano.sh/volcano/pkg/util"
	"volcano.sh/volcano/pkg/version"

	// Volcano's own actions and plugins.
	_ "volcano.sh/volcano/pkg/scheduler/actions"
	_ "volcano.sh/volcano/pkg/scheduler/plugins"
	// Volcano's assertion hooks (panic or log on broken invariants,
	// controlled by the PANIC_ON_ERROR environment variable).
	_ "volcano.sh/volcano/pkg/scheduler/util/assert"

	rdmatopoversion "github.com/rdmatopo/rdmatopo/internal/version"
	"github.com/rdmatopo/rdmatopo/plugins/rdmatopology"
	"github.com/rdmatopo/rdmatopo/registry"
)

// logFlushFrequency bounds how long buffered klog output may wait before it
// is written; the flag name and default match the stock binary.
var logFlushFrequency = pflag.Duration("log-flush-frequency", 5*time.Second,
	"Maximum number of seconds between log flushes")

func main() {
	os.Exit(run())
}

// run parses the command line into Volcano's server options and runs the
// scheduler until it stops. It returns the process exit code.
func run() int {
	runtime.GOMAXPROCS(runtime.NumCPU())
	v := rdmatopoversion.Get()
	rdmatopology.SetBuildInfo(v.Version, v.GitCommit, v.Volcano)

	klog.InitFlags(nil)

	flags := pflag.CommandLine
	opts := options.NewServerOption()
	opts.AddFlags(flags)
	utilfeature.DefaultMutableFeatureGate.AddFlag(flags)

	// Leader election defaults and flags: the lease is named after the
	// scheduler names, so the stock and this binary never share a lease
	// unless they schedule for the same names.
	volcanoutil.LeaderElectionDefault(&opts.LeaderElection)
	opts.LeaderElection.ResourceName = volcanoutil.GenerateComponentName(opts.SchedulerNames)
	componentbaseoptions.BindLeaderElectionFlags(&opts.LeaderElection, flags)
	opts.RegisterOptions()

	cliflag.InitFlags()

	if opts.PrintVersion {
		version.PrintVersionAndExit()
		return 0
	}

	if err := opts.CheckOptionOrDie(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if opts.CaCertFile != "" && opts.CertFile != "" && opts.KeyFile != "" {
		if err := opts.ParseCAFiles(nil); err != nil {
			fmt.Fprintf(os.Stderr, "failed to parse CA file %q: %v\n", opts.CaCertFile, err)
			return 1
		}
	}

	watchLeadership(opts.LeaderElection.LeaderElect)

	// The rdma-topology runtime: built from the first session's client
	// config (informers) and plugin arguments, rebuilt when they change.
	// The claims of waiting hard gangs are kept beside the leader-election
	// lease, so that a restarted or new leader keeps their rooms.
	registry.Install(rdmatopology.NewClusterRuntime(
		rdmatopology.WithClaimsStore(opts.LeaderElection.ResourceNamespace, opts.LeaderElection.ResourceName)))

	klog.StartFlushDaemon(*logFlushFrequency)
	defer klog.Flush()

	if err := app.Run(opts); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}
