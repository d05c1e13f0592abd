package kubectlcmd

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/rdmatopo/rdmatopo/core/ledger"
	"github.com/rdmatopo/rdmatopo/internal/explain"
	"github.com/rdmatopo/rdmatopo/internal/live"
	"github.com/rdmatopo/rdmatopo/internal/sim/simjson"
	"github.com/rdmatopo/rdmatopo/internal/workload"
)

// fakeSimulate writes an executable script standing in for
// kubectl-rdmatopo-simulate and returns its path.
func fakeSimulate(t *testing.T, script string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), SimulateBinary)
	if err := os.WriteFile(path, []byte("#!/bin/sh\n"+script), 0o755); err != nil {
		t.Fatal(err)
	}
	return path
}

func waitingExplanation() *explain.Explanation {
	return &explain.Explanation{Namespace: "ns", PodGroup: "llm", State: explain.StateWaiting, Notes: []string{},
		Plan: &explain.Placement{Tier: "s0", S0: []string{"leaf-a"}, Nodes: []string{"n1"}}}
}

// TestWithNextSession: explain's next session comes from
// kubectl-rdmatopo-simulate, which reads the conf and the snapshot on
// stdin; without that binary the explanation says so and how to install
// it, keeps the planner's answer and does not fail; a failing binary
// fails explain with its message.
func TestWithNextSession(t *testing.T) {
	report := simjson.Report{
		Jobs: []simjson.Job{{Namespace: "ns", Name: "llm", Placed: true,
			GangPlacement: ledger.GangPlacement{Tier: "s1", S0: []string{"leaf-b", "leaf-c"}, S1: []string{"s1-0"}}}},
		Pods: []simjson.Pod{{Job: "ns/llm", Node: "n3"}, {Job: "ns/llm", Node: "n2"}, {Job: "ns/other", Node: "n9"}},
	}
	out, err := json.Marshal(report)
	if err != nil {
		t.Fatal(err)
	}
	inputFile := filepath.Join(t.TempDir(), "input.json")
	cases := map[string]struct {
		binary    func() (string, error)
		wantPlan  *explain.Placement
		wantNote  []string
		wantErr   string
		wantInput bool
	}{
		"session places it": {
			binary: func() (string, error) {
				return fakeSimulate(t, "[ \"$1\" = --next-session ] || exit 9\ncat >"+inputFile+"\necho '"+string(out)+"'\n"), nil
			},
			wantPlan:  &explain.Placement{Tier: "s1", S0: []string{"leaf-b", "leaf-c"}, S1: []string{"s1-0"}, Nodes: []string{"n2", "n3"}},
			wantInput: true,
		},
		"binary missing": {
			binary:   func() (string, error) { return "", errNoSimulateBinary },
			wantPlan: &explain.Placement{Tier: "s0", S0: []string{"leaf-a"}, Nodes: []string{"n1"}},
			wantNote: []string{SimulateBinary + " runs it and is not installed", "make install-kubectl-plugin", "the planner's answer for the gang alone"},
		},
		"binary fails": {
			binary:  func() (string, error) { return fakeSimulate(t, "echo 'scheduler conf: broken' >&2\nexit 1\n"), nil },
			wantErr: "scheduler conf: broken",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			_ = os.Remove(inputFile)
			o := &Options{simulateBinary: tc.binary}
			e := waitingExplanation()
			snap := &live.Snapshot{Cluster: &workload.Cluster{}}
			err := o.withNextSession(context.Background(), e, "actions: enqueue", snap)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want one with %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.wantPlan, e.Plan); diff != "" {
				t.Errorf("plan (-want,+got):\n%s", diff)
			}
			notes := strings.Join(e.Notes, "\n")
			for _, w := range tc.wantNote {
				if !strings.Contains(notes, w) {
					t.Errorf("notes %q lack %q", notes, w)
				}
			}
			if len(tc.wantNote) == 0 && notes != "" {
				t.Errorf("unexpected notes %q", notes)
			}
			if tc.wantInput {
				data, err := os.ReadFile(inputFile)
				if err != nil {
					t.Fatal(err)
				}
				var in NextSessionInput
				if err := json.Unmarshal(data, &in); err != nil || in.Conf != "actions: enqueue" || in.Snapshot == nil || in.Snapshot.Cluster == nil {
					t.Errorf("the binary read %s (%v), want the conf and the snapshot", data, err)
				}
			}
		})
	}
}

// TestSimulateForwards: `simulate` in kubectl-rdmatopo (kubectl reaches
// it when a flag comes before simulate) runs kubectl-rdmatopo-simulate
// with the rest of the command line and exits with its code; without the
// binary it fails naming it and how to install it; help lists simulate.
func TestSimulateForwards(t *testing.T) {
	echo := fakeSimulate(t, "echo \"args: $*\"\nexit 3\n")
	cases := map[string]struct {
		binary   func() (string, error)
		args     []string
		wantCode int
		wantOut  string
		wantErr  string
	}{
		"flags before and after": {
			binary: func() (string, error) { return echo, nil },
			args:   []string{"--context", "prod", "simulate", "--workload", "w.yaml", "-o", "json"}, wantCode: 3,
			wantOut: "args: --context prod --workload w.yaml -o json\n",
		},
		"help goes to the binary": {
			binary: func() (string, error) { return echo, nil },
			args:   []string{"simulate", "--help"}, wantCode: 3, wantOut: "args: --help\n",
		},
		"binary missing": {
			binary: func() (string, error) { return "", errNoSimulateBinary },
			args:   []string{"simulate"}, wantCode: 1,
			wantErr: "kubectl rdmatopo simulate needs " + SimulateBinary,
		},
		"root help lists simulate": {
			binary: func() (string, error) { return "", errNoSimulateBinary },
			args:   []string{"--help"}, wantOut: "  simulate    " + SimulateShort,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			root := NewRootCommand(strings.NewReader(""), &stdout, &stderr)
			for _, c := range root.Commands() {
				if c.Name() == "simulate" {
					// The command reads the binary's finder through o.
					root.RemoveCommand(c)
				}
			}
			o := NewOptions(strings.NewReader(""), &stdout, &stderr)
			o.simulateBinary = tc.binary
			root.AddCommand(newSimulateCommand(o))
			code := Execute(context.Background(), root, tc.args, &stderr)
			if code != tc.wantCode {
				t.Errorf("exit %d, want %d (stderr %q)", code, tc.wantCode, stderr.String())
			}
			if !strings.Contains(stdout.String(), tc.wantOut) {
				t.Errorf("stdout %q, want %q", stdout.String(), tc.wantOut)
			}
			if tc.wantErr != "" && !strings.Contains(stderr.String(), tc.wantErr) {
				t.Errorf("stderr %q, want %q", stderr.String(), tc.wantErr)
			}
		})
	}
}

// TestFindSimulateBinary: the binary is looked for on PATH when it is not
// next to this executable (a test binary has no sibling).
func TestFindSimulateBinary(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	if _, err := findSimulateBinary(); err != errNoSimulateBinary {
		t.Fatalf("empty PATH: %v, want errNoSimulateBinary", err)
	}
	bin := fakeSimulate(t, "exit 0\n")
	t.Setenv("PATH", filepath.Dir(bin))
	got, err := findSimulateBinary()
	if err != nil || got != bin {
		t.Fatalf("found %q (%v), want %q", got, err, bin)
	}
}
