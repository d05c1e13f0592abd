package grade

import (
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/rdmatopo/rdmatopo/core/ledger"
	"github.com/rdmatopo/rdmatopo/core/placement"
	"github.com/rdmatopo/rdmatopo/core/topology"
	"github.com/rdmatopo/rdmatopo/internal/devtools/bench/oracle"
	"github.com/rdmatopo/rdmatopo/internal/devtools/bench/trace"
	"github.com/rdmatopo/rdmatopo/internal/testing/builders"
)

// smallTracker is a tracker over 32 nodes: two groups of 16, four leaves
// (leaf 0: NUMA 0 of nodes 0-15, leaf 1: NUMA 1 of nodes 0-15, leaves 2
// and 3 likewise for nodes 16-31), every fourth node spanning.
func smallTracker(t *testing.T) *Tracker {
	t.Helper()
	nodes, cnrs := builders.ClusterShape{Nodes: 32, ZonesPerLeaf: 16, LeavesPerS1: 8, SpanningEvery: 4}.Generate()
	return NewTracker(nodes, cnrs)
}

// zoneUse holds NUMA zone numa of node i whole (4 GPU, both NICs).
func zoneUse(i, numa int) placement.Assignment {
	return placement.Assignment{Node: builders.NodeName(i), Zones: []ledger.ZoneUse{{
		NUMA: numa, GPU: 4,
		NICs: []topology.NICID{topology.NICID(builders.NUMANICs[numa][0]), topology.NICID(builders.NUMANICs[numa][1])},
	}}}
}

// reserveAll reserves assignments under generated UIDs.
func reserveAll(t *testing.T, tr *Tracker, as []placement.Assignment) {
	t.Helper()
	for i, a := range as {
		if err := tr.Reserve(fmt.Sprintf("uid-%d", i), a); err != nil {
			t.Fatal(err)
		}
	}
}

func TestFragmentation(t *testing.T) {
	var leaf0Full []placement.Assignment
	for i := 0; i < 16; i++ {
		leaf0Full = append(leaf0Full, zoneUse(i, 0))
	}
	tests := []struct {
		name string
		held []placement.Assignment
		want float64
	}{
		{name: "empty cluster", want: 0},
		{name: "one zone in use", held: []placement.Assignment{zoneUse(0, 0)}, want: 0.25},
		{name: "two zones of one node hit two leaves", held: []placement.Assignment{zoneUse(0, 0), zoneUse(0, 1)}, want: 0.5},
		{name: "a full leaf is not fragmented", held: leaf0Full, want: 0},
		{name: "full leaf plus one zone elsewhere", held: append(append([]placement.Assignment{}, leaf0Full...), zoneUse(20, 1)), want: 0.25},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tr := smallTracker(t)
			reserveAll(t, tr, tc.held)
			if got := tr.Fragmentation(); got != tc.want {
				t.Errorf("Fragmentation() = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestFragmentationAfterRelease(t *testing.T) {
	tr := smallTracker(t)
	reserveAll(t, tr, []placement.Assignment{zoneUse(0, 0), zoneUse(17, 1)})
	tr.Release("uid-0")
	tr.Release("uid-unknown")
	if got, want := tr.Fragmentation(), 0.25; got != want {
		t.Errorf("Fragmentation() after release = %v, want %v", got, want)
	}
	if err := tr.Reserve("uid-1", zoneUse(3, 0)); err == nil {
		t.Error("Reserve of a UID already held succeeded, want an error")
	}
}

func TestTrackerOptimum(t *testing.T) {
	half := trace.KindHalf.Shape()
	small := trace.KindSmall.Shape()
	// Every zone of leaf 0 but one is taken; leaf 2 is half taken.
	var crowded []placement.Assignment
	for i := 1; i < 16; i++ {
		crowded = append(crowded, zoneUse(i, 0))
	}
	for i := 16; i < 24; i++ {
		crowded = append(crowded, zoneUse(i, 0))
	}
	exact := func(n int) oracle.OracleResult {
		return oracle.OracleResult{Status: oracle.OracleExact, Leaves: n, S1s: 1}
	}
	tests := []struct {
		name  string
		held  []placement.Assignment
		pods  int
		shape placement.Shape
		want  oracle.OracleResult
	}{
		{name: "two half-node pods fit under one S0 (not on one node: two S0s)", pods: 2, shape: half, want: exact(1)},
		{name: "a full leaf of half-node pods", pods: 16, shape: half, want: exact(1)},
		{name: "one pod more than a leaf", pods: 17, shape: half, want: exact(2)},
		{name: "small pods share zones", pods: 32, shape: small, want: exact(1)},
		{name: "whole-node pods need both leaves of a spanning node", pods: 2, shape: trace.KindFull.Shape(), want: exact(2)},
		{name: "crowded leaves force a wider placement", held: crowded, pods: 16, shape: half, want: exact(1)},
		{name: "crowded: two leaves needed", held: crowded, pods: 17, shape: half, want: exact(2)},
		{name: "more than the cluster holds", pods: 65, shape: half, want: oracle.OracleResult{Status: oracle.OracleInfeasible}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tr := smallTracker(t)
			reserveAll(t, tr, tc.held)
			got := tr.Optimum(tc.pods, tc.shape)
			if diff := cmp.Diff(tc.want, got, cmpopts.IgnoreFields(oracle.OracleResult{}, "Visited")); diff != "" {
				t.Errorf("Optimum(%d x %s) differs (-want +got):\n%s", tc.pods, tc.shape, diff)
			}
		})
	}
}

func TestS0CountAndAtOptimum(t *testing.T) {
	tr := smallTracker(t)
	tests := []struct {
		name   string
		assign []placement.Assignment
		want   int
	}{
		{name: "nothing", want: 0},
		{name: "NUMA 0 of two nodes of a group", assign: []placement.Assignment{zoneUse(0, 0), zoneUse(5, 0)}, want: 1},
		{name: "both zones of one node", assign: []placement.Assignment{zoneUse(0, 0), zoneUse(0, 1)}, want: 2},
		{name: "two groups", assign: []placement.Assignment{zoneUse(0, 0), zoneUse(16, 0), zoneUse(16, 1)}, want: 3},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := tr.S0Count(tc.assign); got != tc.want {
				t.Errorf("S0Count() = %d, want %d", got, tc.want)
			}
		})
	}
}

