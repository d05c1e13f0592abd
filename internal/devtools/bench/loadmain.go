package bench

import (
	"fmt"
	"io"
	"runtime"
	"slices"

	"github.com/rdmatopo/rdmatopo/internal/sim"
)

// LoadConfs parses the confs of the high-load run: rdmatopo's (whose
// actions include topology-preempt and topology-reclaim) and stock
// Volcano's with preempt and reclaim.
func LoadConfs() (map[string]*sim.Conf, error) {
	confs, err := Confs()
	if err != nil {
		return nil, err
	}
	base, err := sim.ParseConf(BaselinePreemptConfText)
	if err != nil {
		return nil, fmt.Errorf("%s conf: %w", ConfBaseline, err)
	}
	confs[ConfBaseline] = base
	return confs, nil
}

// RunLoad generates the high-load trace for o.Nodes provider nodes and
// replays it through both confs (or o.Confs), one after the other.
func RunLoad(o Options) (*LoadReport, error) {
	o.Load = LoadHigh
	if err := o.Validate(); err != nil {
		return nil, err
	}
	confs, err := LoadConfs()
	if err != nil {
		return nil, err
	}
	trace := NewHighLoadTrace(o.Nodes, o.Seed)
	rep := &LoadReport{Load: LoadHigh, Nodes: o.Nodes, Seed: o.Seed, Gangs: len(trace.Gangs), Cycles: trace.Cycles,
		SettleCycles:  trace.SettleCycles,
		EvictionGrace: o.EvictionGrace,
		Runs:          map[string]*LoadResult{}}
	for _, name := range runOrder {
		if len(o.Confs) > 0 && !slices.Contains(o.Confs, name) {
			continue
		}
		cluster, err := NewFabricCluster(FabricProvider, o.Nodes, o.Seed)
		if err != nil {
			return nil, err
		}
		runtime.GC()
		opts := SimOptions(o.NodesToFindPercent)
		opts.NodeAgent = o.NodeAgent
		opts.EvictionGrace = o.EvictionGrace
		res, err := ReplayLoad(confs[name], cluster, trace, opts)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		rep.Runs[name] = res
	}
	return rep, nil
}

// WriteLoadTable prints a high-load report as an aligned table, one column
// per conf run.
func WriteLoadTable(w io.Writer, rep *LoadReport) error {
	names := runNames(rep.Runs)
	if len(names) == 0 {
		return fmt.Errorf("report has no run")
	}
	fmt.Fprintf(w, "load=%s nodes=%d gangs=%d cycles=%d settle-cycles=%d seed=%d eviction-grace=%d\n",
		rep.Load, rep.Nodes, rep.Gangs, rep.Cycles, rep.SettleCycles, rep.Seed, rep.EvictionGrace)
	rows := []tableRow[LoadResult]{
		{"large gangs placed", func(r *LoadResult) string { return fmt.Sprintf("%d/%d", r.BigGangsPlaced, r.BigGangs) }},
		{"large gang wait p50 (cycles)", func(r *LoadResult) string { return fmt.Sprintf("%.0f", r.BigGangWaitP50Cycles) }},
		{"large gang wait p95 (cycles)", func(r *LoadResult) string { return fmt.Sprintf("%.0f", r.BigGangWaitP95Cycles) }},
		{"hard gangs waiting at trace end", func(r *LoadResult) string { return fmt.Sprint(r.WaitingAtTraceEnd) }},
		{"starved hard gangs", func(r *LoadResult) string { return fmt.Sprint(r.StarvedGangs) }},
		{"hard gangs never run within their tier", func(r *LoadResult) string { return fmt.Sprint(r.NeverWithinTier) }},
		{"cycles run", func(r *LoadResult) string { return fmt.Sprint(r.Cycles) }},
		{"evicted pods", func(r *LoadResult) string { return fmt.Sprint(r.EvictedPods) }},
		{"futile evictions", func(r *LoadResult) string { return fmt.Sprint(r.FutileEvictions) }},
		{"undecided evictions", func(r *LoadResult) string { return fmt.Sprint(r.UndecidedEvictions) }},
		{"partial victim gangs", func(r *LoadResult) string { return fmt.Sprint(r.PartialVictimGangs) }},
		{"wrong-queue evictions", func(r *LoadResult) string { return fmt.Sprint(r.WrongQueueEvictions) }},
		{"non-preemptable evictions", func(r *LoadResult) string { return fmt.Sprint(r.NonPreemptableEvictions) }},
		{"pods running unannotated after cycle 1", func(r *LoadResult) string { return fmt.Sprint(r.UnannotatedPods) }},
		{"pods a single-NUMA kubelet refuses", func(r *LoadResult) string { return fmt.Sprint(r.RefusedPods) }},
		{"gangs killed for a refused pod", func(r *LoadResult) string { return fmt.Sprint(r.RefusedGangs) }},
		{"hard tier violations", func(r *LoadResult) string { return fmt.Sprint(r.HardTierViolations) }},
		{"mean S0 per gang", func(r *LoadResult) string { return fmt.Sprintf("%.3f", r.MeanS0) }},
		{"mean GPU occupancy", func(r *LoadResult) string { return fmt.Sprintf("%.3f", r.MeanGPUOccupancy) }},
		{"placements", func(r *LoadResult) string { return fmt.Sprint(r.Placements) }},
		{"resubmitted victims", func(r *LoadResult) string { return fmt.Sprint(r.Resubmitted) }},
		{"session seconds", func(r *LoadResult) string { return fmt.Sprintf("%.3f", r.Seconds) }},
		{"peak heap MiB", func(r *LoadResult) string { return fmt.Sprintf("%.1f", float64(r.PeakHeapBytes)/(1<<20)) }},
	}
	return writeColumns(w, names, rep.Runs, rows)
}
