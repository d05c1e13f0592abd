package sim

import (
	"github.com/rdmatopo/rdmatopo/core/ledger"
	"github.com/rdmatopo/rdmatopo/internal/sim/simjson"
)

// JSONReport converts a report to the JSON shape (simjson).
func JSONReport(rep *Report) simjson.Report {
	out := simjson.Report{Pods: make([]simjson.Pod, 0, len(rep.Pods)), Jobs: make([]simjson.Job, 0, len(rep.Jobs)),
		Evictions: make([]simjson.Eviction, 0, len(rep.Evictions))}
	for _, p := range rep.Pods {
		out.Pods = append(out.Pods, simjson.Pod{
			Namespace: p.Namespace, Name: p.Name, Job: p.Job, Node: p.Node, NUMA: p.NUMA,
			NICs: nonNil(p.NICs), S0: nonNil(p.S0), S1: nonNil(p.S1), Annotations: nonNilMap(p.Annotations),
			Evicted: p.Evicted != "", Rank: p.Rank,
		})
	}
	for _, j := range rep.Jobs {
		out.Jobs = append(out.Jobs, simjson.Job{
			Namespace: j.Namespace, Name: j.Name, MinMember: j.MinMember, Placed: j.Placed,
			BoundPods: j.BoundPods, GangPlacement: ledger.GangPlacement{Tier: j.Tier, S0: nonNil(j.S0), S1: nonNil(j.S1)}, Reason: j.Reason,
			WaitedSeconds: j.WaitedSeconds, RingCrossings: j.RingCrossings, Segments: segmentsOf(j.Segments),
		})
	}
	for _, e := range rep.Evictions {
		out.Evictions = append(out.Evictions, simjson.Eviction{Namespace: e.Namespace, Name: e.Name, Job: e.Job, Preemptor: e.Preemptor})
	}
	return out
}

// segmentsOf converts a job's segments (nil when it has none).
func segmentsOf(segs []SegmentPlacement) []simjson.Segment {
	var out []simjson.Segment
	for _, sg := range segs {
		out = append(out, simjson.Segment{Ranks: sg.Ranks, S0: nonNil(sg.S0)})
	}
	return out
}

// nonNil returns s, or an empty list for nil (lists are never null).
func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// nonNilMap returns m, or an empty map for nil (objects are never null).
func nonNilMap(m map[string]string) map[string]string {
	if m == nil {
		return map[string]string{}
	}
	return m
}
