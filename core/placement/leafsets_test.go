package placement

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/rdmatopo/rdmatopo/core/ledger"
	"github.com/rdmatopo/rdmatopo/core/topology"
	"github.com/rdmatopo/rdmatopo/internal/devtools/bench/oracle"
	"github.com/rdmatopo/rdmatopo/internal/testing/builders"
)

// searchLeafSet runs the leaf-set search for gang g on s: its set for
// all of g's pods, within one S1 when oneS1.
func searchLeafSet(s *State, g Gang, oneS1 bool) (map[topology.S0ID]bool, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p := &planner{s: s, g: &g, main: mainShape(g.Pods), groups: groupsOf(g.Pods), classes: classesOf(g.Pods)}
	return p.exactLeafSet(len(g.Pods), nil, oneS1)
}

// TestLeafSetsOnHalfBusyClusters: on random half-busy provider clusters of
// several S1s, the leaf-set search finds, for a gang of one shape, the
// fewest leaves and, among those, the fewest S1s, as the benchmark's
// oracle (an independent exhaustive search, imported only here) counts
// them; the planner places the gang on that many leaves.
func TestLeafSetsOnHalfBusyClusters(t *testing.T) {
	for seed := uint64(1); seed <= 40; seed++ {
		t.Run(fmt.Sprint("seed=", seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 43))
			f := &fixture{}
			var state []oracle.OracleNode
			s1s := 2 + rng.IntN(3)
			for s := 0; s < s1s; s++ {
				s1 := fmt.Sprint("s1-", s)
				for pair := 0; pair < 1+rng.IntN(3); pair++ {
					leaf0, leaf1 := fmt.Sprintf("L%d%da", s, pair), fmt.Sprintf("L%d%db", s, pair)
					for i := 0; i < 1+rng.IntN(4); i++ {
						name := fmt.Sprintf("n%d-%d-%d", s, pair, i)
						w := f.node(name, s1, leaf0, leaf1)
						on := oracle.OracleNode{Name: name, S1: s1}
						for numa, leaf := range []string{leaf0, leaf1} {
							if rng.IntN(2) == 0 {
								usedZone(w, numa)
								on.Zones = append(on.Zones, oracle.OracleZone{FreeCPUMilli: 64000})
								continue
							}
							on.Zones = append(on.Zones, oracle.OracleZone{FreeGPU: 4, FreeCPUMilli: 64000, FreeNICLeaves: []string{leaf, leaf}})
						}
						f.add(w)
						state = append(state, on)
					}
				}
			}
			g := gang(2+rng.IntN(8), worker)
			pods := make([]oracle.OracleShape, len(g.Pods))
			for i := range pods {
				pods[i] = oracle.OracleShape{GPU: worker.GPU, CPUMilli: worker.CPUMilli, NICs: worker.NICs}
			}
			want := oracle.MinLeaves(state, pods, 0)
			s := NewState(f.fabric(), ledger.New())
			set, ok := searchLeafSet(s, g, false)
			plan, fail := s.Plan(g)
			checkAgainstOracle(t, s, g, set, ok, plan, fail, want)
		})
	}
}

