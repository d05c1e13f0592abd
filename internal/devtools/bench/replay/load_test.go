package replay

import (
	"fmt"
	"slices"
	"testing"

	"github.com/kubewharf/katalyst-api/pkg/apis/node/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/rdmatopo/rdmatopo/core/placement"
	"github.com/rdmatopo/rdmatopo/internal/devtools/bench/trace"
	"github.com/rdmatopo/rdmatopo/internal/testing/builders"
	"github.com/rdmatopo/rdmatopo/internal/workload"
)

func TestPercentile(t *testing.T) {
	tests := []struct {
		xs   []float64
		q    float64
		want float64
	}{
		{nil, 0.5, 0},
		{[]float64{7}, 0.95, 7},
		{[]float64{4, 1, 3, 2}, 0.5, 2},
		{[]float64{4, 1, 3, 2}, 0.95, 4},
		{[]float64{10, 20, 30, 40, 50, 60, 70, 80, 90, 100}, 0.95, 100},
		{[]float64{10, 20, 30, 40, 50, 60, 70, 80, 90, 100}, 0.5, 50},
	}
	for _, tc := range tests {
		if got := percentile(tc.xs, tc.q); got != tc.want {
			t.Errorf("percentile(%v, %v) = %v, want %v", tc.xs, tc.q, got, tc.want)
		}
	}
}

// TestFutileEvictions grades evictions by the binds that followed them: a
// gang waiting at the eviction must bind a pod to the victim's node and
// complete within the window counted from the cycle the victim was gone;
// what the scheduler says it evicted for does not count.
func TestFutileEvictions(t *testing.T) {
	// on is a submission placed at cycle placed whose pod 0 bound to node
	// at cycle bound (pod 1 elsewhere at placed).
	on := func(node string, bound, placed int) *loadGang {
		return &loadGang{placed: placed, nodes: []string{node, "other"}, boundAt: []int{bound, placed}}
	}
	victim := &loadGang{}
	rec := func(cycle, freed int, waiting ...*loadGang) evictionRec {
		return evictionRec{cycle: cycle, freed: freed, node: "n1", victim: victim, waiting: waiting}
	}
	claimedBy := func(e evictionRec, g ...*loadGang) evictionRec { e.claimed = g; return e }
	tests := []struct {
		name              string
		rec               evictionRec
		futile, undecided int
	}{
		{"waiting gang placed on the node the next cycle", rec(5, 5, on("n1", 6, 6)), 0, 0},
		{"placed on the last cycle of the window", rec(5, 5, on("n1", 5+futileWindow, 5+futileWindow)), 0, 0},
		{"placed after the window", rec(5, 5, on("n1", 6+futileWindow, 6+futileWindow)), 1, 0},
		{"never placed", rec(5, 5, on("n1", 0, 0)), 1, 0},
		{"placed elsewhere", rec(5, 5, on("n2", 6, 6)), 1, 0},
		{"its pod on the node bound before the eviction", rec(5, 5, on("n1", 3, 6)), 1, 0},
		{"named by the scheduler, placed elsewhere", claimedBy(rec(5, 5), on("n2", 6, 6)), 1, 0},
		{"no gang waiting", rec(5, 5), 1, 0},
		{"one of two waiting gangs uses the node", rec(5, 5, on("n1", 0, 0), on("n1", 7, 7)), 0, 0},
		{"the window starts when the victim is gone", rec(5, 11, on("n1", 11+futileWindow, 11+futileWindow)), 0, 0},
		{"placed while the victim terminated", rec(5, 11, on("n1", 8, 8)), 0, 0},
		{"late after a grace", rec(5, 11, on("n1", 12+futileWindow, 12+futileWindow)), 1, 0},
		{"still terminating at the end", rec(95, 0), 0, 1},
		{"window outlasts the run", rec(98, 99), 0, 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := &loadReplay{trace: &trace.LoadTrace{Cycles: 100}, last: 100, res: &LoadResult{}, evicts: []evictionRec{tc.rec}}
			r.finish(0)
			if r.res.FutileEvictions != tc.futile || r.res.UndecidedEvictions != tc.undecided {
				t.Errorf("futile, undecided = %d, %d; want %d, %d", r.res.FutileEvictions, r.res.UndecidedEvictions, tc.futile, tc.undecided)
			}
		})
	}
	// Pods of one victim gang evicted in one cycle count as one eviction.
	other := &loadGang{}
	onN1 := on("n1", 6, 6)
	units := []struct {
		name              string
		evicts            []evictionRec
		futile, undecided int
	}{
		{"one of a gang's two pods' nodes used", []evictionRec{rec(5, 5, onN1), {cycle: 5, freed: 5, node: "n9", victim: victim, waiting: []*loadGang{onN1}}}, 0, 0},
		{"two gangs, one used", []evictionRec{rec(5, 5, onN1), {cycle: 5, freed: 5, node: "n9", victim: other, waiting: []*loadGang{onN1}}}, 1, 0},
		{"one gang, evicted in two cycles", []evictionRec{rec(5, 5, onN1), {cycle: 7, freed: 7, node: "n9", victim: victim, waiting: []*loadGang{onN1}}}, 1, 0},
	}
	for _, tc := range units {
		t.Run(tc.name, func(t *testing.T) {
			r := &loadReplay{trace: &trace.LoadTrace{Cycles: 100}, last: 100, res: &LoadResult{}, evicts: tc.evicts}
			r.finish(0)
			if r.res.FutileEvictions != tc.futile || r.res.UndecidedEvictions != tc.undecided {
				t.Errorf("futile, undecided = %d, %d; want %d, %d", r.res.FutileEvictions, r.res.UndecidedEvictions, tc.futile, tc.undecided)
			}
		})
	}
}

