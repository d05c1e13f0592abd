package bench

import (
	"bytes"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rdmatopo/rdmatopo/internal/devtools/bench/replay"
	"github.com/rdmatopo/rdmatopo/internal/devtools/bench/trace"
)

func TestMainRejectsBadFlags(t *testing.T) {
	tests := []struct {
		name    string
		args    []string
		wantErr string
	}{
		{name: "unknown flag", args: []string{"--bogus"}, wantErr: "flag provided but not defined"},
		{name: "zero nodes", args: []string{"--nodes", "0"}, wantErr: "--nodes must be at least 1"},
		{name: "negative gangs", args: []string{"--gangs", "-3"}, wantErr: "--gangs must be at least 1"},
		{name: "bad output", args: []string{"-o", "yaml"}, wantErr: `-o must be table or json, got "yaml"`},
		{name: "not a number", args: []string{"--seed", "x"}, wantErr: "invalid value"},
		{name: "positional argument", args: []string{"extra"}, wantErr: `unexpected argument "extra"`},
		{name: "unknown conf", args: []string{"--conf", "stock"}, wantErr: `--conf must be rdmatopo, baseline or both, got "stock"`},
		{name: "percent above 100", args: []string{"--nodes-to-find-percent", "250"}, wantErr: "--nodes-to-find-percent must be 0 (adaptive) to 100"},
		{name: "negative percent", args: []string{"--nodes-to-find-percent", "-5"}, wantErr: "--nodes-to-find-percent must be 0 (adaptive) to 100"},
		{name: "unknown fabric", args: []string{"--fabric", "fat-tree"}, wantErr: `--fabric must be provider, rail, mixed or units, got "fat-tree"`},
		{name: "empty fabric", args: []string{"--fabric", ""}, wantErr: `--fabric must be provider, rail, mixed or units, got ""`},
		{name: "unknown node agent", args: []string{"--node-agent", "kubelet"}, wantErr: `--node-agent: unknown node agent "kubelet": must be one of numa, exact, blind`},
		{name: "empty node agent", args: []string{"--node-agent", ""}, wantErr: `--node-agent: unknown node agent ""`},
		{name: "node agent in capitals", args: []string{"--node-agent", "NUMA"}, wantErr: `--node-agent: unknown node agent "NUMA"`},
		{name: "zero link rate", args: []string{"--gbps-s1", "0"}, wantErr: "--gbps-s1 must be a positive number, got 0"},
		{name: "oversubscription below 1", args: []string{"--oversub-spine", "0.5"}, wantErr: "--oversub-spine must be at least 1, got 0.5"},
		{name: "oversubscription not a number", args: []string{"--oversub-s0", "2:1"}, wantErr: "invalid value"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			if code := Main(tc.args, &stdout, &stderr); code != exitUsage {
				t.Errorf("Main(%q) = %d, want %d", tc.args, code, exitUsage)
			}
			if !strings.Contains(stderr.String(), tc.wantErr) {
				t.Errorf("stderr = %q, want it to contain %q", stderr.String(), tc.wantErr)
			}
			if stdout.Len() != 0 {
				t.Errorf("stdout = %q, want nothing", stdout.String())
			}
		})
	}
}

// sampleReport is a report with made-up figures for output tests.
func sampleReport(nodes int, seconds float64) *Report {
	return &Report{Nodes: nodes, Gangs: nodes / 5, Seed: 1, Runs: map[string]*replay.RunResult{
		replay.ConfRDMATopo: {Placed: 10, Pods: 40, MeanS0: 1.25, AtOptimumFrac: 0.9, Fragmentation: 0.2, Seconds: seconds, SecondsPerPod: seconds / 40, PeakHeapBytes: 1 << 20},
		replay.ConfBaseline: {Placed: 11, Pods: 44, MeanS0: 2.5, AtOptimumFrac: 0.4, Fragmentation: 0.5, Seconds: 2 * seconds, SecondsPerPod: seconds / 22, PeakHeapBytes: 2 << 20},
	}}
}

