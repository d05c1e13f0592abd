package placement

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/rdmatopo/rdmatopo/core/ledger"
	"github.com/rdmatopo/rdmatopo/core/topology"
	"github.com/rdmatopo/rdmatopo/internal/testing/builders"
)

// TestReleaseInClone: a leaf of two nodes whose NUMA-0 zones are held by
// two pods, one the KCNR lists (confirmed) and one it does not yet. A
// hard-s0 gang of two fits under leaf A only in a clone where both holds
// are released; the original state is unchanged.
func TestReleaseInClone(t *testing.T) {
	f := &fixture{}
	listed := builders.Consumer("ns", "old-0", "u-old-0")
	w1 := f.node("n1", "", "A", "B").UseNIC(builders.NUMANICs[0][0], listed).UseNIC(builders.NUMANICs[0][1], listed).
		Alloc(0, listed, corev1.ResourceList{builders.GPUResource: resource.MustParse("4")})
	f.add(w1)
	f.add(f.node("n2", "", "A", "B"))
	f.add(usedZone(f.node("n3", "", "C", "B"), 1))
	fab := f.fabric()
	zone0 := []ledger.ZoneUse{{NUMA: 0, GPU: 4, CPUMilli: 8000, NICs: []topology.NICID{
		topology.NICID(builders.NUMANICs[0][0]), topology.NICID(builders.NUMANICs[0][1])}}}
	l := ledger.New()
	for _, r := range []ledger.Reservation{
		{UID: "u-old-0", Namespace: "ns", Name: "old-0", Node: "n1", Zones: zone0, Confirmed: true},
		{UID: "u-old-1", Namespace: "ns", Name: "old-1", Node: "n2", Zones: zone0},
	} {
		if err := l.Reserve(r); err != nil {
			t.Fatal(err)
		}
	}
	l.Confirm(fab)
	s := NewState(fab, l)
	// Leaf B is taken on every node, so only A can hold the gang.
	for _, n := range []string{"n1", "n2"} {
		s.Apply("busy-"+n, Assignment{Node: n, Zones: []ledger.ZoneUse{{NUMA: 1, GPU: 4, NICs: []topology.NICID{
			topology.NICID(builders.NUMANICs[1][0]), topology.NICID(builders.NUMANICs[1][1])}}}})
	}
	g := hard(gang(2, worker), TierS0)
	if _, fail := s.Plan(g); fail == nil {
		t.Fatal("gang fits before any release")
	}
	c := s.Clone()
	for _, uid := range []string{"u-old-0", "u-old-1"} {
		r, _ := l.Get(uid)
		c.Release(uid, Assignment{PodUID: uid, Node: r.Node, Zones: r.Zones})
	}
	plan, fail := c.Plan(g)
	if fail != nil {
		t.Fatalf("gang does not fit after release: %v", fail)
	}
	if diff := cmp.Diff([]topology.S0ID{"A"}, plan.S0s); diff != "" {
		t.Errorf("leaves (-want,+got):\n%s", diff)
	}
	if _, fail := s.Plan(g); fail == nil {
		t.Error("release in the clone reached the original state")
	}
}

// TestReleaseConfirmedOnly: every pod on the nodes is one the KCNR lists
// (no unconfirmed reservation, no other hold in the state). Releasing them
// in a clone must return their GPUs and CPUs as well as their NICs, or a
// preemptor could never plan onto nodes whose holders are all confirmed.
func TestReleaseConfirmedOnly(t *testing.T) {
	f := &fixture{}
	l := ledger.New()
	var uids []string
	for _, n := range []string{"n1", "n2"} {
		w := f.node(n, "", "A", "A")
		for numa := 0; numa < 2; numa++ {
			uid := "u-" + n + "-" + string(rune('0'+numa))
			name := n + "-" + string(rune('0'+numa))
			consumer := builders.Consumer("ns", name, uid)
			w.UseNIC(builders.NUMANICs[numa][0], consumer).UseNIC(builders.NUMANICs[numa][1], consumer).
				Alloc(numa, consumer, corev1.ResourceList{builders.GPUResource: resource.MustParse("4"), corev1.ResourceCPU: resource.MustParse("8")})
			zone := []ledger.ZoneUse{{NUMA: numa, GPU: 4, CPUMilli: 8000, NICs: []topology.NICID{
				topology.NICID(builders.NUMANICs[numa][0]), topology.NICID(builders.NUMANICs[numa][1])}}}
			if err := l.Reserve(ledger.Reservation{UID: uid, Namespace: "ns", Name: name, Node: n, Zones: zone, Confirmed: true}); err != nil {
				t.Fatal(err)
			}
			uids = append(uids, uid)
		}
		f.add(w)
	}
	fab := f.fabric()
	l.Confirm(fab)
	s := NewState(fab, l)
	tests := []struct {
		name    string
		release []string
		pods    int
		fits    bool
	}{
		{name: "nothing released", release: nil, pods: 1, fits: false},
		{name: "one pod released frees one zone", release: uids[:1], pods: 1, fits: true},
		{name: "one pod released is not two zones", release: uids[:1], pods: 2, fits: false},
		{name: "every pod released frees every zone", release: uids, pods: 4, fits: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := s.Clone()
			for _, uid := range tc.release {
				r, _ := l.Get(uid)
				c.Release(uid, Assignment{PodUID: uid, Node: r.Node, Zones: r.Zones})
			}
			_, fail := c.Plan(gang(tc.pods, worker))
			if got := fail == nil; got != tc.fits {
				t.Fatalf("fits = %v, want %v (failure: %v)", got, tc.fits, fail)
			}
		})
	}
	if _, fail := s.Plan(gang(1, worker)); fail == nil {
		t.Error("releases in clones reached the original state")
	}
}