// TestWrongQueueEvictions judges an eviction from the queue that may not be
// reclaimed from by the gangs that used the victim's node and those the
// scheduler named.
func TestWrongQueueEvictions(t *testing.T) {
	prod, batch := trace.QueueProd, trace.QueueBatch
	in := func(q string) *loadGang {
		return &loadGang{spec: trace.LoadGang{Queue: q}, placed: 6, nodes: []string{"n1"}, boundAt: []int{6}}
	}
	tests := []struct {
		name           string
		victim         string
		waiting, named []*loadGang
		want           int
	}{
		{"prod victim used by a prod gang", prod, []*loadGang{in(prod)}, nil, 0},
		{"prod victim used by a batch gang", prod, []*loadGang{in(batch)}, nil, 1},
		{"prod victim named for a batch gang, futile", prod, nil, []*loadGang{in(batch)}, 1},
		{"prod victim, a prod gang among the users", prod, []*loadGang{in(batch), in(prod)}, nil, 0},
		{"batch victim used by a prod gang", batch, []*loadGang{in(prod)}, nil, 0},
		{"prod victim, nothing known", prod, nil, nil, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := evictionRec{cycle: 5, freed: 5, node: "n1", victim: &loadGang{spec: trace.LoadGang{Queue: tc.victim}},
				waiting: tc.waiting, claimed: tc.named}
			r := &loadReplay{trace: &trace.LoadTrace{Cycles: 100}, last: 100, res: &LoadResult{}, evicts: []evictionRec{e}}
			r.finish(0)
			if r.res.WrongQueueEvictions != tc.want {
				t.Errorf("wrong-queue evictions = %d, want %d", r.res.WrongQueueEvictions, tc.want)
			}
		})
	}
}

// smallLoadTrace fills 16 nodes (two leaves of 16 zones, one S1) with
// one-zone low jobs, then asks for one leaf with a high-priority hard-s0
// gang of 16 one-zone pods.
func smallLoadTrace() *trace.LoadTrace {
	t := &trace.LoadTrace{Cycles: 8, MeasureFrom: 1, MeasureTo: 8}
	for i := 0; i < 32; i++ {
		t.Gangs = append(t.Gangs, trace.LoadGang{Class: trace.ClassLow, GangSpec: trace.GangSpec{Name: "low-" + string(rune('a'+i/26)) + string(rune('a'+i%26)),
			Pods: 1, Kind: trace.KindHalf, Mode: placement.ModeSoft, HighestTier: placement.TierS1, Arrive: 1, Duration: 100}})
	}
	t.Gangs = append(t.Gangs, trace.LoadGang{Class: trace.ClassHigh, Big: true, GangSpec: trace.GangSpec{Name: "high-big", Pods: 16,
		Kind: trace.KindHalf, Mode: placement.ModeHard, HighestTier: placement.TierS0, Arrive: 2, Duration: 100}})
	return t
}