func TestNodeAssign(t *testing.T) {
	nic := func(numa, i int) topology.NICID { return topology.NICID(builders.NUMANICs[numa][i]) }
	oneGPU := func(i, numa, k int) placement.Assignment {
		return placement.Assignment{Node: builders.NodeName(i), Zones: []ledger.ZoneUse{{NUMA: numa, GPU: 1, NICs: []topology.NICID{nic(numa, k)}}}}
	}
	tests := []struct {
		name           string
		held           []placement.Assignment
		node           int
		shape          placement.Shape
		want           placement.Assignment
		wantMisaligned int
		wantErr        bool
	}{
		{
			name: "empty node: lowest zone", node: 0, shape: trace.KindHalf.Shape(),
			want: zoneUse(0, 0),
		},
		{
			name: "best fit: the zone left with fewer NICs", node: 0, shape: trace.KindSmall.Shape(),
			held: []placement.Assignment{oneGPU(0, 1, 0)},
			want: oneGPU(0, 1, 1),
		},
		{
			name: "zones split by small pods: misaligned on a single-NUMA node", node: 0, shape: trace.KindHalf.Shape(),
			held: []placement.Assignment{oneGPU(0, 0, 0), oneGPU(0, 1, 0)},
			want: placement.Assignment{Node: builders.NodeName(0), Zones: []ledger.ZoneUse{
				{NUMA: 0, GPU: 3, NICs: []topology.NICID{nic(0, 1)}},
				{NUMA: 1, GPU: 1, NICs: []topology.NICID{nic(1, 1)}},
			}},
			wantMisaligned: 1,
		},
		{
			name: "a whole-node pod on a spanning node is aligned", node: 3, shape: trace.KindFull.Shape(),
			want: placement.Assignment{Node: builders.NodeName(3), Zones: []ledger.ZoneUse{
				{NUMA: 0, GPU: 4, NICs: []topology.NICID{nic(0, 0), nic(0, 1)}},
				{NUMA: 1, GPU: 4, NICs: []topology.NICID{nic(1, 0), nic(1, 1)}},
			}},
		},
		{
			name: "no room", node: 0, shape: trace.KindFull.Shape(),
			held:    []placement.Assignment{zoneUse(0, 0)},
			wantErr: true,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tr := smallTracker(t)
			reserveAll(t, tr, tc.held)
			got, err := tr.NodeAssign(builders.NodeName(tc.node), tc.shape)
			if (err != nil) != tc.wantErr {
				t.Fatalf("NodeAssign() error = %v, want error %v", err, tc.wantErr)
			}
			if tc.wantErr {
				return
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("NodeAssign() mismatch (-want +got):\n%s", diff)
			}
			if tr.Misaligned != tc.wantMisaligned {
				t.Errorf("Misaligned = %d, want %d", tr.Misaligned, tc.wantMisaligned)
			}
		})
	}
}

