package bench

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/pprof"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/rdmatopo/rdmatopo/internal/devtools/bench/grade"
	"github.com/rdmatopo/rdmatopo/internal/devtools/bench/replay"
	"github.com/rdmatopo/rdmatopo/internal/devtools/bench/trace"
	"github.com/rdmatopo/rdmatopo/internal/quiet"
	"github.com/rdmatopo/rdmatopo/internal/sim/nodeagent"
)

// Report is the benchmark's JSON output.
type Report struct {
	Nodes int    `json:"nodes"`
	Gangs int    `json:"gangs"`
	Seed  uint64 `json:"seed"`
	// Runs holds one result per conf, keyed by ConfRDMATopo and ConfBaseline.
	Runs map[string]*replay.RunResult `json:"runs"`
	// Details holds, per conf, figures beyond the runs' fixed keys.
	Details map[string]*RunDetails `json:"details,omitempty"`
}

// RunDetails are the figures of a run that are not part of the fixed
// "runs" keys.
type RunDetails struct {
	// Fabric is the generated fabric (FabricProvider, FabricRail,
	// FabricMixed, FabricUnits).
	Fabric string `json:"fabric"`
	// Constraints is ConstraintsOn or ConstraintsOff (trace/constraints.go).
	Constraints string `json:"constraints"`
	// RDMAGangs is the number of placed multi-pod RDMA gangs MeanS0 and
	// FloorS0 average over.
	RDMAGangs int `json:"rdmaGangs"`
	// FloorS0 is the mean fewest S0s those gangs could span on an empty
	// fabric.
	FloorS0 float64 `json:"floorS0"`
	// Misaligned counts bound pods no single NUMA zone could hold.
	Misaligned int `json:"numaMisalignedPods"`
	// NodesToFindPercent is Volcano's percentage-nodes-to-find of the run
	// (0: adaptive).
	NodesToFindPercent int32 `json:"nodesToFindPercent"`
	// OracleUnknown counts gangs the oracle could not decide, left out of
	// atOptimumFrac.
	OracleUnknown int `json:"oracleUnknown"`
	// OracleInfeasible counts gangs with no NUMA-aligned placement on the
	// state they saw.
	OracleInfeasible int `json:"oracleInfeasible"`
	// BelowOptimum counts gangs that spanned fewer S0s than the oracle's
	// minimum at their first bind.
	BelowOptimum int `json:"belowOptimum"`
	// OneNodeGangs counts gangs on one node with their NICs under one leaf
	// (tier node), at the optimum by definition.
	OneNodeGangs int `json:"oneNodeGangs"`
	// PlanRefused counts planned nodes that Volcano's predicates or the
	// node's idle resources refused when a plan was applied
	// (rdmatopo_plan_refused_total over the run): 0 when the planner's view
	// of Kubernetes' admission is exact.
	PlanRefused int `json:"planRefused"`
	// NodeAgent is the simulated node agent (nodeagent.Exact, nodeagent.NUMA,
	// nodeagent.Blind) whose choices the realized figures count.
	NodeAgent string `json:"nodeAgent"`
	// RealizedOracleUnknown, RealizedOracleInfeasible, RealizedBelowOptimum
	// and RealizedOneNodeGangs are the oracle's counts of the realized
	// grading (realizedAtOptimumFrac).
	RealizedOracleUnknown    int `json:"realizedOracleUnknown"`
	RealizedOracleInfeasible int `json:"realizedOracleInfeasible"`
	RealizedBelowOptimum     int `json:"realizedBelowOptimum"`
	RealizedOneNodeGangs     int `json:"realizedOneNodeGangs"`
	// S1OracleUnknown counts gangs whose fewest S1s the oracle could not
	// decide, left out of atS1OptimumFrac.
	S1OracleUnknown int `json:"s1OracleUnknown"`
	// HardTierWider counts the hard gangs held to one S1 graded against
	// the fewest leaves within one S1 where more S1s would give fewer.
	HardTierWider int `json:"hardTierWider"`
	// ClaimWider counts the gangs graded against the fewest leaves outside
	// the rooms older waiting hard gangs claim, where those rooms held
	// fewer (or as many in fewer S1s); ClaimWiderGangs lists them, each
	// with the optimum the rooms would have given.
	ClaimWider      int               `json:"claimWider"`
	ClaimWiderGangs []replay.GangMiss `json:"claimWiderGangs,omitempty"`
	// OffOptimum lists the gangs graded off the fewest S0s, OffS1Optimum
	// those on the fewest S0s but off the fewest S1s, in trace order.
	OffOptimum   []replay.GangMiss `json:"offOptimum,omitempty"`
	OffS1Optimum []replay.GangMiss `json:"offS1Optimum,omitempty"`
	// SessionCPUSeconds is the process CPU time (user + system, the
	// garbage collector's included) over the sessions "seconds" times.
	SessionCPUSeconds float64 `json:"sessionCPUSeconds"`
	// PeakLiveHeapBytes is the largest live heap (what the last collection
	// found reachable) sampled after a cycle; peakHeapBytes counts garbage
	// not yet collected too.
	PeakLiveHeapBytes uint64 `json:"peakLiveHeapBytes"`
	// AllReduceFaster counts gangs whose modelled all-reduce beat their
	// floor (allreduceSlowdown below 1).
	AllReduceFaster int `json:"allreduceFaster"`
	// AllReduceModel is the model's link rates (Gb/s) and
	// oversubscriptions per hop class, as the flags set them.
	AllReduceModel map[string]float64 `json:"allreduceModel"`
}