// checkAgainstOracle checks the leaf-set search's set for gang g (ok: it
// found one) and the planner's plan on s against the oracle's answer want:
// nothing placed where the oracle finds no placement; else the set on the
// oracle's fewest leaves and, where the oracle decides them, fewest S1s,
// and the plan valid and on as many leaves. A cluster the oracle cannot
// decide fails the test: its seeds are chosen to be decidable.
func checkAgainstOracle(t *testing.T, s *State, g Gang, set map[topology.S0ID]bool, ok bool, plan *Plan, fail *Failure, want oracle.OracleResult) {
	t.Helper()
	switch {
	case want.Status == oracle.OracleUnknown:
		t.Fatalf("the oracle cannot decide this cluster: %s", want.Reason)
	case want.Status != oracle.OracleExact:
		if plan != nil || ok {
			t.Fatalf("oracle: %s (%s), but the gang was placed on %v (leaf-set search: %v)", want.Status, want.Reason, plan.S0s, set)
		}
		return
	case !ok:
		t.Fatalf("the leaf-set search found nothing where the oracle finds %d leaves", want.Leaves)
	}
	if got := len(set); got != want.Leaves || want.S1Reason == "" && s1Count(s.fabric, set) != want.S1s {
		t.Errorf("leaf-set search: %d pods on %d leaves over %d S1s %v, want %d over %d (%s)", len(g.Pods), got, s1Count(s.fabric, set), sortedS0s(set), want.Leaves, want.S1s, want.S1Reason)
	}
	if plan == nil {
		t.Fatalf("Plan() failed (%v) where the oracle finds %d leaves", fail, want.Leaves)
	}
	checkPlan(t, s, g, plan)
	if got := planLeaves(s, plan); got != want.Leaves {
		t.Errorf("%d pods on %d leaves %v, want %d", len(g.Pods), got, plan.S0s, want.Leaves)
	}
}

// TestLeafSets: the leaf-set search on the smallest clusters where the
// tier searches' estimate (the largest leaves first) takes more S1s than
// needed. Each leaf is NUMA 0 of its nodes (NUMA 1 busy), one 4 GPU +
// 2 RDMA pod per free zone.
func TestLeafSets(t *testing.T) {
	type leaf struct {
		s1, id string
		free   int
	}
	// No S1 holds 10 pods; the largest leaves first are a1, b1 and c1
	// (three S1s), while a1 with c1 and c2 hold 10 in two.
	spread := []leaf{{"a", "a1", 4}, {"b", "b1", 4}, {"c", "c1", 3}, {"c", "c2", 3}}
	cases := map[string]struct {
		leaves []leaf
		pods   int
		oneS1  bool
		// exclude is the gang's ExcludeS0s (a claim's room, a segment's
		// outside): the search counts no NIC under them.
		exclude []topology.S0ID
		want    []topology.S0ID
	}{
		"fewest leaves, then S1s":                   {leaves: spread, pods: 10, want: []topology.S0ID{"a1", "c1", "c2"}},
		"among sets of one size, the best fit":      {leaves: spread, pods: 9, want: []topology.S0ID{"a1", "c1", "c2"}},
		"one leaf when one holds the gang":          {leaves: spread, pods: 4, want: []topology.S0ID{"c1", "c2"}[:0]},
		"within one S1: the S1 that holds the gang": {leaves: spread, pods: 6, oneS1: true, want: []topology.S0ID{"c1", "c2"}},
		"within one S1: none holds the gang":        {leaves: spread, pods: 7, oneS1: true},
		"more than the cluster holds":               {leaves: spread, pods: 15},
		"an excluded leaf counts no NIC":            {leaves: spread, pods: 10, exclude: []topology.S0ID{"c1"}, want: []topology.S0ID{"a1", "b1", "c2"}},
		"excluded leaves leave too little":          {leaves: spread, pods: 10, exclude: []topology.S0ID{"c1", "c2"}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			f := &fixture{}
			for _, l := range tc.leaves {
				for i := 1; i <= l.free; i++ {
					f.add(usedZone(f.node(fmt.Sprintf("%s-%d", l.id, i), l.s1, l.id, l.id+"-busy"), 1))
				}
			}
			s := NewState(f.fabric(), ledger.New())
			g := gang(tc.pods, worker)
			if len(tc.exclude) > 0 {
				g.ExcludeS0s = map[topology.S0ID]bool{}
				for _, id := range tc.exclude {
					g.ExcludeS0s[id] = true
				}
			}
			set, ok := searchLeafSet(s, g, tc.oneS1)
			got := sortedS0s(set)
			if tc.want == nil {
				if ok {
					t.Errorf("search found %v, want nothing", got)
				}
				return
			}
			if len(tc.want) == 0 {
				// One leaf of 4: a1 or b1, either is a best fit.
				if !ok || len(got) != 1 || got[0] != "a1" && got[0] != "b1" {
					t.Errorf("search found %v (ok %v), want one of a1, b1", got, ok)
				}
				return
			}
			if diff := cmp.Diff(tc.want, got); !ok || diff != "" {
				t.Errorf("search (ok %v) differs (-want +got):\n%s", ok, diff)
			}
		})
	}
}