func TestFromAnnotations(t *testing.T) {
	tr := smallTracker(t)
	node := builders.NodeName(3)
	tests := []struct {
		name    string
		ann     map[string]string
		shape   placement.Shape
		want    placement.Assignment
		wantOK  bool
		wantErr bool
	}{
		{name: "no annotation", ann: map[string]string{}, shape: trace.KindHalf.Shape()},
		{
			name:   "one zone",
			ann:    map[string]string{ledger.AnnotationNICs: builders.NUMANICs[1][1] + "," + builders.NUMANICs[1][0]},
			shape:  trace.KindHalf.Shape(),
			want:   zoneUse(3, 1),
			wantOK: true,
		},
		{
			name:  "spanning pod: GPUs split evenly",
			ann:   map[string]string{ledger.AnnotationNICs: builders.NUMANICs[0][0] + "," + builders.NUMANICs[1][0]},
			shape: placement.Shape{GPU: 8, NICs: 2},
			want: placement.Assignment{Node: node, Zones: []ledger.ZoneUse{
				{NUMA: 0, GPU: 4, NICs: []topology.NICID{topology.NICID(builders.NUMANICs[0][0])}},
				{NUMA: 1, GPU: 4, NICs: []topology.NICID{topology.NICID(builders.NUMANICs[1][0])}},
			}},
			wantOK: true,
		},
		{
			// A zone has 4 GPUs: a pod of 8 with the NICs of one zone takes
			// the other zone's GPUs too (a node whose policy spans zones).
			name:  "GPUs beyond the NICs' zone come from the other zone",
			ann:   map[string]string{ledger.AnnotationNICs: builders.NUMANICs[1][0]},
			shape: placement.Shape{GPU: 8, NICs: 1},
			want: placement.Assignment{Node: node, Zones: []ledger.ZoneUse{
				{NUMA: 1, GPU: 4, NICs: []topology.NICID{topology.NICID(builders.NUMANICs[1][0])}},
				{NUMA: 0, GPU: 4},
			}},
			wantOK: true,
		},
		{name: "unknown NIC", ann: map[string]string{ledger.AnnotationNICs: "0000:99:00.0"}, shape: trace.KindSmall.Shape(), wantErr: true},
		{name: "malformed", ann: map[string]string{ledger.AnnotationNICs: "eth0"}, shape: trace.KindSmall.Shape(), wantErr: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, ok, err := tr.FromAnnotations(node, tc.ann, tc.shape)
			if (err != nil) != tc.wantErr || ok != tc.wantOK {
				t.Fatalf("FromAnnotations() = ok %v, error %v; want ok %v, error %v", ok, err, tc.wantOK, tc.wantErr)
			}
			if !ok {
				return
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("FromAnnotations() mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

// TestFromAnnotationsKeepsZonesWithinTheirGPUs checks that a pod's GPUs go
// where GPUs are free, so that no zone shows free GPUs the node does not
// have: a zone over its GPUs would leave another zone counted free.
func TestFromAnnotationsKeepsZonesWithinTheirGPUs(t *testing.T) {
	node := builders.NodeName(3)
	nic := func(numa, i int) topology.NICID { return topology.NICID(builders.NUMANICs[numa][i]) }
	tests := []struct {
		name  string
		held  []placement.Assignment
		nics  string
		shape placement.Shape
		want  []ledger.ZoneUse
	}{
		{
			name:  "zone 1 half taken: 2 GPUs there, the rest from zone 0",
			held:  []placement.Assignment{{Node: node, Zones: []ledger.ZoneUse{{NUMA: 1, GPU: 2}}}},
			nics:  builders.NUMANICs[1][0],
			shape: placement.Shape{GPU: 6, NICs: 1},
			want:  []ledger.ZoneUse{{NUMA: 1, GPU: 2, NICs: []topology.NICID{nic(1, 0)}}, {NUMA: 0, GPU: 4}},
		},
		{
			name:  "NICs in both zones, zone 0 taken: zone 1 gives all it has",
			held:  []placement.Assignment{{Node: node, Zones: []ledger.ZoneUse{{NUMA: 0, GPU: 4}}}},
			nics:  builders.NUMANICs[0][0] + "," + builders.NUMANICs[1][0],
			shape: placement.Shape{GPU: 4, NICs: 2},
			want:  []ledger.ZoneUse{{NUMA: 0, GPU: 0, NICs: []topology.NICID{nic(0, 0)}}, {NUMA: 1, GPU: 4, NICs: []topology.NICID{nic(1, 0)}}},
		},
		{
			name:  "more GPUs than the node has free: the excess stays on the NICs' zone",
			held:  []placement.Assignment{{Node: node, Zones: []ledger.ZoneUse{{NUMA: 0, GPU: 4}}}},
			nics:  builders.NUMANICs[1][0],
			shape: placement.Shape{GPU: 8, NICs: 1},
			want:  []ledger.ZoneUse{{NUMA: 1, GPU: 8, NICs: []topology.NICID{nic(1, 0)}}},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tr := smallTracker(t)
			reserveAll(t, tr, tc.held)
			got, ok, err := tr.FromAnnotations(node, map[string]string{ledger.AnnotationNICs: tc.nics}, tc.shape)
			if err != nil || !ok {
				t.Fatalf("FromAnnotations() = ok %v, error %v", ok, err)
			}
			if diff := cmp.Diff(tc.want, got.Zones); diff != "" {
				t.Errorf("FromAnnotations() zones differ (-want +got):\n%s", diff)
			}
		})
	}
}

func TestGradeGang(t *testing.T) {
	exact := func(n int) *oracle.OracleResult { return &oracle.OracleResult{Status: oracle.OracleExact, Leaves: n} }
	tests := []struct {
		name    string
		s0      int
		oneNode bool
		opt     *oracle.OracleResult
		want    Grade
	}{
		{name: "one node over two leaves is graded by its leaves", s0: 2, oneNode: true, opt: exact(1), want: GradeOff},
		{name: "one node over two leaves at the minimum", s0: 2, oneNode: true, opt: exact(2), want: GradeAt},
		{name: "one node under one leaf needs no oracle", s0: 1, oneNode: true, want: GradeOneNode},
		{name: "one node under one leaf with an undecided oracle", s0: 1, oneNode: true, opt: &oracle.OracleResult{Status: oracle.OracleUnknown}, want: GradeOneNode},
		{name: "at the minimum", s0: 2, opt: exact(2), want: GradeAt},
		{name: "above the minimum", s0: 3, opt: exact(2), want: GradeOff},
		{name: "below the minimum", s0: 1, opt: exact(2), want: GradeBelow},
		{name: "undecided", s0: 1, opt: &oracle.OracleResult{Status: oracle.OracleUnknown}, want: GradeUnknown},
		{name: "not asked", s0: 1, want: GradeUnknown},
		{name: "no aligned placement existed", s0: 4, opt: &oracle.OracleResult{Status: oracle.OracleInfeasible}, want: GradeInfeasible},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := GradeGang(tc.s0, tc.oneNode, tc.opt); got != tc.want {
				t.Errorf("GradeGang(%d, %v, %+v) = %d, want %d", tc.s0, tc.oneNode, tc.opt, got, tc.want)
			}
		})
	}
}

func TestGradeGangS1(t *testing.T) {
	exact := func(leaves, s1s int) *oracle.OracleResult {
		return &oracle.OracleResult{Status: oracle.OracleExact, Leaves: leaves, S1s: s1s}
	}
	tests := []struct {
		name    string
		s0, s1  int
		oneNode bool
		opt     *oracle.OracleResult
		want    Grade
	}{
		{name: "fewest leaves in the fewest S1s", s0: 3, s1: 2, opt: exact(3, 2), want: GradeAt},
		{name: "fewest leaves in one S1 too many", s0: 3, s1: 3, opt: exact(3, 2), want: GradeOff},
		{name: "fewest leaves in fewer S1s (the state changed)", s0: 3, s1: 1, opt: exact(3, 2), want: GradeBelow},
		{name: "more leaves is off whatever the S1s", s0: 4, s1: 1, opt: exact(3, 2), want: GradeOff},
		{name: "fewer leaves is below whatever the S1s", s0: 2, s1: 3, opt: exact(3, 2), want: GradeBelow},
		{name: "one node under one leaf", s0: 1, s1: 1, oneNode: true, want: GradeOneNode},
		{name: "S1s undecided", s0: 3, s1: 2, opt: &oracle.OracleResult{Status: oracle.OracleExact, Leaves: 3, S1Reason: "two S1s"}, want: GradeUnknown},
		{name: "not asked", s0: 3, s1: 2, want: GradeUnknown},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := GradeGangS1(tc.s0, tc.s1, tc.oneNode, tc.opt); got != tc.want {
				t.Errorf("GradeGangS1(%d, %d, %v, %+v) = %d, want %d", tc.s0, tc.s1, tc.oneNode, tc.opt, got, tc.want)
			}
		})
	}
}