// TestReplayLoad runs the small trace through both confs, with evicted
// pods gone at once and after a grace: rdmatopo frees one whole leaf of low
// pods (16 evictions, no partial victim, none futile) and places the gang
// under it once they are gone; the figures of both runs are consistent.
func TestReplayLoad(t *testing.T) {
	confs, err := LoadConfs()
	if err != nil {
		t.Fatal(err)
	}
	for _, grace := range []int{0, 2} {
		for _, name := range ConfOrder {
			t.Run(fmt.Sprintf("%s/grace=%d", name, grace), func(t *testing.T) {
				cluster, err := trace.NewFabricCluster(trace.FabricProvider, 16, 1)
				if err != nil {
					t.Fatal(err)
				}
				opts := SimOptions(0)
				opts.EvictionGrace = grace
				res, err := ReplayLoad(confs[name], cluster, smallLoadTrace(), opts)
				if err != nil {
					t.Fatal(err)
				}
				if res.BigGangs != 1 || res.FutileEvictions+res.UndecidedEvictions > res.EvictedPods ||
					res.NeverWithinTier < res.StarvedGangs || res.NeverWithinTier > 1 ||
					res.MeanGPUOccupancy <= 0 || res.MeanGPUOccupancy > 1 {
					t.Errorf("inconsistent figures: %+v", res)
				}
				if name != ConfRDMATopo {
					// Blind to the hard-s0 contract, it places the gang
					// across leaves: placed, never within its tier.
					if res.HardTierViolations == 0 || res.StarvedGangs != 0 || res.NeverWithinTier != 1 {
						t.Errorf("%s: tier violations %d, starved %d, never within tier %d; want >0, 0, 1",
							name, res.HardTierViolations, res.StarvedGangs, res.NeverWithinTier)
					}
					return
				}
				// Evicted before cycle 2 ends, gone before cycle 3+grace,
				// placed in that cycle.
				wait := float64(1 + grace)
				want := LoadResult{BigGangWaitP50Cycles: wait, BigGangWaitP95Cycles: wait, EvictedPods: 16, MeanS0: 1,
					BigGangs: 1, BigGangsPlaced: 1, Resubmitted: 16, EvictionGrace: grace, Cycles: 8}
				got := *res
				got.Seconds, got.PeakHeapBytes, got.MeanGPUOccupancy, got.Placements = 0, 0, 0, 0
				if got != want {
					t.Errorf("rdmatopo:\n got %+v\nwant %+v", got, want)
				}
			})
		}
	}
}

// TestLoadConfs: both confs of the high-load run preempt and reclaim, each
// with its own actions.
func TestLoadConfs(t *testing.T) {
	confs, err := LoadConfs()
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][]string{ConfRDMATopo: {"topology-preempt", "topology-reclaim"}, ConfBaseline: {"preempt", "reclaim"}}
	for name, actions := range want {
		var names []string
		for _, a := range confs[name].Actions {
			names = append(names, a.Name())
		}
		for _, action := range actions {
			if !slices.Contains(names, action) {
				t.Errorf("%s conf runs %v, want %s among them", name, names, action)
			}
		}
	}
}

