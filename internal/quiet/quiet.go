// Package quiet silences klog before any other package of rdmatopo's
// command-line tools initialises: Volcano packages log from init() (one
// reports a missing kubeconfig at start-up) and from every scheduling cycle,
// and a tool's stdout and stderr are reserved for its own output.
//
// Go initialises packages in import-path order among those whose imports
// are ready; this package depends on klog only and its path sorts before
// Volcano's and Kubernetes', so its init runs first.
package quiet

import (
	"flag"
	"strconv"

	"github.com/go-logr/logr"
	"k8s.io/klog/v2"
)

func init() {
	klog.SetLogger(logr.Discard())
}

// Verbose sends klog output to stderr at verbosity level v (v < 0 keeps
// logs silenced).
func Verbose(v int) {
	if v < 0 {
		return
	}
	klog.ClearLogger()
	fs := flag.NewFlagSet("klog", flag.ContinueOnError)
	klog.InitFlags(fs)
	_ = fs.Set("logtostderr", "true")
	_ = fs.Set("v", strconv.Itoa(v))
}
