// Command rdmatopo-dev holds the developer tools that measure the scheduler
// and are kept out of the operator's binaries:
//
//	rdmatopo-dev bench [flags]   rdmatopo's conf against stock Volcano's on a generated trace
//	rdmatopo-dev soak [flags]    the session loop under churn, checking the invariants
//
// Both run the real Volcano scheduler in-process on its mock cache. Exit
// codes are those of each command (bench: 0 ran, 1 failed, 2 bad flags;
// soak: 0 no violation, 1 violations, 2 bad flags).
package main

import (
	"fmt"
	"io"
	"os"

	// Initialises before Volcano's packages and silences klog (see its doc).
	_ "github.com/rdmatopo/rdmatopo/internal/quiet"

	"github.com/rdmatopo/rdmatopo/internal/devtools/bench"
	"github.com/rdmatopo/rdmatopo/internal/devtools/soak"
)

const exitUsage = 2

type command struct {
	name    string
	summary string
	main    func(args []string, stdout, stderr io.Writer) int
}

var commands = []command{
	{name: "bench", summary: "replay a generated trace with rdmatopo's conf and stock Volcano's, and compare placements", main: bench.Main},
	{name: "soak", summary: "run many cycles with bind failures, KCNR lag and preemption, checking the scheduler's invariants", main: soak.Main},
}

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run dispatches one command line and returns its exit code.
func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		fmt.Fprintln(stdout, "rdmatopo-dev: developer tools of rdmatopo")
		fmt.Fprintln(stdout)
		fmt.Fprintln(stdout, "Commands:")
		for _, c := range commands {
			fmt.Fprintf(stdout, "  %-6s %s\n", c.name, c.summary)
		}
		fmt.Fprintln(stdout)
		fmt.Fprintln(stdout, "Run 'rdmatopo-dev COMMAND --help' for a command's flags.")
		return 0
	}
	for _, c := range commands {
		if c.name == args[0] {
			return c.main(args[1:], stdout, stderr)
		}
	}
	fmt.Fprintf(stderr, "error: unknown command %q (commands: bench, soak)\n", args[0])
	return exitUsage
}