// TestStarvedGangs: a hard gang is starved when its latest submission is
// unplaced, or was killed (a victim, or refused by a kubelet) and not yet
// submitted again when the run ends; it never ran within its tier when no
// submission did (placed beyond it, refused, or never placed). Soft gangs
// count in neither.
func TestStarvedGangs(t *testing.T) {
	hard := trace.LoadGang{GangSpec: trace.GangSpec{Name: "h", Mode: placement.ModeHard, HighestTier: placement.TierS0, Pods: 1}}
	soft := trace.LoadGang{GangSpec: trace.GangSpec{Name: "s", Mode: placement.ModeSoft, Pods: 1}}
	tests := []struct {
		name    string
		gang    trace.LoadGang
		latest  *loadGang
		within  bool
		starved int
		never   int
	}{
		{"hard, placed within its tier", hard, &loadGang{placed: 3}, true, 0, 0},
		{"hard, placed beyond its tier only", hard, &loadGang{placed: 3}, false, 0, 1},
		{"hard, unplaced", hard, &loadGang{}, false, 1, 1},
		{"hard, ran within its tier, then killed in the last cycle", hard, &loadGang{placed: 3, killed: true}, true, 1, 0},
		{"hard, placed and refused in the last cycle", hard, &loadGang{placed: 3, refused: true, killed: true}, false, 1, 1},
		{"soft, unplaced", soft, &loadGang{}, false, 0, 0},
		{"soft, placed and killed in the last cycle", soft, &loadGang{placed: 3, killed: true}, true, 0, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := &loadReplay{trace: &trace.LoadTrace{Gangs: []trace.LoadGang{tc.gang}, Cycles: 10}, last: 10, res: &LoadResult{},
				latest: []*loadGang{tc.latest}, ran: []int{0}, within: []bool{tc.within}}
			r.finish(0)
			if r.res.StarvedGangs != tc.starved || r.res.NeverWithinTier != tc.never {
				t.Errorf("starved, never within tier = %d, %d; want %d, %d", r.res.StarvedGangs, r.res.NeverWithinTier, tc.starved, tc.never)
			}
		})
	}
}

// misalignedCluster is one single-NUMA node whose 4 GPUs are all in zone 0
// and whose two NICs are both in zone 1: a 4 GPU + 2 RDMA pod fits the node's
// counts, and no zone of it.
func misalignedCluster() *workload.Cluster {
	name := builders.NodeName(0)
	n := trace.GeneratedNode(name, builders.S1Name(0), 4, 2, true)
	q := *resource.NewQuantity(trace.PodsPerNode, resource.DecimalSI)
	n.Status.Allocatable[corev1.ResourcePods], n.Status.Capacity[corev1.ResourcePods] = q, q
	return &workload.Cluster{
		Nodes: []*corev1.Node{n},
		CNRs: []*v1alpha1.CustomNodeResource{builders.MakeCNR(name).Policy(v1alpha1.TopologyPolicySingleNUMANodeContainerLevel).
			Zone(0, 4, 64000).Zone(1, 0, 64000).
			NIC(builders.NUMANICs[1][0], 1, builders.LeafID(0)).NIC(builders.NUMANICs[1][1], 1, builders.LeafID(0)).Obj()},
	}
}

// TestReplayRefusedPods: the stock scheduler binds a pod no NUMA zone of its
// single-NUMA node holds; the kubelet refuses it, so its gang is killed and
// submitted again, every cycle, and it never runs. rdmatopo does not bind
// it. Both leave the gang starved.
func TestReplayRefusedPods(t *testing.T) {
	confs, err := LoadConfs()
	if err != nil {
		t.Fatal(err)
	}
	// The gang keeps the run going through its settle cycles.
	const cycles = 4 + 3
	lt := &trace.LoadTrace{Cycles: 4, SettleCycles: 3, MeasureFrom: 1, MeasureTo: 4, Gangs: []trace.LoadGang{{Class: trace.ClassHigh, Big: true,
		GangSpec: trace.GangSpec{Name: "high-one", Pods: 1, Kind: trace.KindHalf, Mode: placement.ModeHard, HighestTier: placement.TierNode,
			Arrive: 1, Duration: 100}}}}
	tests := []struct {
		conf                          string
		refusedPods, refusedGangs, pl int
	}{
		{ConfBaseline, cycles, cycles, cycles},
		{ConfRDMATopo, 0, 0, 0},
	}
	for _, tc := range tests {
		t.Run(tc.conf, func(t *testing.T) {
			res, err := ReplayLoad(confs[tc.conf], misalignedCluster(), lt, SimOptions(0))
			if err != nil {
				t.Fatal(err)
			}
			if res.RefusedPods != tc.refusedPods || res.RefusedGangs != tc.refusedGangs || res.Placements != tc.pl ||
				res.StarvedGangs != 1 || res.NeverWithinTier != 1 || res.WaitingAtTraceEnd != 1 || res.Cycles != cycles || res.BigGangsPlaced != 0 ||
				res.BigGangWaitP95Cycles != cycles {
				t.Errorf("refused pods %d, refused gangs %d, placements %d, starved %d, waiting at trace end %d, cycles %d, "+
					"large placed %d, wait p95 %v; want %d, %d, %d, 1, 1, %d, 0, %d", res.RefusedPods, res.RefusedGangs,
					res.Placements, res.StarvedGangs, res.WaitingAtTraceEnd, res.Cycles, res.BigGangsPlaced,
					res.BigGangWaitP95Cycles, tc.refusedPods, tc.refusedGangs, tc.pl, cycles, cycles)
			}
		})
	}
}