func TestReportJSONKeys(t *testing.T) {
	data, err := json.Marshal(sampleReport(100, 1))
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := json.Unmarshal(data, &got); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"nodes", "gangs", "seed", "runs"} {
		if _, ok := got[k]; !ok {
			t.Errorf("top-level key %q missing in %s", k, data)
		}
	}
	runs := got["runs"].(map[string]any)
	want := []string{"placed", "pods", "meanS0", "atOptimumFrac", "atS1OptimumFrac", "fragmentation", "seconds", "secondsPerPod", "peakHeapBytes",
		"realizedMeanS0", "realizedAtOptimumFrac", "nicMismatches", "meanRingCrossings", "ringAtMinimumFrac",
		"allreduceSlowdownP50", "allreduceSlowdownP95"}
	for _, name := range []string{replay.ConfRDMATopo, replay.ConfBaseline} {
		run, ok := runs[name].(map[string]any)
		if !ok {
			t.Fatalf("runs.%s missing in %s", name, data)
		}
		if len(run) != len(want) {
			t.Errorf("runs.%s has %d keys, want exactly %v", name, len(run), want)
		}
		for _, k := range want {
			if _, ok := run[k]; !ok {
				t.Errorf("runs.%s.%s missing", name, k)
			}
		}
	}
}

func TestWriteTable(t *testing.T) {
	var buf bytes.Buffer
	if err := WriteTable(&buf, sampleReport(100, 1)); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"nodes=100 gangs=20 seed=1", "rdmatopo", "baseline", "mean S0 per gang", "1.250", "2.500"} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, buf.String())
		}
	}
	if err := WriteTable(io.Discard, &Report{Runs: map[string]*replay.RunResult{}}); err == nil {
		t.Error("WriteTable of a report without runs succeeded, want an error")
	}
}