// Options select a benchmark run.
type Options struct {
	Nodes int
	Gangs int
	Seed  uint64
	// NodesToFindPercent is Volcano's percentage-nodes-to-find for both
	// confs: 0 (Volcano's adaptive default) or 1..100.
	NodesToFindPercent int32
	// Confs limits the run to these confs (ConfRDMATopo, ConfBaseline);
	// empty runs both.
	Confs []string
	// Fabric is the generated fabric (CheckFabric); empty means
	// FabricProvider.
	Fabric string
	// NodeAgent is the simulated node agent of both confs (nodeagent.Modes);
	// empty means nodeagent.Default.
	NodeAgent nodeagent.Mode
	// Load is LoadNormal (empty) or LoadHigh (RunLoad; Gangs is then
	// ignored: the trace's size follows Nodes).
	Load string
	// EvictionGrace is, with LoadHigh, how many cycles an evicted pod
	// terminates on its node before it is gone (sim.Options.EvictionGrace).
	EvictionGrace int
	// Constraints gives the cluster and trace of LoadNormal taints,
	// pools, memory limits, host ports and mixed-shape gangs
	// (trace/constraints.go).
	Constraints bool
	// AllReduce is the all-reduce model grading the gangs (zero value:
	// DefaultAllReduceModel).
	AllReduce grade.AllReduceModel
}

// allReduce is the options' model, the default when unset.
func (o Options) allReduce() grade.AllReduceModel {
	if o.AllReduce == (grade.AllReduceModel{}) {
		return grade.DefaultAllReduceModel()
	}
	return o.AllReduce
}

// Validate checks the options.
func (o Options) Validate() error {
	switch {
	case o.Nodes < 1:
		return fmt.Errorf("--nodes must be at least 1, got %d", o.Nodes)
	case o.Gangs < 1:
		return fmt.Errorf("--gangs must be at least 1, got %d", o.Gangs)
	case o.EvictionGrace < 0:
		return fmt.Errorf("--eviction-grace must be >= 0, got %d", o.EvictionGrace)
	case o.NodesToFindPercent < 0 || o.NodesToFindPercent > 100:
		return fmt.Errorf("--nodes-to-find-percent must be 0 (adaptive) to 100, got %d", o.NodesToFindPercent)
	}
	if err := o.allReduce().Validate(); err != nil {
		return err
	}
	if o.Fabric != "" {
		if err := trace.CheckFabric(o.Fabric); err != nil {
			return err
		}
	}
	if o.Load != "" {
		if err := trace.CheckLoad(o.Load); err != nil {
			return err
		}
	}
	if o.Load == trace.LoadHigh && o.Fabric != "" && o.Fabric != trace.FabricProvider {
		return fmt.Errorf("--load %s runs on the %s fabric only, got --fabric %s", trace.LoadHigh, trace.FabricProvider, o.Fabric)
	}
	if o.NodeAgent != "" {
		if _, err := nodeagent.ParseMode(string(o.NodeAgent)); err != nil {
			return fmt.Errorf("--node-agent: %w", err)
		}
	}
	for _, c := range o.Confs {
		if c != replay.ConfRDMATopo && c != replay.ConfBaseline {
			return fmt.Errorf("--conf must be %s, %s or both, got %q", replay.ConfRDMATopo, replay.ConfBaseline, c)
		}
	}
	return nil
}

