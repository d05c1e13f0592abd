// Command rdmatopo is the rdmatopo command-line tool:
//
//	rdmatopo simulate [--cluster FILE] [--workload FILE] [--scheduler-conf FILE] [-o table|json] [--map FILE.svg] [--kubeconfig FILE]
//	rdmatopo topology --kubeconfig FILE
//	rdmatopo validate [--scheduler-conf FILE] [--cluster FILE] [--workload FILE] [--strict]
//	rdmatopo example cluster|workload
//	rdmatopo export hypernodes|topology-labels [--cluster FILE | --kubeconfig FILE] [-o yaml|table]
//	rdmatopo companion --kubeconfig FILE [flags]
//
// bench and soak, the developer tools, are in rdmatopo-dev (make build-dev).
//
// simulate runs the real Volcano scheduler (the conf's actions and plugins,
// rdma-topology and topology-allocate included) over a cluster and a
// workload, cycle after cycle until nothing new binds, and reports where
// every gang landed. It exits 0 when it ran (pending jobs included), 2 on
// unusable input (one line on stderr naming the file, the object and the
// field) and 1 on any other failure. Topology problems of the cluster's
// KCNRs are warnings on stderr (validate --strict makes them errors).
package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/pflag"

	// Initialises before Volcano's packages and silences klog (see its doc).
	"github.com/rdmatopo/rdmatopo/internal/quiet"
)

// Exit codes.
const (
	exitOK    = 0
	exitError = 1
	exitUsage = 2
)

// inputError is unusable input: exit code 2.
type inputError struct{ err error }

func (e *inputError) Error() string { return e.err.Error() }
func (e *inputError) Unwrap() error { return e.err }

// badInput wraps err as unusable input.
func badInput(err error) error { return &inputError{err: err} }

// badInputf formats unusable input.
func badInputf(format string, args ...any) error { return badInput(fmt.Errorf(format, args...)) }

// command is one subcommand: run returns an error (printed as one line,
// exit 2 for unusable input, else 1) and may write warnings to stderr; main,
// for commands that handle their own output, returns the exit code.
type command struct {
	name    string
	summary string
	run     func(args []string, stdout, stderr io.Writer) error
	main    func(args []string, stdout, stderr io.Writer) int
}

// stdoutOnly adapts a command that writes nothing but its output.
func stdoutOnly(run func(args []string, stdout io.Writer) error) func(args []string, stdout, stderr io.Writer) error {
	return func(args []string, stdout, _ io.Writer) error { return run(args, stdout) }
}

var commands = []command{
	{name: "simulate", summary: "run the Volcano scheduler over a cluster and a workload, and show where each gang lands", run: runSimulate},
	{name: "topology", summary: "print a live cluster's RDMA fabric: per S0 its nodes, free and used NICs, and holders", run: stdoutOnly(runTopology)},
	{name: "validate", summary: "check a scheduler conf (and, optionally, cluster and workload files) without running", run: runValidate},
	{name: "companion", summary: "run beside another scheduler: publish the fabric, choose NICs at bind (admission webhook)", run: runCompanion},
	{name: "export", summary: "print what the companion publishes: Volcano HyperNodes or node topology labels", run: stdoutOnly(runExport)},
	{name: "example", summary: "print the embedded default cluster or workload (YAML)", run: stdoutOnly(runExample)},
}

// movedCommands are the developer commands that left this tool: naming one
// says where it went (exit 2) instead of "unknown command".
var movedCommands = map[string]bool{"bench": true, "soak": true}

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run executes one command line and returns the exit code. Errors are
// written to stderr as a single line.
func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		usage(stdout)
		return exitOK
	}
	for _, c := range commands {
		if c.name != args[0] {
			continue
		}
		if c.main != nil {
			return c.main(args[1:], stdout, stderr)
		}
		err := c.run(args[1:], stdout, stderr)
		switch {
		case err == nil:
			return exitOK
		case errors.Is(err, pflag.ErrHelp):
			return exitOK
		}
		fmt.Fprintln(stderr, "error: "+oneLine(err.Error()))
		var ie *inputError
		if errors.As(err, &ie) {
			return exitUsage
		}
		return exitError
	}
	if movedCommands[args[0]] {
		fmt.Fprintf(stderr, "error: %q moved to the developer tool rdmatopo-dev (make build-dev; then bin/rdmatopo-dev %s)\n", args[0], args[0])
		return exitUsage
	}
	names := make([]string, len(commands))
	for i, c := range commands {
		names[i] = c.name
	}
	fmt.Fprintf(stderr, "error: unknown command %q (commands: %s)\n", args[0], strings.Join(names, ", "))
	return exitUsage
}

// usage prints the command list.
func usage(w io.Writer) {
	fmt.Fprintln(w, "rdmatopo: topology-aware gang placement for RDMA training jobs on Volcano")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Commands:")
	for _, c := range commands {
		fmt.Fprintf(w, "  %-9s %s\n", c.name, c.summary)
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Run 'rdmatopo COMMAND --help' for a command's flags.")
}

// oneLine folds a message onto one line.
func oneLine(s string) string {
	return strings.Join(strings.Fields(strings.ReplaceAll(s, "\n", " ")), " ")
}

// flagSet is a command's flags plus the --v flag every command has.
type flagSet struct {
	*pflag.FlagSet
	name string
	v    *int
}

// newFlags returns a flag set for a command that reports parse errors as
// unusable input, with a --v flag for scheduler logs.
func newFlags(name, synopsis string, stdout io.Writer) *flagSet {
	fs := pflag.NewFlagSet(name, pflag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {
		fmt.Fprintf(stdout, "Usage: rdmatopo %s %s\n\nFlags:\n", name, synopsis)
		fs.SetOutput(stdout)
		fs.PrintDefaults()
		fs.SetOutput(io.Discard)
	}
	v := fs.Int("v", -1, "verbosity of the scheduler's logs on stderr; -1 keeps them off")
	return &flagSet{FlagSet: fs, name: name, v: v}
}

// parse parses args, turning flag errors into unusable input, and accepts
// up to maxArgs positional arguments.
func (fs *flagSet) parse(args []string, maxArgs int) error {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return err // pflag printed the usage
		}
		return badInputf("%s: %v", fs.name, err)
	}
	if fs.NArg() > maxArgs {
		return badInputf("%s: unexpected argument %q", fs.name, fs.Arg(maxArgs))
	}
	quiet.Verbose(*fs.v)
	return nil
}