// TestCloneIsolation: a clone shares its parent's per-node maps and leaf
// statistics until one of them writes. Every write, in the clone, its
// parent or a clone of the clone, stays in the state it was made in, even
// after a plan filled the shared leaf statistics.
func TestCloneIsolation(t *testing.T) {
	zone := func(numa int) []ledger.ZoneUse {
		return []ledger.ZoneUse{{NUMA: numa, GPU: 4, CPUMilli: 8000, NICs: []topology.NICID{
			topology.NICID(builders.NUMANICs[numa][0]), topology.NICID(builders.NUMANICs[numa][1])}}}
	}
	nic0 := topology.NICID(builders.NUMANICs[0][0])
	// held reports who holds n1's first NUMA-0 NIC, and whether a hard-s0
	// gang of four workers fits (leaf A: every zone of n1 and n2).
	held := func(s *State) (string, bool) {
		h, _ := s.HolderOf("n1", nic0)
		_, fail := s.Plan(hard(gang(4, worker), TierS0))
		return h, fail == nil
	}
	type obs struct {
		holder string
		fits   bool
	}
	see := func(s *State) obs { h, ok := held(s); return obs{h, ok} }
	free, taken := obs{"", true}, obs{"x", false}
	tests := []struct {
		name string
		// run builds the states from a fresh one and writes; it returns
		// them in the order of want.
		run  func(s *State) []*State
		want []obs
	}{
		{"apply in the clone", func(s *State) []*State {
			c := s.Clone()
			c.Apply("x", Assignment{Node: "n1", Zones: zone(0)})
			return []*State{s, c}
		}, []obs{free, taken}},
		{"apply in the parent after cloning", func(s *State) []*State {
			c := s.Clone()
			s.Apply("x", Assignment{Node: "n1", Zones: zone(0)})
			return []*State{s, c}
		}, []obs{taken, free}},
		{"release in the clone", func(s *State) []*State {
			s.Apply("x", Assignment{Node: "n1", Zones: zone(0)})
			c := s.Clone()
			c.Release("x", Assignment{PodUID: "x", Node: "n1", Zones: zone(0)})
			return []*State{s, c}
		}, []obs{taken, free}},
		{"clone of a clone", func(s *State) []*State {
			c := s.Clone()
			c.Apply("x", Assignment{Node: "n1", Zones: zone(0)})
			g := c.Clone()
			g.Release("x", Assignment{PodUID: "x", Node: "n1", Zones: zone(0)})
			return []*State{s, c, g}
		}, []obs{free, taken, free}},
		{"a clone's own write after being cloned", func(s *State) []*State {
			c := s.Clone()
			g := c.Clone()
			c.Apply("x", Assignment{Node: "n1", Zones: zone(0)})
			return []*State{s, c, g}
		}, []obs{free, taken, free}},
		{"two writes to one node of a clone", func(s *State) []*State {
			c := s.Clone()
			c.Apply("x", Assignment{Node: "n1", Zones: zone(0)})
			c.Apply("y", Assignment{Node: "n1", Zones: zone(1)})
			c.Unapply("y", Assignment{Node: "n1", Zones: zone(1)})
			return []*State{s, c}
		}, []obs{free, taken}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := &fixture{}
			f.add(f.node("n1", "", "A", "A"))
			f.add(f.node("n2", "", "A", "A"))
			s := NewState(f.fabric(), nil)
			// Fill the leaf statistics the clones start with.
			if got := see(s); got != free {
				t.Fatalf("fresh state: %+v, want %+v", got, free)
			}
			states := tc.run(s)
			for i, st := range states {
				if got := see(st); got != tc.want[i] {
					t.Errorf("state %d: %+v, want %+v", i, got, tc.want[i])
				}
			}
		})
	}
}