// TestLeafSetsSharedNICs: a pod of r NICs takes r distinct NICs, so a
// zone whose free units sit on fewer NICs holds fewer pods than its units
// divided by r. Leaf a1's one node has, in each zone, one NIC of 2 units
// free (the other taken): 4 units, no pod of 2 NICs. Leaf b1's three nodes
// have plain NICs (6 free). Counted by units alone a1 (the best fit) holds
// two pods; the search must take b1.
func TestLeafSetsSharedNICs(t *testing.T) {
	tests := []struct {
		name string
		// units of NIC 0 of each zone on a1's node; NIC 1 is taken.
		units int64
		want  []topology.S0ID
	}{
		{name: "one NIC of 2 units per zone holds no 2-NIC pod", units: 2, want: []topology.S0ID{"b1"}},
		// With NIC 1 of 2 units and one taken, each a1 zone has 1 + 1
		// units on two NICs: one pod per zone, and a1 is the best fit.
		{name: "units on two NICs hold a pod", units: 0, want: []topology.S0ID{"a1"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := &fixture{}
			a := f.node("a-1", "a", "a1", "a1")
			c := builders.Consumer("other", "busy", "uid-busy")
			for numa := 0; numa < 2; numa++ {
				if tc.units > 0 {
					a.Units(builders.NUMANICs[numa][0], tc.units).UseNIC(builders.NUMANICs[numa][1], c)
				} else {
					a.Units(builders.NUMANICs[numa][1], 2).UseNIC(builders.NUMANICs[numa][1], c)
				}
			}
			f.add(a)
			for i := 1; i <= 3; i++ {
				f.add(usedZone(f.node(fmt.Sprintf("b-%d", i), "b", "b1", "b1-busy"), 1))
			}
			s := NewState(f.fabric(), ledger.New())
			g := gang(2, worker)
			set, ok := searchLeafSet(s, g, false)
			if diff := cmp.Diff(tc.want, sortedS0s(set)); !ok || diff != "" {
				t.Errorf("search (ok %v) differs (-want +got):\n%s", ok, diff)
			}
			plan, fail := s.Plan(g)
			if plan == nil {
				t.Fatalf("Plan() failed: %v", fail)
			}
			checkPlan(t, s, g, plan)
			if got := planLeaves(s, plan); got != 1 {
				t.Errorf("plan on %d leaves %v, want 1", got, plan.S0s)
			}
		})
	}
}

func TestUnitPods(t *testing.T) {
	tests := []struct {
		units []int64
		r     int64
		limit int
		want  int
	}{
		{units: []int64{4}, r: 1, limit: 10, want: 4},
		{units: []int64{4}, r: 2, limit: 10, want: 0},
		{units: []int64{4, 4}, r: 2, limit: 10, want: 4},
		{units: []int64{4, 1}, r: 2, limit: 10, want: 1},
		{units: []int64{3, 3, 3}, r: 2, limit: 10, want: 4},
		{units: []int64{4, 4, 1, 1}, r: 4, limit: 10, want: 1},
		{units: []int64{4, 4}, r: 2, limit: 3, want: 3},
		{units: nil, r: 1, limit: 3, want: 0},
	}
	for _, tc := range tests {
		if got := unitPods(tc.units, tc.r, tc.limit); got != tc.want {
			t.Errorf("unitPods(%v, %d, %d) = %d, want %d", tc.units, tc.r, tc.limit, got, tc.want)
		}
	}
}

// searchLeafSetOf runs the leaf-set search as tryLeafSets does for gang
// g: its main-shape pods beside its one RDMA pod of another shape, with
// the gang's admission (Gang.Admit) asked about each node's pod limit.
func searchLeafSetOf(s *State, g Gang, oneS1 bool) (map[topology.S0ID]bool, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p := &planner{s: s, g: &g, main: mainShape(g.Pods), groups: groupsOf(g.Pods), classes: classesOf(g.Pods), setPods: g.Pods}
	return p.exactLeafSet(countShape(g.Pods, p.main), otherPod(g.Pods, p.main), oneS1)
}

