package soak

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/go-logr/logr"
	"k8s.io/klog/v2"

	"github.com/rdmatopo/rdmatopo/internal/sim/nodeagent"
)

// Exit codes of Main.
const (
	// ExitOK: the soak ran and found no violation.
	ExitOK = 0
	// ExitViolations: the soak found at least one violation.
	ExitViolations = 1
	// ExitUsage: bad flags, or the soak could not run.
	ExitUsage = 2
)

// Output formats of Main.
const (
	outputTable = "table"
	outputJSON  = "json"
)

// Main is the `rdmatopo-dev soak` command: args are the arguments after "soak".
// It prints the Result on stdout (-o json: one JSON object; -o table:
// aligned key/value lines) and returns the exit code: 1 if violations > 0,
// with the first violation on stderr; 2 on bad flags.
func Main(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("rdmatopo-dev soak", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var cfg Config
	fs.IntVar(&cfg.Jobs, "jobs", 300, "gangs to submit in total")
	fs.Float64Var(&cfg.BindFailureRate, "bind-failure-rate", 0.05, "probability that one bind fails, in [0, 1)")
	fs.IntVar(&cfg.KCNRLag, "kcnr-lag", 3, "cycles before a KCNR shows (or drops) a pod's allocations")
	fs.IntVar(&cfg.RestartEvery, "restart-every", 100, "restart the scheduler every this many jobs (0: never)")
	fs.Int64Var(&cfg.Seed, "seed", 1, "random seed")
	fs.IntVar(&cfg.Nodes, "nodes", 16, "cluster size")
	fs.Int64Var(&cfg.NICUnits, "nic-units", 1, "RDMA units of every NIC: above 1, pods share a NIC up to its units")
	fs.IntVar(&cfg.DrainEvery, "drain-every", 25, "drain a random node every this many cycles (0: never)")
	fs.IntVar(&cfg.PartialGrace, "partial-grace", 2, "cycles after a failed bind a gang may stay partial")
	fs.BoolVar(&cfg.Queues, "queues", true, "with --priorities, run the gangs in a prod queue that may not be reclaimed from and a reclaimable batch queue, so the scheduler reclaims across them")
	fs.BoolVar(&cfg.Priorities, "priorities", true, "give gangs priority classes, some hard gangs a max-wait, and bring bursts of high-priority gangs, so the scheduler preempts; victims are resubmitted")
	constraints := fs.String("constraints", "on", "on: a third of the nodes GPU-tainted, node pools, memory-tight nodes, and soft gangs that do not all tolerate the taint, with masters of other shapes on their own pool, memory and host ports; off: GPUs and NICs alone")
	fs.IntVar(&cfg.BurstEvery, "burst-every", 30, "with --priorities, cycles between bursts of high-priority hard gangs")
	agent := fs.String("node-agent", string(nodeagent.Default), "how the simulated node agent hands out devices: exact, numa or blind")
	faultList := fs.String("faults", "", "hardware faults to inject, comma-separated: nic (a NIC leaves its KCNR), leaf (every NIC of a leaf at allocatable 0), node (a node NotReady), flap (a NIC fails and returns repeatedly); the pods on failed hardware are deleted and re-created")
	fs.IntVar(&cfg.FaultEvery, "fault-every", 10, "with --faults, cycles between faults")
	fs.IntVar(&cfg.FaultFor, "fault-for", 6, "with --faults, cycles a fault lasts")
	fs.IntVar(&cfg.ReplaceAfter, "replace-after", 2, "with --faults, cycles before a failed pod is re-created")
	verbose := fs.Bool("verbose", false, "keep the scheduler's logs (on stderr)")
	dump := fs.Bool("dump-violations", false, fmt.Sprintf("print every violation found (the first %d) on stderr", maxRecorded))
	output := fs.String("o", outputTable, "output format: table or json")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "Usage: rdmatopo-dev soak [flags]\n\nChurns the real scheduler session loop and checks its invariants after every cycle.\n\nFlags:")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return ExitOK
		}
		return ExitUsage
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "rdmatopo-dev soak: unexpected argument %q\n", fs.Arg(0))
		return ExitUsage
	}
	if *output != outputTable && *output != outputJSON {
		fmt.Fprintf(stderr, "rdmatopo-dev soak: -o: must be table or json, got %q\n", *output)
		return ExitUsage
	}
	cfg.NodeAgent = nodeagent.Mode(*agent)
	faults, err := ParseFaults(*faultList)
	if err != nil {
		fmt.Fprintf(stderr, "rdmatopo-dev soak: faults: %v\n", err)
		return ExitUsage
	}
	cfg.Faults = faults
	switch *constraints {
	case "on":
		cfg.Constraints = true
	case "off":
	default:
		fmt.Fprintf(stderr, "rdmatopo-dev soak: constraints: must be on or off, got %q\n", *constraints)
		return ExitUsage
	}
	if cfg.NICUnits < 1 {
		fmt.Fprintf(stderr, "rdmatopo-dev soak: nic-units: must be at least 1, got %d\n", cfg.NICUnits)
		return ExitUsage
	}
	if cfg.Nodes < 1 {
		fmt.Fprintf(stderr, "rdmatopo-dev soak: nodes: must be at least 1, got %d\n", cfg.Nodes)
		return ExitUsage
	}
	if cfg.PartialGrace < 0 {
		fmt.Fprintf(stderr, "rdmatopo-dev soak: partial-grace: must be >= 0, got %d\n", cfg.PartialGrace)
		return ExitUsage
	}
	if err := cfg.Validate(); err != nil {
		fmt.Fprintf(stderr, "rdmatopo-dev soak: %v\n", err)
		return ExitUsage
	}
	if *verbose {
		// A tool may have silenced klog at start-up; --verbose brings it back.
		klog.ClearLogger()
	} else {
		// Volcano logs every bind and failed bind; a soak makes thousands.
		klog.SetLogger(logr.Discard())
		defer klog.ClearLogger()
	}
	res, err := Run(cfg)
	if err != nil {
		fmt.Fprintf(stderr, "rdmatopo-dev soak: %v\n", err)
		return ExitUsage
	}
	if err := writeResult(stdout, *output, res); err != nil {
		fmt.Fprintf(stderr, "rdmatopo-dev soak: %v\n", err)
		return ExitUsage
	}
	if *dump {
		for _, v := range res.Found {
			fmt.Fprintln(stderr, v.String())
		}
		for _, s := range res.OutsideTier {
			fmt.Fprintln(stderr, "replacement outside tier: "+s)
		}
	}
	if res.Violations > 0 {
		fmt.Fprintf(stderr, "rdmatopo-dev soak: %d violations; first: %s\n", res.Violations, res.FirstViolation)
		return ExitViolations
	}
	return ExitOK
}

