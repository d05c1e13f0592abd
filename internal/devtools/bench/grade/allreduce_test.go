package grade

import (
	"math"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/rdmatopo/rdmatopo/core/ledger"
	"github.com/rdmatopo/rdmatopo/core/placement"
	"github.com/rdmatopo/rdmatopo/core/topology"
	"github.com/rdmatopo/rdmatopo/internal/devtools/bench/trace"
	"github.com/rdmatopo/rdmatopo/internal/testing/builders"
)

// Hand-computed times of the default model (400 Gb/s links, 1:1 within a
// leaf, 2:1 to S1, 4:1 to the spine; 1 GiB): a pair of NICs gets 400 Gb/s
// under one leaf, 200 across leaves of one S1, 100 across S1s. A ring of p
// ranks moves 2(p-1)/p GiB over its slowest hop.
const gib = float64(1 << 30)

// seconds is the time of moving 2(p-1)/p GiB at gbps.
func seconds(p int, gbps float64) float64 {
	return 2 * float64(p-1) / float64(p) * gib * 8 / (gbps * 1e9)
}

// twoS1Tracker is smallTracker's cluster (32 nodes, zone 0 of nodes 0-15
// on leaf 0, zone 1 on leaf 1, nodes 16-31 on leaves 2 and 3) with two
// leaves per S1: leaves 0 and 1 in one S1, 2 and 3 in another.
func twoS1Tracker(t *testing.T) *Tracker {
	t.Helper()
	nodes, cnrs := builders.ClusterShape{Nodes: 32, ZonesPerLeaf: 16, LeavesPerS1: 2, SpanningEvery: 4}.Generate()
	return NewTracker(nodes, cnrs)
}