// TestLeafSetsWithMastersAndPodLimits: on random partly used provider
// clusters of several S1s, with a per-node limit on the gang's pods (what
// memory or a host port leave to Gang.Admit), the leaf-set search finds
// for a gang of workers with a master of another shape the fewest leaves
// and then the fewest S1s the benchmark's oracle (MinLeavesGang, an
// independent exhaustive search imported only here) counts, and the
// planner places the gang on that many leaves.
func TestLeafSetsWithMastersAndPodLimits(t *testing.T) {
	for seed := uint64(1); seed <= 60; seed++ {
		t.Run(fmt.Sprint("seed=", seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 4343))
			f := &fixture{}
			var state []oracle.OracleNode
			limits := map[string]int{}
			for s := 0; s < 2+rng.IntN(3); s++ {
				s1 := fmt.Sprint("s1-", s)
				for pair := 0; pair < 1+rng.IntN(3); pair++ {
					leaf0, leaf1 := fmt.Sprintf("L%d%da", s, pair), fmt.Sprintf("L%d%db", s, pair)
					for i := 0; i < 1+rng.IntN(4); i++ {
						name := fmt.Sprintf("n%d-%d-%d", s, pair, i)
						w := f.node(name, s1, leaf0, leaf1)
						on := oracle.OracleNode{Name: name, S1: s1}
						for numa, leaf := range []string{leaf0, leaf1} {
							// Half the zones free, the others with 0..4
							// GPUs and 0..2 NICs in use.
							gpus, nics := 0, 0
							if rng.IntN(2) == 0 {
								gpus, nics = rng.IntN(5), rng.IntN(3)
							}
							c := builders.Consumer("other", fmt.Sprintf("busy-%d", numa), fmt.Sprintf("uid-busy-%s-%d", name, numa))
							if gpus > 0 {
								w.Alloc(numa, c, corev1.ResourceList{builders.GPUResource: resource.MustParse(fmt.Sprint(gpus))})
							}
							z := oracle.OracleZone{FreeGPU: int64(4 - gpus), FreeCPUMilli: 64000}
							for k := 0; k < 2; k++ {
								if k < nics {
									w.UseNIC(builders.NUMANICs[numa][k], c)
								} else {
									z.FreeNICLeaves = append(z.FreeNICLeaves, leaf)
								}
							}
							on.Zones = append(on.Zones, z)
						}
						if rng.IntN(3) == 0 {
							limits[name] = 1 + rng.IntN(2)
						}
						f.add(w)
						state = append(state, on)
					}
				}
			}
			g := gang(2+rng.IntN(6), worker)
			g.Pods[0].Shape = master
			g.Admit = func(node string, _ Pod, on []Pod) bool {
				limit, ok := limits[node]
				return !ok || len(on) < limit
			}
			og := oracle.OracleGang{MaxPods: func(node string) int {
				if limit, ok := limits[node]; ok {
					return limit
				}
				return -1
			}}
			for _, pod := range g.Pods {
				og.Pods = append(og.Pods, oracle.OracleShape{GPU: pod.Shape.GPU, CPUMilli: pod.Shape.CPUMilli, NICs: pod.Shape.NICs})
			}
			want := oracle.MinLeavesGang(state, og, 0)
			s := NewState(f.fabric(), ledger.New())
			set, ok := searchLeafSetOf(s, g, false)
			plan, fail := s.Plan(g)
			checkAgainstOracle(t, s, g, set, ok, plan, fail, want)
		})
	}
}