// writeResult prints the result in the chosen format.
func writeResult(w io.Writer, format string, res *Result) error {
	if format == outputJSON {
		enc := json.NewEncoder(w)
		return enc.Encode(res)
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	rows := []struct {
		k string
		v int
	}{
		{"jobs", res.Jobs}, {"cycles", res.Cycles}, {"restarts", res.Restarts}, {"binds", res.Binds},
		{"bind failures", res.BindFailures}, {"drains", res.Drains}, {"jobs completed", res.JobsCompleted},
		{"jobs killed", res.JobsKilled}, {"violations", res.Violations}, {"double-booked NICs", res.DoubleBookedNICs},
		{"partial gangs", res.PartialGangs}, {"hard-limit breaches", res.HardLimitBreaches},
		{"KCNR conflicts", res.KCNRConflicts}, {"NIC count mismatches", res.NICCounts},
		{"ledger mismatches", res.LedgerMismatches}, {"KCNR divergences", res.KCNRDivergences}, {"stuck gangs", res.StuckGangs},
		{"planned nodes refused", res.PlanRefused},
		{"higher-priority evictions", res.HigherPriorityEvictions}, {"partial victim gangs", res.PartialVictimGangs},
		{"wrong-queue evictions", res.WrongQueueEvictions}, {"non-preemptable evictions", res.NonPreemptableEvictions},
		{"evicted pods", res.EvictedPods}, {"resubmitted victims", res.Resubmitted}, {"max-wait gangs relaxed", res.Relaxed},
		{"NIC mismatches (adopted, not a violation)", res.NICMismatches},
		{"hard gangs realized wider (not a violation)", res.RealizedWider},
		{"zone drift (not a violation)", res.ZoneDrift}, {"longest partial gang (cycles)", res.MaxPartialCycles},
	}
	for _, row := range rows {
		fmt.Fprintf(tw, "%s\t%d\n", row.k, row.v)
	}
	return tw.Flush()
}