func TestAllReducePlacedSeconds(t *testing.T) {
	m := DefaultAllReduceModel()
	// spanning is node 0 (spanning) with one NIC of each zone: leaves 0
	// and 1. oneNIC is zone 0 of node 2 with one NIC (leaf 0).
	spanning := placement.Assignment{Node: builders.NodeName(0), Zones: []ledger.ZoneUse{
		{NUMA: 0, GPU: 2, NICs: []topology.NICID{topology.NICID(builders.NUMANICs[0][0])}},
		{NUMA: 1, GPU: 2, NICs: []topology.NICID{topology.NICID(builders.NUMANICs[1][0])}},
	}}
	oneNIC := placement.Assignment{Node: builders.NodeName(2), Zones: []ledger.ZoneUse{
		{NUMA: 0, GPU: 1, NICs: []topology.NICID{topology.NICID(builders.NUMANICs[0][0])}}}}
	cpuOnly := placement.Assignment{Node: builders.NodeName(3)}
	cases := map[string]struct {
		twoS1 bool
		ring  []placement.Assignment
		want  float64
	}{
		"one pod moves nothing": {ring: []placement.Assignment{zoneUse(1, 0)}},
		// Two NIC pairs under one leaf: 800 Gb/s per hop.
		"four pods under one leaf": {ring: []placement.Assignment{zoneUse(1, 0), zoneUse(2, 0), zoneUse(3, 0), zoneUse(4, 0)}, want: seconds(4, 800)},
		// Both zones of one node hang off two leaves: one node is no
		// faster than two (pods talk NIC to NIC through S1).
		"two pods of one node on two leaves": {ring: []placement.Assignment{zoneUse(1, 0), zoneUse(1, 1)}, want: seconds(2, 400)},
		"two leaves of one S1, in order":     {ring: []placement.Assignment{zoneUse(1, 0), zoneUse(2, 0), zoneUse(16, 0), zoneUse(17, 0)}, want: seconds(4, 400)},
		// The rank order does not change the slowest hop's class, only
		// how many hops are of it: the model times the slowest.
		"two leaves of one S1, alternating": {ring: []placement.Assignment{zoneUse(1, 0), zoneUse(16, 0), zoneUse(2, 0), zoneUse(17, 0)}, want: seconds(4, 400)},
		"two S1s":                           {twoS1: true, ring: []placement.Assignment{zoneUse(1, 0), zoneUse(2, 0), zoneUse(16, 0), zoneUse(17, 0)}, want: seconds(4, 200)},
		// Leaves 0 and 1 share an S1 in the two-S1 cluster too.
		"two leaves of one S1 of two": {twoS1: true, ring: []placement.Assignment{zoneUse(1, 0), zoneUse(1, 1)}, want: seconds(2, 400)},
		// NICs are paired leaf to leaf: two spanning pods alike use two
		// pairs under one leaf each.
		"spanning pods alike": {ring: []placement.Assignment{spanning, spanning}, want: seconds(2, 800)},
		// A spanning pod and a pod on leaf 0: one pair under leaf 0, the
		// other from leaf 1 to leaf 0, the slowest of two pairs at 200.
		"spanning beside one leaf": {ring: []placement.Assignment{spanning, zoneUse(2, 0)}, want: seconds(2, 400)},
		// A one-NIC pod: one pair per hop.
		"one NIC beside two": {ring: []placement.Assignment{oneNIC, zoneUse(2, 0), zoneUse(3, 0)}, want: seconds(3, 400)},
		// A pod without NICs is not in the RDMA ring.
		"CPU pod left out": {ring: []placement.Assignment{zoneUse(2, 0), cpuOnly, zoneUse(3, 0)}, want: seconds(2, 800)},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			tr := smallTracker(t)
			if tc.twoS1 {
				tr = twoS1Tracker(t)
			}
			if got := m.PlacedSeconds(tr.Fabric(), tc.ring); math.Abs(got-tc.want) > 1e-12 {
				t.Errorf("PlacedSeconds = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestAllReduceFloorSeconds(t *testing.T) {
	m := DefaultAllReduceModel()
	cases := map[string]struct {
		ring FloorRing
		want float64
	}{
		"one pod":                {ring: FloorRing{nics: []int64{2}, alike: true}},
		"alike":                  {ring: FloorRing{nics: []int64{2, 2, 2, 2}, alike: true}, want: seconds(4, 800)},
		"two leaf sets, one S1":  {ring: FloorRing{nics: []int64{2, 2, 2, 2}, cross: HopS1}, want: seconds(4, 400)},
		"two leaf sets, two S1s": {ring: FloorRing{nics: []int64{2, 2, 2, 2}, cross: HopSpine}, want: seconds(4, 200)},
		// A one-NIC master: its two hops have one pair under one leaf
		// (400); the crossings go on two worker hops of two pairs (2·200).
		"one-NIC master": {ring: FloorRing{nics: []int64{1, 2, 2, 2}, cross: HopS1}, want: seconds(4, 400)},
		// Two pods: both hops cross.
		"two pods across S1s": {ring: FloorRing{nics: []int64{4, 4}, cross: HopSpine}, want: seconds(2, 400)},
		// A wide master beside narrower workers, alike: pairs follow the
		// narrower pod.
		"wide master": {ring: FloorRing{nics: []int64{4, 2, 2}, alike: true}, want: seconds(3, 800)},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := m.FloorSeconds(tc.ring); math.Abs(got-tc.want) > 1e-12 {
				t.Errorf("FloorSeconds = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestAllReduceModelFlags(t *testing.T) {
	m := DefaultAllReduceModel()
	m.Gbps[HopS1] = 100 // leaf uplinks at 100 Gb/s, 2:1: a pair across leaves gets 50
	m.Oversub[HopSpine] = 8
	tr := smallTracker(t)
	ring := []placement.Assignment{zoneUse(1, 0), zoneUse(16, 0)}
	if got, want := m.PlacedSeconds(tr.Fabric(), ring), seconds(2, 100); math.Abs(got-want) > 1e-12 {
		t.Errorf("PlacedSeconds = %v, want %v", got, want)
	}
	wantFlags := map[string]float64{"gbps-s0": 400, "gbps-s1": 100, "gbps-spine": 400, "oversub-s0": 1, "oversub-s1": 2, "oversub-spine": 8}
	if diff := cmp.Diff(wantFlags, m.FlagValues()); diff != "" {
		t.Errorf("FlagValues (-want,+got):\n%s", diff)
	}
	for name, bad := range map[string]func(*AllReduceModel){
		"zero rate":        func(m *AllReduceModel) { m.Gbps[HopS0] = 0 },
		"negative rate":    func(m *AllReduceModel) { m.Gbps[HopSpine] = -1 },
		"NaN rate":         func(m *AllReduceModel) { m.Gbps[HopS1] = math.NaN() },
		"oversub below 1":  func(m *AllReduceModel) { m.Oversub[HopS1] = 0.5 },
		"infinite oversub": func(m *AllReduceModel) { m.Oversub[HopS0] = math.Inf(1) },
		"no message":       func(m *AllReduceModel) { m.MessageBytes = 0 },
	} {
		t.Run(name, func(t *testing.T) {
			m := DefaultAllReduceModel()
			bad(&m)
			if m.Validate() == nil {
				t.Errorf("Validate accepted %+v", m)
			}
		})
	}
	if err := DefaultAllReduceModel().Validate(); err != nil {
		t.Errorf("default model: %v", err)
	}
}

func TestFloorOf(t *testing.T) {
	cases := map[string]struct {
		twoS1 bool
		gang  trace.GangSpec
		want  GangFloor
	}{
		// A leaf holds 16 zones: 8 pods fit under one leaf.
		"one leaf": {gang: trace.GangSpec{Name: "g", Pods: 8, Kind: trace.KindHalf},
			want: GangFloor{Leaves: 1, Ring: FloorRing{nics: []int64{2, 2, 2, 2, 2, 2, 2, 2}, alike: true, cross: HopSpine}}},
		"two leaves of one S1": {gang: trace.GangSpec{Name: "g", Pods: 20, Kind: trace.KindHalf},
			want: GangFloor{Leaves: 2, Ring: FloorRing{nics: repeatNICs(20, 2), cross: HopS1}}},
		// 40 pods need three leaves; an S1 of two leaves holds 32.
		"more than one S1 holds": {twoS1: true, gang: trace.GangSpec{Name: "g", Pods: 40, Kind: trace.KindHalf},
			want: GangFloor{Leaves: 3, Ring: FloorRing{nics: repeatNICs(40, 2), cross: HopSpine}}},
		// A whole-node pod's NICs hang off both leaves of its node pair:
		// every pod can span the same two leaves.
		"whole-node pods span two leaves alike": {gang: trace.GangSpec{Name: "g", Pods: 3, Kind: trace.KindFull},
			want: GangFloor{Leaves: 2, Ring: FloorRing{nics: []int64{4, 4, 4}, alike: true, cross: HopSpine}}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			tr := smallTracker(t)
			if tc.twoS1 {
				tr = twoS1Tracker(t)
			}
			got, err := FloorOf(tr, tc.gang)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got, cmp.AllowUnexported(GangFloor{}, FloorRing{})); diff != "" {
				t.Errorf("FloorOf (-want,+got):\n%s", diff)
			}
		})
	}
}

// repeatNICs is n pods of k NICs each.
func repeatNICs(n int, k int64) []int64 {
	out := make([]int64, n)
	for i := range out {
		out[i] = k
	}
	return out
}

func TestQuantile(t *testing.T) {
	xs := []float64{4, 1, 3, 2}
	for q, want := range map[float64]float64{0.5: 2, 0.95: 4, 0.25: 1, 1: 4} {
		if got := Quantile(xs, q); got != want {
			t.Errorf("Quantile(%v, %v) = %v, want %v", xs, q, got, want)
		}
	}
	if got := Quantile(nil, 0.5); got != 0 {
		t.Errorf("Quantile of nothing = %v, want 0", got)
	}
}
