package bench

import (
	"fmt"
	"io"
	"runtime"
	"slices"

	"github.com/rdmatopo/rdmatopo/internal/devtools/bench/replay"
	"github.com/rdmatopo/rdmatopo/internal/devtools/bench/trace"
)

// RunLoad generates the high-load trace for o.Nodes provider nodes and
// replays it through both confs (or o.Confs), one after the other.
func RunLoad(o Options) (*replay.LoadReport, error) {
	o.Load = trace.LoadHigh
	if err := o.Validate(); err != nil {
		return nil, err
	}
	confs, err := replay.LoadConfs()
	if err != nil {
		return nil, err
	}
	lt := trace.NewHighLoadTrace(o.Nodes, o.Seed)
	rep := &replay.LoadReport{Load: trace.LoadHigh, Nodes: o.Nodes, Seed: o.Seed, Gangs: len(lt.Gangs), Cycles: lt.Cycles,
		SettleCycles:  lt.SettleCycles,
		EvictionGrace: o.EvictionGrace,
		Runs:          map[string]*replay.LoadResult{}}
	for _, name := range replay.ConfOrder {
		if len(o.Confs) > 0 && !slices.Contains(o.Confs, name) {
			continue
		}
		cluster, err := trace.NewFabricCluster(trace.FabricProvider, o.Nodes, o.Seed)
		if err != nil {
			return nil, err
		}
		runtime.GC()
		opts := replay.SimOptions(o.NodesToFindPercent)
		opts.NodeAgent = o.NodeAgent
		opts.EvictionGrace = o.EvictionGrace
		res, err := replay.ReplayLoad(confs[name], cluster, lt, opts)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		rep.Runs[name] = res
	}
	return rep, nil
}

// WriteLoadTable prints a high-load report as an aligned table, one column
// per conf run.
func WriteLoadTable(w io.Writer, rep *replay.LoadReport) error {
	names := runNames(rep.Runs)
	if len(names) == 0 {
		return fmt.Errorf("report has no run")
	}
	fmt.Fprintf(w, "load=%s nodes=%d gangs=%d cycles=%d settle-cycles=%d seed=%d eviction-grace=%d\n",
		rep.Load, rep.Nodes, rep.Gangs, rep.Cycles, rep.SettleCycles, rep.Seed, rep.EvictionGrace)
	rows := []tableRow[replay.LoadResult]{
		{"large gangs placed", func(r *replay.LoadResult) string { return fmt.Sprintf("%d/%d", r.BigGangsPlaced, r.BigGangs) }},
		{"large gang wait p50 (cycles)", func(r *replay.LoadResult) string { return fmt.Sprintf("%.0f", r.BigGangWaitP50Cycles) }},
		{"large gang wait p95 (cycles)", func(r *replay.LoadResult) string { return fmt.Sprintf("%.0f", r.BigGangWaitP95Cycles) }},
		{"hard gangs waiting at trace end", func(r *replay.LoadResult) string { return fmt.Sprint(r.WaitingAtTraceEnd) }},
		{"starved hard gangs", func(r *replay.LoadResult) string { return fmt.Sprint(r.StarvedGangs) }},
		{"hard gangs never run within their tier", func(r *replay.LoadResult) string { return fmt.Sprint(r.NeverWithinTier) }},
		{"cycles run", func(r *replay.LoadResult) string { return fmt.Sprint(r.Cycles) }},
		{"evicted pods", func(r *replay.LoadResult) string { return fmt.Sprint(r.EvictedPods) }},
		{"futile evictions", func(r *replay.LoadResult) string { return fmt.Sprint(r.FutileEvictions) }},
		{"undecided evictions", func(r *replay.LoadResult) string { return fmt.Sprint(r.UndecidedEvictions) }},
		{"partial victim gangs", func(r *replay.LoadResult) string { return fmt.Sprint(r.PartialVictimGangs) }},
		{"wrong-queue evictions", func(r *replay.LoadResult) string { return fmt.Sprint(r.WrongQueueEvictions) }},
		{"non-preemptable evictions", func(r *replay.LoadResult) string { return fmt.Sprint(r.NonPreemptableEvictions) }},
		{"pods running unannotated after cycle 1", func(r *replay.LoadResult) string { return fmt.Sprint(r.UnannotatedPods) }},
		{"pods a single-NUMA kubelet refuses", func(r *replay.LoadResult) string { return fmt.Sprint(r.RefusedPods) }},
		{"gangs killed for a refused pod", func(r *replay.LoadResult) string { return fmt.Sprint(r.RefusedGangs) }},
		{"hard tier violations", func(r *replay.LoadResult) string { return fmt.Sprint(r.HardTierViolations) }},
		{"mean S0 per gang", func(r *replay.LoadResult) string { return fmt.Sprintf("%.3f", r.MeanS0) }},
		{"mean GPU occupancy", func(r *replay.LoadResult) string { return fmt.Sprintf("%.3f", r.MeanGPUOccupancy) }},
		{"placements", func(r *replay.LoadResult) string { return fmt.Sprint(r.Placements) }},
		{"resubmitted victims", func(r *replay.LoadResult) string { return fmt.Sprint(r.Resubmitted) }},
		{"session seconds", func(r *replay.LoadResult) string { return fmt.Sprintf("%.3f", r.Seconds) }},
		{"peak heap MiB", func(r *replay.LoadResult) string { return fmt.Sprintf("%.1f", float64(r.PeakHeapBytes)/(1<<20)) }},
	}
	return writeColumns(w, names, rep.Runs, rows)
}