// Run generates the cluster and trace of o and replays the trace through
// both confs, one after the other, in this process.
func Run(o Options) (*Report, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	confs, err := replay.Confs()
	if err != nil {
		return nil, err
	}
	fabric := o.Fabric
	if fabric == "" {
		fabric = trace.FabricProvider
	}
	agent := o.NodeAgent
	if agent == "" {
		agent = nodeagent.Default
	}
	tc := trace.NewFabricTrace(fabric, o.Gangs, o.Seed)
	constraints := trace.ConstraintsOff
	if o.Constraints {
		trace.ConstrainTrace(tc, fabric, o.Seed)
		constraints = trace.ConstraintsOn
	}
	rep := &Report{Nodes: o.Nodes, Gangs: o.Gangs, Seed: o.Seed, Runs: map[string]*replay.RunResult{},
		Details: map[string]*RunDetails{}}
	for _, name := range replay.ConfOrder {
		if len(o.Confs) > 0 && !slices.Contains(o.Confs, name) {
			continue
		}
		// A fresh cluster per run: the simulator owns the objects it gets.
		cluster, err := trace.NewFabricCluster(fabric, o.Nodes, o.Seed)
		if err != nil {
			return nil, err
		}
		if o.Constraints {
			trace.ConstrainCluster(cluster)
		}
		runtime.GC()
		opts := replay.SimOptions(o.NodesToFindPercent)
		opts.NodeAgent = agent
		res, err := replay.ReplayModel(confs[name], cluster, tc, opts, o.allReduce())
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		rep.Runs[name] = res
		rep.Details[name] = &RunDetails{Fabric: fabric, Constraints: constraints, RDMAGangs: res.RDMAGangs, FloorS0: res.FloorS0,
			Misaligned: res.Misaligned, NodesToFindPercent: o.NodesToFindPercent,
			OracleUnknown: res.OracleUnknown, OracleInfeasible: res.OracleInfeasible, BelowOptimum: res.BelowOptimum,
			OneNodeGangs: res.OneNode, NodeAgent: string(agent),
			RealizedOracleUnknown: res.RealizedOracleUnknown, RealizedOracleInfeasible: res.RealizedOracleInfeasible,
			RealizedBelowOptimum: res.RealizedBelowOptimum, RealizedOneNodeGangs: res.RealizedOneNode,
			S1OracleUnknown: res.S1OracleUnknown, HardTierWider: res.HardTierWider, ClaimWider: len(res.ClaimWider), ClaimWiderGangs: res.ClaimWider, OffOptimum: res.OffOptimum, OffS1Optimum: res.OffS1Optimum,
			SessionCPUSeconds: res.CPUSeconds, PeakLiveHeapBytes: res.PeakLiveHeapBytes,
			PlanRefused:     res.PlanRefused,
			AllReduceFaster: res.AllReduceFaster, AllReduceModel: o.allReduce().FlagValues()}
	}
	return rep, nil
}

// Output formats.
const (
	outputTable = "table"
	outputJSON  = "json"
)

// Exit codes of Main.
const (
	exitOK    = 0
	exitError = 1
	exitUsage = 2
)

// cliArgs are the parsed flags of `rdmatopo-dev bench`.
type cliArgs struct {
	opts       Options
	output     string
	cpuProfile string
	memProfile string
}