func TestOneNode(t *testing.T) {
	on := func(nodes ...string) []placement.Assignment {
		var out []placement.Assignment
		for _, n := range nodes {
			out = append(out, placement.Assignment{Node: n})
		}
		return out
	}
	tests := []struct {
		name   string
		assign []placement.Assignment
		want   bool
	}{
		{name: "none", want: false},
		{name: "one pod", assign: on("a"), want: true},
		{name: "two pods on one node", assign: on("a", "a"), want: true},
		{name: "two nodes", assign: on("a", "b", "a"), want: false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := OneNode(tc.assign); got != tc.want {
				t.Errorf("OneNode() = %v, want %v", got, tc.want)
			}
		})
	}
}

// TestOracleStateFollowsChanges checks that the oracle state a tracker
// reuses between calls is the state a fresh tracker with the same
// reservations computes, after reserves and releases on nodes already
// asked about.
func TestOracleStateFollowsChanges(t *testing.T) {
	tr := smallTracker(t)
	steps := []struct {
		name    string
		reserve map[string]placement.Assignment
		release []string
	}{
		{name: "empty"},
		{name: "two zones of node 0 and one of node 17", reserve: map[string]placement.Assignment{
			"a": zoneUse(0, 0), "b": zoneUse(0, 1), "c": zoneUse(17, 1)}},
		{name: "node 0's NUMA 0 released", release: []string{"a"}},
		{name: "node 0's NUMA 0 held again, node 17 released", reserve: map[string]placement.Assignment{"d": zoneUse(0, 0)}, release: []string{"c"}},
		{name: "everything released", release: []string{"b", "d"}},
	}
	held := map[string]placement.Assignment{}
	for _, st := range steps {
		for _, uid := range st.release {
			tr.Release(uid)
			delete(held, uid)
		}
		for uid, a := range st.reserve {
			if err := tr.Reserve(uid, a); err != nil {
				t.Fatal(err)
			}
			held[uid] = a
		}
		fresh := smallTracker(t)
		for uid, a := range held {
			if err := fresh.Reserve(uid, a); err != nil {
				t.Fatal(err)
			}
		}
		if diff := cmp.Diff(fresh.OracleState(), tr.OracleState()); diff != "" {
			t.Errorf("%s: reused oracle state differs from a fresh tracker's (-fresh +reused):\n%s", st.name, diff)
		}
	}
}

