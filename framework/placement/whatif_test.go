package placement

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/rdmatopo/rdmatopo/framework/ledger"
	"github.com/rdmatopo/rdmatopo/framework/topology"
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
