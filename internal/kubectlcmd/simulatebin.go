package kubectlcmd

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/rdmatopo/rdmatopo/internal/live"
	"github.com/rdmatopo/rdmatopo/internal/sim/simjson"
)

// SimulateBinary is the second plugin binary: everything that runs a
// Volcano scheduling session (`kubectl rdmatopo simulate`, explain's next
// session). kubectl runs it for `kubectl rdmatopo simulate ...` (it takes
// the longest plugin name the words before the first flag spell), and
// kubectl-rdmatopo runs it for the rest.
const SimulateBinary = "kubectl-rdmatopo-simulate"

// NextSessionFlag is the hidden flag of kubectl-rdmatopo-simulate that
// runs one scheduling session over a NextSessionInput read on stdin and
// prints its outcome (simjson.Report) as JSON.
const NextSessionFlag = "next-session"

// SimulateShort is simulate's one-line help, in both binaries.
const SimulateShort = "What-if on the live cluster: run the scheduler (the cluster's conf) over its waiting gangs and a workload file"

// installHint says how to get kubectl-rdmatopo-simulate.
const installHint = "install it next to kubectl-rdmatopo or on PATH (make build writes bin/" + SimulateBinary +
	"; make install-kubectl-plugin installs both)"

// errNoSimulateBinary is kubectl-rdmatopo-simulate not found.
var errNoSimulateBinary = errors.New(SimulateBinary + " is not installed")

// NextSessionInput is what kubectl-rdmatopo hands kubectl-rdmatopo-simulate
// for explain's next session: the conf's text and the cluster as explain
// read it, so that both see the same state.
type NextSessionInput struct {
	Conf     string         `json:"conf"`
	Snapshot *live.Snapshot `json:"snapshot"`
}

// findSimulateBinary looks for kubectl-rdmatopo-simulate next to this
// executable first (the two are installed together), then on PATH.
func findSimulateBinary() (string, error) {
	name := SimulateBinary
	if runtime.GOOS == "windows" {
		name += ".exe"
	}
	if self, err := os.Executable(); err == nil {
		if resolved, err := filepath.EvalSymlinks(self); err == nil {
			self = resolved
		}
		next := filepath.Join(filepath.Dir(self), name)
		if st, err := os.Stat(next); err == nil && !st.IsDir() && st.Mode()&0o111 != 0 {
			return next, nil
		}
	}
	if path, err := exec.LookPath(name); err == nil {
		return path, nil
	}
	return "", errNoSimulateBinary
}

// newSimulateCommand is `simulate` in kubectl-rdmatopo: it runs
// kubectl-rdmatopo-simulate with the command line as given (kubectl
// reaches that binary directly for `kubectl rdmatopo simulate ...`; this
// is for `kubectl rdmatopo --context x simulate ...` and for
// kubectl-rdmatopo run by hand), so that help lists simulate.
func newSimulateCommand(o *Options) *cobra.Command {
	return &cobra.Command{
		Use:   "simulate [--workload FILE]",
		Short: SimulateShort,
		Long: "simulate runs the real Volcano scheduler in memory; it is the plugin binary " + SimulateBinary + ",\n" +
			"which kubectl runs for `kubectl rdmatopo simulate` (`kubectl rdmatopo simulate --help` lists its flags).",
		DisableFlagParsing: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			bin, err := o.simulateBinary()
			if err != nil {
				return fmt.Errorf("kubectl rdmatopo simulate needs %s: %w; %s", SimulateBinary, err, installHint)
			}
			run := exec.CommandContext(cmd.Context(), bin, args...)
			run.Stdin, run.Stdout, run.Stderr = o.stdin, o.stdout, o.stderr
			if err := run.Run(); err != nil {
				var exit *exec.ExitError
				if errors.As(err, &exit) {
					return exitCode(exit.ExitCode())
				}
				return fmt.Errorf("running %s: %w", bin, err)
			}
			return nil
		},
	}
}

// nextSession runs the scheduler's next session over the snapshot in
// kubectl-rdmatopo-simulate and returns its outcome; errNoSimulateBinary
// when that binary is missing.
func (o *Options) nextSession(ctx context.Context, conf string, snap *live.Snapshot) (*simjson.Report, error) {
	bin, err := o.simulateBinary()
	if err != nil {
		return nil, err
	}
	in, err := json.Marshal(NextSessionInput{Conf: conf, Snapshot: snap})
	if err != nil {
		return nil, fmt.Errorf("the next session's input: %w", err)
	}
	var out, stderr bytes.Buffer
	// --log-level reaches the session's logs, shown as they come.
	run := exec.CommandContext(ctx, bin, "--"+NextSessionFlag, "--log-level", strconv.Itoa(o.verbosity))
	run.Stdin, run.Stdout, run.Stderr = bytes.NewReader(in), &out, io.Writer(&stderr)
	if o.verbosity >= 0 && o.stderr != nil {
		run.Stderr = io.MultiWriter(&stderr, o.stderr)
	}
	if err := run.Run(); err != nil {
		return nil, fmt.Errorf("the scheduler's next session (%s): %w: %s", bin, err, strings.TrimSpace(stderr.String()))
	}
	rep := &simjson.Report{}
	if err := json.Unmarshal(out.Bytes(), rep); err != nil {
		return nil, fmt.Errorf("the scheduler's next session (%s): reading its output: %w", bin, err)
	}
	return rep, nil
}