func TestGradeTally(t *testing.T) {
	tests := []struct {
		name   string
		grades []Grade
		gangs  int
		want   Tally
		frac   float64
	}{
		{name: "none", gangs: 0, want: Tally{}, frac: 0},
		{name: "one node, at and below count as at the optimum", grades: []Grade{GradeOneNode, GradeAt, GradeBelow, GradeOff}, gangs: 4,
			want: Tally{At: 3, OneNode: 1, Below: 1}, frac: 0.75},
		{name: "undecided gangs are left out of the share", grades: []Grade{GradeAt, GradeUnknown, GradeUnknown, GradeInfeasible}, gangs: 4,
			want: Tally{At: 1, Unknown: 2, Infeasible: 1}, frac: 0.5},
		{name: "all undecided", grades: []Grade{GradeUnknown}, gangs: 1, want: Tally{Unknown: 1}, frac: 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got Tally
			for _, g := range tt.grades {
				if back := got.Add(g); back != g {
					t.Fatalf("Add(%v) returned %v", g, back)
				}
			}
			if got != tt.want {
				t.Fatalf("tally %+v, want %+v", got, tt.want)
			}
			if f := got.AtFrac(tt.gangs); f != tt.frac {
				t.Fatalf("AtFrac(%d) = %v, want %v", tt.gangs, f, tt.frac)
			}
		})
	}
}

