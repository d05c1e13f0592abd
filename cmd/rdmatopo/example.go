package main

import (
	"io"

	"github.com/rdmatopo/rdmatopo/examples"
)

// runExample implements `rdmatopo example cluster|workload`: it prints the
// embedded default input, to read, edit and feed back to simulate.
func runExample(args []string, stdout io.Writer) error {
	fs := newFlags("example", "cluster|workload", stdout)
	if err := fs.parse(args, 1); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return badInputf("example: name one example: cluster or workload")
	}
	var data []byte
	switch fs.Arg(0) {
	case "cluster":
		data = examples.Cluster
	case "workload":
		data = examples.Workload
	default:
		return badInputf("example: unknown example %q: cluster or workload", fs.Arg(0))
	}
	_, err := stdout.Write(data)
	return err
}