// TestReplaySettles: high-priority jobs fill a 16-node cluster for 4
// cycles, so a hard gang of their priority arriving in cycle 2 can bind only
// once they finish. The run goes past the trace's cycles while it waits, for
// at most SettleCycles, and stops as soon as it runs.
func TestReplaySettles(t *testing.T) {
	confs, err := LoadConfs()
	if err != nil {
		t.Fatal(err)
	}
	lt := func(cycles, settle int) *trace.LoadTrace {
		t := &trace.LoadTrace{Cycles: cycles, SettleCycles: settle, MeasureFrom: 1, MeasureTo: 1}
		for i := 0; i < 32; i++ {
			t.Gangs = append(t.Gangs, trace.LoadGang{Class: trace.ClassHigh, GangSpec: trace.GangSpec{Name: fmt.Sprintf("fill-%02d", i),
				Pods: 1, Kind: trace.KindHalf, Mode: placement.ModeSoft, HighestTier: placement.TierS1, Arrive: 1, Duration: 4}})
		}
		t.Gangs = append(t.Gangs, trace.LoadGang{Class: trace.ClassHigh, Big: true, GangSpec: trace.GangSpec{Name: "high-big", Pods: 16,
			Kind: trace.KindHalf, Mode: placement.ModeHard, HighestTier: placement.TierS0, Arrive: 2, Duration: 100}})
		return t
	}
	// The fillers bind in cycle 1 and are gone before cycle 5, which
	// places the gang.
	const placedAt = 5
	tests := []struct {
		name                       string
		cycles, settle             int
		wantCycles, waiting, starv int
		wait                       float64
	}{
		{"settles", 2, 10, placedAt, 1, 0, placedAt - 2},
		{"no settle cycles", 2, 0, 2, 1, 1, 2 + 1 - 2},
		{"settle cycles spent", 3, 1, 4, 1, 1, 4 + 1 - 2},
		{"placed within the trace", 8, 10, 8, 0, 0, placedAt - 2},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cluster, err := trace.NewFabricCluster(trace.FabricProvider, 16, 1)
			if err != nil {
				t.Fatal(err)
			}
			res, err := ReplayLoad(confs[ConfRDMATopo], cluster, lt(tc.cycles, tc.settle), SimOptions(0))
			if err != nil {
				t.Fatal(err)
			}
			if res.Cycles != tc.wantCycles || res.WaitingAtTraceEnd != tc.waiting || res.StarvedGangs != tc.starv ||
				res.BigGangWaitP95Cycles != tc.wait || res.EvictedPods != 0 {
				t.Errorf("cycles %d, waiting at trace end %d, starved %d, wait %v, evicted %d; want %d, %d, %d, %v, 0",
					res.Cycles, res.WaitingAtTraceEnd, res.StarvedGangs, res.BigGangWaitP95Cycles, res.EvictedPods,
					tc.wantCycles, tc.waiting, tc.starv, tc.wait)
			}
		})
	}
}