// busyS1sTracker is a tracker over two S1s of two groups of 16 nodes each
// (four leaves per S1): S1 0 keeps 12 free zones under its first leaf,
// S1 1 six under each of its four leaves.
func busyS1sTracker(t *testing.T) *Tracker {
	t.Helper()
	nodes, cnrs := builders.ClusterShape{Nodes: 64, ZonesPerLeaf: 16, LeavesPerS1: 4, SpanningEvery: 4}.Generate()
	tr := NewTracker(nodes, cnrs)
	var held []placement.Assignment
	for i := 0; i < 32; i++ {
		for numa := 0; numa < 2; numa++ {
			if numa == 0 && i < 12 {
				continue
			}
			held = append(held, zoneUse(i, numa))
		}
	}
	for i := 32; i < 64; i++ {
		if i%16 < 6 {
			continue
		}
		held = append(held, zoneUse(i, 0), zoneUse(i, 1))
	}
	reserveAll(t, tr, held)
	return tr
}

// TestOptimumWithinTier: a hard gang held to one S1 is graded against
// the fewest leaves one S1 gives it, not against fewer leaves over two
// S1s it must not take; every other gang against the oracle's answer
// (busyS1sTracker).
func TestOptimumWithinTier(t *testing.T) {
	tr := busyS1sTracker(t)
	exact := func(leaves, s1s int) oracle.OracleResult {
		return oracle.OracleResult{Status: oracle.OracleExact, Leaves: leaves, S1s: s1s}
	}
	tests := []struct {
		name      string
		mode      placement.Mode
		tier      placement.Tier
		pods      int
		want      oracle.OracleResult
		wantWider bool
	}{
		{name: "soft: two leaves over two S1s", mode: placement.ModeSoft, tier: placement.TierS1, pods: 16, want: exact(2, 2)},
		{name: "hard s1: three leaves of one S1", mode: placement.ModeHard, tier: placement.TierS1, pods: 16, want: exact(3, 1), wantWider: true},
		{name: "hard s1: one S1 holds the fewest leaves anyway", mode: placement.ModeHard, tier: placement.TierS1, pods: 12, want: exact(1, 1)},
		{name: "hard s1: no S1 holds the gang alone", mode: placement.ModeHard, tier: placement.TierS1, pods: 30,
			want: oracle.OracleResult{Status: oracle.OracleInfeasible}, wantWider: true},
		{name: "hard cluster: the oracle's answer", mode: placement.ModeHard, tier: placement.TierCluster, pods: 16, want: exact(2, 2)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			g := trace.GangSpec{Name: "g", Pods: tc.pods, Kind: trace.KindHalf, Mode: tc.mode, HighestTier: tc.tier, Tolerates: true}
			got, wider := tr.OptimumWithinTier(g)
			if diff := cmp.Diff(tc.want, got, cmpopts.IgnoreFields(oracle.OracleResult{}, "Visited")); diff != "" {
				t.Errorf("OptimumWithinTier(%d pods, %s %s) differs (-want +got):\n%s", tc.pods, tc.mode, tc.tier, diff)
			}
			if wider != tc.wantWider {
				t.Errorf("OptimumWithinTier(%d pods, %s %s) wider = %v, want %v", tc.pods, tc.mode, tc.tier, wider, tc.wantWider)
			}
		})
	}
}