// TestLeafSetsMastersAndLimits: the leaf-set search on the smallest
// clusters where a master of another shape, or a node limit only the
// gang's admission knows (memory, a host port), decides the leaves.
// Workers are 4 GPU + 2 RDMA, the master 1 GPU + 1 RDMA.
func TestLeafSetsMastersAndLimits(t *testing.T) {
	// partZone leaves 1 GPU and 1 NIC of a zone free: room for the master
	// only.
	partZone := func(w *builders.CNRWrapper, numa int) *builders.CNRWrapper {
		c := builders.Consumer("other", fmt.Sprintf("part-%d", numa), fmt.Sprintf("uid-part-%d", numa))
		w.UseNIC(builders.NUMANICs[numa][0], c)
		return w.Alloc(numa, c, corev1.ResourceList{builders.GPUResource: resource.MustParse("3")})
	}
	cases := map[string]struct {
		build   func(f *fixture)
		workers int
		master  bool
		// limit is the gang's pods a node admits (0: no limit).
		limit int
		want  []topology.S0ID
	}{
		// a1 holds the 3 workers and nothing more; only a2 has room for
		// the master (a leaf of its own S1 holds it too, but in another
		// S1): {a1, a2}.
		"the master's room under a second leaf of the S1": {
			build: func(f *fixture) {
				for i := 1; i <= 3; i++ {
					f.add(usedZone(f.node(fmt.Sprint("a1-", i), "a", "a1", "a1-busy"), 1))
				}
				f.add(usedZone(partZone(f.node("a2-1", "a", "a2", "a2-busy"), 0), 1))
				f.add(usedZone(partZone(f.node("b1-1", "b", "b1", "b1-busy"), 0), 1))
			},
			workers: 3, master: true, want: []topology.S0ID{"a1", "a2"},
		},
		"workers alone on one leaf": {
			build: func(f *fixture) {
				for i := 1; i <= 3; i++ {
					f.add(usedZone(f.node(fmt.Sprint("a1-", i), "a", "a1", "a1-busy"), 1))
				}
				f.add(usedZone(partZone(f.node("a2-1", "a", "a2", "a2-busy"), 0), 1))
			},
			workers: 3, want: []topology.S0ID{"a1"},
		},
		// x's two nodes have both zones free under x (4 workers), y's
		// three nodes one zone each (3): 4 workers fit under x alone,
		// but one pod per node leaves x 2, so x and y.
		"one pod per node": {
			build: func(f *fixture) {
				for i := 1; i <= 2; i++ {
					f.add(f.node(fmt.Sprint("x-", i), "a", "x", "x"))
				}
				for i := 1; i <= 3; i++ {
					f.add(usedZone(f.node(fmt.Sprint("y-", i), "a", "y", "y-busy"), 1))
				}
			},
			workers: 4, limit: 1, want: []topology.S0ID{"x", "y"},
		},
		"no limit": {
			build: func(f *fixture) {
				for i := 1; i <= 2; i++ {
					f.add(f.node(fmt.Sprint("x-", i), "a", "x", "x"))
				}
				for i := 1; i <= 3; i++ {
					f.add(usedZone(f.node(fmt.Sprint("y-", i), "a", "y", "y-busy"), 1))
				}
			},
			workers: 4, want: []topology.S0ID{"x"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			f := &fixture{}
			tc.build(f)
			g := gang(tc.workers, worker)
			if tc.master {
				g = gang(tc.workers+1, worker)
				g.Pods[0].Shape = master
			}
			if tc.limit > 0 {
				g.Admit = func(_ string, _ Pod, on []Pod) bool { return len(on) < tc.limit }
			}
			s := NewState(f.fabric(), ledger.New())
			set, ok := searchLeafSetOf(s, g, false)
			if diff := cmp.Diff(tc.want, sortedS0s(set)); !ok || diff != "" {
				t.Errorf("search (ok %v) differs (-want +got):\n%s", ok, diff)
			}
			plan, fail := s.Plan(g)
			if plan == nil {
				t.Fatalf("Plan() failed: %v", fail)
			}
			checkPlan(t, s, g, plan)
			if got := planLeaves(s, plan); got != len(tc.want) {
				t.Errorf("plan on %d leaves %v, want %d", got, plan.S0s, len(tc.want))
			}
		})
	}
}