// parseArgs parses the flags of `rdmatopo-dev bench` (args without the command
// name). It returns the exit code to stop with when done is true: exitOK
// for --help, exitUsage for bad flags (reported on stderr).
func parseArgs(args []string, stderr io.Writer) (c cliArgs, code int, done bool) {
	fs := flag.NewFlagSet("rdmatopo-dev bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	nodes := fs.Int("nodes", 1000, "number of nodes of the generated cluster")
	gangs := fs.Int("gangs", 0, "number of gangs in the trace (default: nodes/5)")
	seed := fs.Uint64("seed", 1, "seed of the cluster and trace generators")
	out := fs.String("o", outputTable, "output format: table or json")
	pct := fs.Int("nodes-to-find-percent", 0, "Volcano's percentage-nodes-to-find for both confs: 0 (Volcano's adaptive default) to 100 (every node)")
	only := fs.String("conf", "both", "confs to replay: rdmatopo, baseline or both")
	fabric := fs.String("fabric", trace.FabricProvider, "generated fabric: provider (every NIC of a NUMA zone under one S0), rail (NIC i of every node of a 32-node unit on rail S0 i) mixed (thirds of provider, rail and topology-unknown nodes) or units (provider cabling, NICs of 4 RDMA units, 2 on every third node, shared by pods)")
	agent := fs.String("node-agent", string(nodeagent.Default), "simulated node agent of both confs: numa (honours katalyst's numa_bind_result, picks NICs in the zone itself), exact (gives the annotated NICs) or blind (ignores the hint, takes the first NUMA zone with room)")
	cpuProfile := fs.String("cpuprofile", "", "write a CPU profile of the whole run to this file")
	memProfile := fs.String("memprofile", "", "write a heap profile to this file when the run ends: the allocations of the whole run (alloc_space, alloc_objects) and what is still live (inuse_space)")
	grace := fs.Int("eviction-grace", replay.DefaultEvictionGrace, "with --load high: cycles an evicted pod terminates on its node (its resources releasing) before it is gone")
	constraints := fs.String("constraints", trace.ConstraintsOn, "with --load normal: on gives the cluster and trace GPU taints (most gangs tolerate them), node pools the masters and workers of some gangs select, memory-tight nodes, host ports and a fifth of mixed-shape gangs; off places GPUs and NICs alone")
	verbose := fs.Int("v", -1, "scheduler log verbosity on stderr (klog's -v; below 0 keeps the logs silent)")
	load := fs.String("load", trace.LoadNormal, "trace: normal (placement quality on a partly used cluster) or high (over 90% of GPUs busy, three priority classes, large hard gangs; both confs preempt)")
	model := grade.DefaultAllReduceModel()
	for c := grade.HopS0; c < grade.NumHopClasses; c++ {
		fs.Float64Var(&model.Gbps[c], "gbps-"+c.String(), model.Gbps[c], "all-reduce model: line rate in Gb/s, per NIC, of the links of a hop "+grade.HopClassText[c])
		fs.Float64Var(&model.Oversub[c], "oversub-"+c.String(), model.Oversub[c], "all-reduce model: oversubscription (k for k:1) a hop "+grade.HopClassText[c]+" sees")
	}
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: rdmatopo-dev bench [--nodes N] [--gangs G] [--seed S] [--nodes-to-find-percent P] [--conf rdmatopo|baseline|both] [--fabric provider|rail|mixed|units] [--node-agent numa|exact|blind] [--constraints on|off] [--load normal|high] [--eviction-grace CYCLES] [--gbps-{s0,s1,spine} G] [--oversub-{s0,s1,spine} K] [--cpuprofile FILE] [--memprofile FILE] [-v LEVEL] [-o table|json]")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return c, exitOK, true
		}
		return c, exitUsage, true
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "rdmatopo-dev bench: unexpected argument %q\n", fs.Arg(0))
		return c, exitUsage, true
	}
	if *out != outputTable && *out != outputJSON {
		fmt.Fprintf(stderr, "rdmatopo-dev bench: -o must be %s or %s, got %q\n", outputTable, outputJSON, *out)
		return c, exitUsage, true
	}
	a, err := nodeagent.ParseMode(*agent)
	if err != nil {
		fmt.Fprintln(stderr, "rdmatopo-dev bench: --node-agent:", err)
		return c, exitUsage, true
	}
	quiet.Verbose(*verbose)
	// Clamped into int32 range; Validate reports anything outside 0..100.
	o := Options{Nodes: *nodes, Gangs: *gangs, Seed: *seed, NodesToFindPercent: int32(min(max(*pct, -1), 101)), Fabric: *fabric, NodeAgent: a, Load: *load, EvictionGrace: *grace,
		AllReduce: model}
	if *only != "both" {
		o.Confs = []string{*only}
	}
	if o.Gangs == 0 {
		o.Gangs = max(o.Nodes/5, 1)
	}
	if err := trace.CheckFabric(*fabric); err != nil {
		fmt.Fprintln(stderr, "rdmatopo-dev bench:", err)
		return c, exitUsage, true
	}
	if err := trace.CheckConstraints(*constraints); err != nil {
		fmt.Fprintln(stderr, "rdmatopo-dev bench:", err)
		return c, exitUsage, true
	}
	o.Constraints = *constraints == trace.ConstraintsOn && o.Load != trace.LoadHigh
	if err := o.Validate(); err != nil {
		fmt.Fprintln(stderr, "rdmatopo-dev bench:", err)
		return c, exitUsage, true
	}
	return cliArgs{opts: o, output: *out, cpuProfile: *cpuProfile, memProfile: *memProfile}, exitOK, false
}