// TestOptimumWithinTierOff checks the optimum of a gang kept off some
// leaves or nodes (rooms that waiting gangs claim) on busyS1sTracker's
// cluster.
func TestOptimumWithinTierOff(t *testing.T) {
	tr := busyS1sTracker(t)
	// The leaf of node 0's NUMA 0 NICs: the first leaf of S1 0.
	first, ok := tr.Fabric().NICLeaf(builders.NodeName(0), topology.NICID(builders.NUMANICs[0][0]))
	if !ok {
		t.Fatal("node 0 has no leaf")
	}
	exact := func(leaves, s1s int) oracle.OracleResult {
		return oracle.OracleResult{Status: oracle.OracleExact, Leaves: leaves, S1s: s1s}
	}
	s1Nodes := map[string]bool{}
	for i := 32; i < 64; i++ {
		s1Nodes[builders.NodeName(i)] = true
	}
	tests := []struct {
		name   string
		pods   int
		leaves map[string]bool
		nodes  map[string]bool
		want   oracle.OracleResult
	}{
		{name: "nothing kept off", pods: 12, want: exact(1, 1)},
		{name: "kept off S1 0's free leaf: two leaves of S1 1", pods: 12, leaves: map[string]bool{string(first): true}, want: exact(2, 1)},
		{name: "kept off S1 0's free leaf, 16 pods", pods: 16, leaves: map[string]bool{string(first): true}, want: exact(3, 1)},
		{name: "16 pods: two leaves over both S1s", pods: 16, want: exact(2, 2)},
		{name: "16 pods kept off S1 1's nodes: S1 0 holds 12", pods: 16, nodes: s1Nodes, want: oracle.OracleResult{Status: oracle.OracleInfeasible}},
		{name: "kept off both", pods: 2, leaves: map[string]bool{string(first): true}, nodes: s1Nodes,
			want: oracle.OracleResult{Status: oracle.OracleInfeasible}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			g := trace.GangSpec{Name: "g", Pods: tc.pods, Kind: trace.KindHalf, Mode: placement.ModeSoft, HighestTier: placement.TierS1, Tolerates: true}
			got := tr.OptimumWithinTierOff(g, tc.leaves, tc.nodes)
			if diff := cmp.Diff(tc.want, got, cmpopts.IgnoreFields(oracle.OracleResult{}, "Visited")); diff != "" {
				t.Errorf("OptimumWithinTierOff() differs (-want +got):\n%s", diff)
			}
		})
	}
	// The tracker's own state is unchanged by what a gang is kept off.
	g := trace.GangSpec{Name: "g", Pods: 12, Kind: trace.KindHalf, Mode: placement.ModeSoft, HighestTier: placement.TierS1, Tolerates: true}
	if got, _ := tr.OptimumWithinTier(g); got.Leaves != 1 {
		t.Errorf("OptimumWithinTier() after OptimumWithinTierOff = %d leaves, want 1", got.Leaves)
	}
}

func TestWider(t *testing.T) {
	exact := func(leaves, s1s int) oracle.OracleResult {
		return oracle.OracleResult{Status: oracle.OracleExact, Leaves: leaves, S1s: s1s}
	}
	undecided := exact(2, 0)
	undecided.S1Reason = "a leaf reached from two S1s"
	tests := []struct {
		name string
		a, b oracle.OracleResult
		want bool
	}{
		{name: "more leaves", a: exact(3, 1), b: exact(2, 2), want: true},
		{name: "fewer leaves", a: exact(2, 2), b: exact(3, 1)},
		{name: "as many leaves, more S1s", a: exact(2, 2), b: exact(2, 1), want: true},
		{name: "the same", a: exact(2, 1), b: exact(2, 1)},
		{name: "S1s undecided", a: exact(2, 2), b: undecided},
		{name: "infeasible is not wider", a: oracle.OracleResult{Status: oracle.OracleInfeasible}, b: exact(2, 1)},
		{name: "unknown is not wider", a: oracle.OracleResult{Status: oracle.OracleUnknown}, b: exact(2, 1)},
	}
	for _, tc := range tests {
		if got := Wider(tc.a, tc.b); got != tc.want {
			t.Errorf("%s: Wider(%+v, %+v) = %v, want %v", tc.name, tc.a, tc.b, got, tc.want)
		}
	}
}