// TestRunSmall replays a small trace through both confs and checks the
// report's invariants and that the trace is deterministic.
func TestRunSmall(t *testing.T) {
	rep, err := Run(Options{Nodes: 48, Gangs: 12, Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	for name, r := range rep.Runs {
		if r.Placed < 1 || r.Placed > rep.Gangs {
			t.Errorf("%s placed %d gangs, want 1..%d", name, r.Placed, rep.Gangs)
		}
		if r.AtOptimumFrac < 0 || r.AtOptimumFrac > 1 || r.Fragmentation < 0 || r.Fragmentation > 1 ||
			r.RingAtMinimumFrac < 0 || r.RingAtMinimumFrac > 1 || r.MeanRingCrossings < 0 {
			t.Errorf("%s: fractions out of [0,1]: %+v", name, r)
		}
		if r.RDMAGangs > 0 && (r.AllReduceSlowdownP50 <= 0 || r.AllReduceSlowdownP95 < r.AllReduceSlowdownP50) {
			t.Errorf("%s: all-reduce slowdown p50 %v, p95 %v over %d gangs", name, r.AllReduceSlowdownP50, r.AllReduceSlowdownP95, r.RDMAGangs)
		}
		if r.RDMAGangs > 0 && r.MeanS0 < 1 {
			t.Errorf("%s: meanS0 %v < 1 over %d gangs", name, r.MeanS0, r.RDMAGangs)
		}
		if r.Seconds <= 0 || r.PeakHeapBytes == 0 || r.PeakLiveHeapBytes == 0 || r.PeakLiveHeapBytes > r.PeakHeapBytes {
			t.Errorf("%s: no time or heap measured: %+v", name, r)
		}
	}
	if got := rep.Runs[replay.ConfRDMATopo].Misaligned; got != 0 {
		t.Errorf("rdmatopo bound %d NUMA-misaligned pods, want 0", got)
	}
	// Trace gangs have one shape each: rdmatopo lays every one out with
	// the fewest ring crossings its leaves allow.
	if r := rep.Runs[replay.ConfRDMATopo]; r.RDMAGangs > 0 && r.RingAtMinimumFrac != 1 {
		t.Errorf("rdmatopo ring at minimum %v over %d gangs, want 1", r.RingAtMinimumFrac, r.RDMAGangs)
	}
	for name, d := range rep.Details {
		r := rep.Runs[name]
		if d.RDMAGangs != r.RDMAGangs || d.FloorS0 != r.FloorS0 {
			t.Errorf("%s details %+v do not match the run %+v", name, d, r)
		}
		if r.RDMAGangs > 0 && (d.FloorS0 < 1 || d.FloorS0 > r.MeanS0) {
			t.Errorf("%s: floor S0 %v outside [1, meanS0 %v]", name, d.FloorS0, r.MeanS0)
		}
	}
}

// TestRunFabrics replays a small trace on every fabric and checks the
// report names the fabric and accounts for every RDMA gang.
func TestRunFabrics(t *testing.T) {
	for _, fabric := range trace.Fabrics {
		t.Run(fabric, func(t *testing.T) {
			rep, err := Run(Options{Nodes: 96, Gangs: 16, Seed: 2, Fabric: fabric})
			if err != nil {
				t.Fatal(err)
			}
			for name, r := range rep.Runs {
				d := rep.Details[name]
				if d.Fabric != fabric {
					t.Errorf("%s: details.fabric = %q, want %q", name, d.Fabric, fabric)
				}
				if r.Placed < 1 {
					t.Errorf("%s placed no gang", name)
				}
				if r.AtOptimumFrac < 0 || r.AtOptimumFrac > 1 {
					t.Errorf("%s: atOptimumFrac %v out of [0,1]", name, r.AtOptimumFrac)
				}
				if d.OracleUnknown+d.OracleInfeasible > d.RDMAGangs {
					t.Errorf("%s: %d unknown + %d infeasible of %d gangs", name, d.OracleUnknown, d.OracleInfeasible, d.RDMAGangs)
				}
			}
			if d := rep.Details[replay.ConfRDMATopo]; d.OracleInfeasible != 0 {
				t.Errorf("rdmatopo placed %d gangs the oracle finds no aligned placement for", d.OracleInfeasible)
			}
		})
	}
}

// TestRunOneConf replays the trace through one conf only, checking every
// node (100%), and prints a one-column table.
func TestRunOneConf(t *testing.T) {
	var stdout, stderr bytes.Buffer
	args := []string{"--nodes", "32", "--gangs", "6", "--conf", "baseline", "--nodes-to-find-percent", "100"}
	if code := Main(args, &stdout, &stderr); code != exitOK {
		t.Fatalf("Main(%q) = %d, stderr %s", args, code, stderr.String())
	}
	out := stdout.String()
	if !strings.Contains(out, "baseline") || strings.Contains(out, "rdmatopo") {
		t.Errorf("table should have a baseline column only:\n%s", out)
	}
}

// TestProfiles writes both profiles of a small run; an unwritable profile
// path fails the run before it starts.
func TestProfiles(t *testing.T) {
	dir := t.TempDir()
	cpu, mem := filepath.Join(dir, "cpu.pprof"), filepath.Join(dir, "mem.pprof")
	var stdout, stderr bytes.Buffer
	args := []string{"--nodes", "32", "--gangs", "6", "--conf", "rdmatopo", "--cpuprofile", cpu, "--memprofile", mem}
	if code := Main(args, &stdout, &stderr); code != exitOK {
		t.Fatalf("Main(%q) = %d, stderr %s", args, code, stderr.String())
	}
	for _, path := range []string{cpu, mem} {
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		// pprof profiles are gzip-compressed protocol buffers.
		if len(data) < 2 || data[0] != 0x1f || data[1] != 0x8b {
			t.Errorf("%s is not a gzip-compressed profile (%d bytes)", path, len(data))
		}
	}
	if !strings.Contains(stdout.String(), "session CPU seconds") {
		t.Errorf("table has no session CPU seconds row:\n%s", stdout.String())
	}

	for _, flagName := range []string{"--cpuprofile", "--memprofile"} {
		stdout.Reset()
		stderr.Reset()
		args := []string{"--nodes", "32", "--gangs", "6", flagName, filepath.Join(dir, "missing", "p.pprof")}
		if code := Main(args, &stdout, &stderr); code != exitError {
			t.Errorf("Main(%q) = %d, want %d", args, code, exitError)
		}
		if !strings.Contains(stderr.String(), flagName+":") || stdout.Len() != 0 {
			t.Errorf("Main(%q): stderr %q, stdout %q; want the flag named and no report", args, stderr.String(), stdout.String())
		}
	}
}

// TestRunConstraints replays a small constrained trace: rdmatopo places no
// NUMA-misaligned pod, has no plan refused by the predicates, and every
// placed RDMA gang is decided by the optimum.
func TestRunConstraints(t *testing.T) {
	rep, err := Run(Options{Nodes: 96, Gangs: 30, Seed: 4, Constraints: true, Confs: []string{replay.ConfRDMATopo}})
	if err != nil {
		t.Fatal(err)
	}
	r, d := rep.Runs[replay.ConfRDMATopo], rep.Details[replay.ConfRDMATopo]
	if d.Constraints != trace.ConstraintsOn {
		t.Errorf("details.constraints = %q, want %q", d.Constraints, trace.ConstraintsOn)
	}
	if r.Placed == 0 || r.RDMAGangs == 0 {
		t.Fatalf("placed %d gangs, %d RDMA gangs: the trace tests nothing", r.Placed, r.RDMAGangs)
	}
	if d.PlanRefused != 0 || r.Misaligned != 0 || d.OracleInfeasible != 0 || d.OracleUnknown != 0 {
		t.Errorf("planRefused %d, misaligned %d, oracle infeasible %d, unknown %d; want all 0", d.PlanRefused, r.Misaligned, d.OracleInfeasible, d.OracleUnknown)
	}
}