// Main is `rdmatopo-dev bench`: it parses args (without the command name), runs
// the benchmark and prints the report to stdout as a table or JSON. It
// returns the process exit code: 2 for bad flags, 1 when the run fails.
func Main(args []string, stdout, stderr io.Writer) int {
	c, code, done := parseArgs(args, stderr)
	if done {
		return code
	}
	if c.cpuProfile != "" {
		f, err := os.Create(c.cpuProfile)
		if err != nil {
			fmt.Fprintln(stderr, "rdmatopo-dev bench: --cpuprofile:", err)
			return exitError
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			fmt.Fprintln(stderr, "rdmatopo-dev bench: --cpuprofile:", err)
			return exitError
		}
		defer pprof.StopCPUProfile()
	}
	var memProfile *os.File
	if c.memProfile != "" {
		// Created before the run, so a bad path fails at once.
		f, err := os.Create(c.memProfile)
		if err != nil {
			fmt.Fprintln(stderr, "rdmatopo-dev bench: --memprofile:", err)
			return exitError
		}
		defer f.Close()
		memProfile = f
	}
	var rep any
	var table func(io.Writer) error
	var err error
	if c.opts.Load == trace.LoadHigh {
		var lr *replay.LoadReport
		lr, err = RunLoad(c.opts)
		rep, table = lr, func(w io.Writer) error { return WriteLoadTable(w, lr) }
	} else {
		var r *Report
		r, err = Run(c.opts)
		rep, table = r, func(w io.Writer) error { return WriteTable(w, r) }
	}
	if err == nil && memProfile != nil {
		// A collection first, so inuse_space holds only what is live.
		runtime.GC()
		if err = pprof.Lookup("heap").WriteTo(memProfile, 0); err != nil {
			err = fmt.Errorf("--memprofile: %w", err)
		}
	}
	if err == nil {
		if c.output == outputJSON {
			enc := json.NewEncoder(stdout)
			enc.SetIndent("", "  ")
			err = enc.Encode(rep)
		} else {
			err = table(stdout)
		}
	}
	if err != nil {
		fmt.Fprintln(stderr, "rdmatopo-dev bench:", err)
		return exitError
	}
	return exitOK
}

