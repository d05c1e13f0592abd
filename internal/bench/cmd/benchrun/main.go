// Command benchrun runs the rdmatopo benchmark, the code behind
// `rdmatopo bench`, with klog silenced as the CLI does:
//
//	go run ./internal/bench/cmd/benchrun --nodes 1000 -o json
package main

import (
	"os"

	"github.com/go-logr/logr"
	"k8s.io/klog/v2"

	"github.com/rdmatopo/rdmatopo/internal/bench"
)

func main() {
	klog.SetLogger(logr.Discard())
	os.Exit(bench.Main(os.Args[1:], os.Stdout, os.Stderr))
}