// WriteTable prints a report as an aligned table, one column per conf run.
func WriteTable(w io.Writer, rep *Report) error {
	names := runNames(rep.Runs)
	if len(names) == 0 {
		return fmt.Errorf("report has no run")
	}
	fabric := ""
	for _, name := range names {
		if d := rep.Details[name]; d != nil && d.Fabric != "" {
			fabric = " fabric=" + d.Fabric
		}
	}
	agent := ""
	for _, name := range names {
		if d := rep.Details[name]; d != nil && d.NodeAgent != "" {
			agent = " node-agent=" + d.NodeAgent
		}
	}
	fmt.Fprintf(w, "nodes=%d gangs=%d seed=%d%s%s\n", rep.Nodes, rep.Gangs, rep.Seed, fabric, agent)
	rows := []tableRow[replay.RunResult]{
		{"gangs placed", func(r *replay.RunResult) string { return fmt.Sprint(r.Placed) }},
		{"pods placed", func(r *replay.RunResult) string { return fmt.Sprint(r.Pods) }},
		{"multi-pod RDMA gangs", func(r *replay.RunResult) string { return fmt.Sprint(r.RDMAGangs) }},
		{"mean S0 per gang", func(r *replay.RunResult) string { return fmt.Sprintf("%.3f", r.MeanS0) }},
		{"floor S0 (empty fabric)", func(r *replay.RunResult) string { return fmt.Sprintf("%.3f", r.FloorS0) }},
		{"at optimum", func(r *replay.RunResult) string { return fmt.Sprintf("%.3f", r.AtOptimumFrac) }},
		{"at S1 optimum (fewest S0s, then S1s)", func(r *replay.RunResult) string { return fmt.Sprintf("%.3f", r.AtS1OptimumFrac) }},
		{"oracle unknown (left out)", func(r *replay.RunResult) string { return fmt.Sprint(r.OracleUnknown) }},
		{"oracle infeasible", func(r *replay.RunResult) string { return fmt.Sprint(r.OracleInfeasible) }},
		{"ring leaf crossings per gang", func(r *replay.RunResult) string { return fmt.Sprintf("%.3f", r.MeanRingCrossings) }},
		{"ring at minimum", func(r *replay.RunResult) string { return fmt.Sprintf("%.3f", r.RingAtMinimumFrac) }},
		{"all-reduce slowdown p50", func(r *replay.RunResult) string { return fmt.Sprintf("%.3f", r.AllReduceSlowdownP50) }},
		{"all-reduce slowdown p95", func(r *replay.RunResult) string { return fmt.Sprintf("%.3f", r.AllReduceSlowdownP95) }},
		{"realized mean S0 (node agent)", func(r *replay.RunResult) string { return fmt.Sprintf("%.3f", r.RealizedMeanS0) }},
		{"realized at optimum", func(r *replay.RunResult) string { return fmt.Sprintf("%.3f", r.RealizedAtOptimumFrac) }},
		{"NIC mismatches", func(r *replay.RunResult) string { return fmt.Sprint(r.NICMismatches) }},
		{"fragmentation", func(r *replay.RunResult) string { return fmt.Sprintf("%.3f", r.Fragmentation) }},
		{"NUMA-misaligned pods", func(r *replay.RunResult) string { return fmt.Sprint(r.Misaligned) }},
		{"session seconds", func(r *replay.RunResult) string { return fmt.Sprintf("%.3f", r.Seconds) }},
		{"session CPU seconds", func(r *replay.RunResult) string { return fmt.Sprintf("%.3f", r.CPUSeconds) }},
		{"seconds per pod", func(r *replay.RunResult) string { return fmt.Sprintf("%.6f", r.SecondsPerPod) }},
		{"peak heap MiB", func(r *replay.RunResult) string { return fmt.Sprintf("%.1f", float64(r.PeakHeapBytes)/(1<<20)) }},
		{"peak live heap MiB", func(r *replay.RunResult) string { return fmt.Sprintf("%.1f", float64(r.PeakLiveHeapBytes)/(1<<20)) }},
	}
	return writeColumns(w, names, rep.Runs, rows)
}

// tableRow is one metric of a report table: its name and how to render it
// from one run.
type tableRow[R any] struct {
	name string
	f    func(*R) string
}

// writeColumns prints rows as an aligned table with one column per named
// run.
func writeColumns[R any](w io.Writer, names []string, runs map[string]*R, rows []tableRow[R]) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "metric\t%s\t\n", strings.Join(names, "\t"))
	for _, row := range rows {
		fmt.Fprint(tw, row.name)
		for _, name := range names {
			fmt.Fprintf(tw, "\t%s", row.f(runs[name]))
		}
		fmt.Fprintln(tw, "\t")
	}
	return tw.Flush()
}

// runNames lists the confs of runs in replay.ConfOrder.
func runNames[R any](runs map[string]*R) []string {
	var names []string
	for _, name := range replay.ConfOrder {
		if runs[name] != nil {
			names = append(names, name)
		}
	}
	return names
}
