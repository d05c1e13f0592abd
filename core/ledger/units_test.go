package ledger_test

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/kubewharf/katalyst-api/pkg/apis/node/v1alpha1"
	corev1 "k8s.io/api/core/v1"

	"github.com/rdmatopo/rdmatopo/core/ledger"
	"github.com/rdmatopo/rdmatopo/core/topology"
	"github.com/rdmatopo/rdmatopo/internal/testing/builders"
)

// unitsFabric is node n1 with zone 0 (NICs A0, A1 under leaf A) and zone 1
// (NICs B0, B1 under leaf B); units sets a NIC's RDMA units (others have
// one) and listed the units each consumer holds per NIC.
func unitsFabric(units map[string]int64, listed map[string]map[string]int64) *topology.Fabric {
	w := builders.ProviderCNR("n1", "A", "B")
	for nic, u := range units {
		w.Units(nic, u)
	}
	for consumer, nics := range listed {
		for nic, u := range nics {
			w.UseNICUnits(nic, consumer, u)
		}
	}
	node := builders.MakeNode("n1").Shared().GPU(8).RDMA(16).CPU("128").Obj()
	return topology.Build(topology.Config{}.WithDefaults(), []*corev1.Node{node}, []*v1alpha1.CustomNodeResource{w.Obj()})
}

// TestReserveUnits: a NIC of N units is held by up to N pods; NICs of one
// unit, or any NIC before a fabric is given, by one.
func TestReserveUnits(t *testing.T) {
	four := unitsFabric(map[string]int64{nicA0: 4, nicA1: 2}, nil)
	cases := map[string]struct {
		fabric *topology.Fabric
		held   []ledger.Reservation
		// release is released before add.
		release string
		add     ledger.Reservation
		wantErr error
		// wantHolders are nicA0's holders after add.
		wantHolders []string
	}{
		"two pods on one NIC of 4 units": {
			fabric:      four,
			held:        []ledger.Reservation{res("a", "n1", zone(0, 1, nicA0))},
			add:         res("b", "n1", zone(0, 1, nicA0)),
			wantHolders: []string{"u-a", "u-b"},
		},
		"a 2-unit pod takes one unit of two NICs beside another": {
			fabric:      four,
			held:        []ledger.Reservation{res("a", "n1", zone(0, 1, nicA0, nicA1))},
			add:         res("b", "n1", zone(0, 1, nicA0, nicA1)),
			wantHolders: []string{"u-a", "u-b"},
		},
		"a fifth pod on a NIC of 4 units is refused": {
			fabric: four,
			held: []ledger.Reservation{
				res("a", "n1", zone(0, 1, nicA0)), res("b", "n1", zone(0, 1, nicA0)),
				res("c", "n1", zone(0, 1, nicA0)), res("d", "n1", zone(0, 1, nicA0)),
			},
			add:         res("e", "n1", zone(0, 1, nicA0)),
			wantErr:     ledger.ErrNICTaken,
			wantHolders: []string{"u-a", "u-b", "u-c", "u-d"},
		},
		"a released unit is reserved again": {
			fabric: four,
			held: []ledger.Reservation{
				res("a", "n1", zone(0, 1, nicA0)), res("b", "n1", zone(0, 1, nicA0)),
				res("c", "n1", zone(0, 1, nicA0)), res("d", "n1", zone(0, 1, nicA0)),
			},
			release:     "u-b",
			add:         res("e", "n1", zone(0, 1, nicA0)),
			wantHolders: []string{"u-a", "u-c", "u-d", "u-e"},
		},
		"one NIC full refuses the whole reservation": {
			fabric:      four,
			held:        []ledger.Reservation{res("a", "n1", zone(0, 1, nicA1)), res("b", "n1", zone(0, 1, nicA1))},
			add:         res("c", "n1", zone(0, 1, nicA0, nicA1)),
			wantErr:     ledger.ErrNICTaken,
			wantHolders: nil,
		},
		"a NIC of one unit serves one pod": {
			fabric:      unitsFabric(nil, nil),
			held:        []ledger.Reservation{res("a", "n1", zone(0, 1, nicA0))},
			add:         res("b", "n1", zone(0, 1, nicA0)),
			wantErr:     ledger.ErrNICTaken,
			wantHolders: []string{"u-a"},
		},
		"without a fabric every NIC has one unit": {
			held:        []ledger.Reservation{res("a", "n1", zone(0, 1, nicA0))},
			add:         res("b", "n1", zone(0, 1, nicA0)),
			wantErr:     ledger.ErrNICTaken,
			wantHolders: []string{"u-a"},
		},
		"a NIC the fabric does not show has one unit": {
			fabric:      four,
			held:        []ledger.Reservation{res("a", "n2", zone(0, 1, nicA0))},
			add:         res("b", "n2", zone(0, 1, nicA0)),
			wantErr:     ledger.ErrNICTaken,
			wantHolders: nil,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			l := ledger.New()
			l.UseFabric(tc.fabric)
			for _, r := range tc.held {
				if err := l.Reserve(r); err != nil {
					t.Fatal(err)
				}
			}
			if tc.release != "" {
				if _, ok := l.Release(tc.release); !ok {
					t.Fatalf("release %s: not held", tc.release)
				}
			}
			err := l.Reserve(tc.add)
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("Reserve = %v, want %v", err, tc.wantErr)
			}
			if diff := cmp.Diff(tc.wantHolders, l.Holders("n1", nicA0)); diff != "" {
				t.Errorf("holders of %s (-want,+got):\n%s", nicA0, diff)
			}
			if got := l.HolderCount("n1", nicA0); got != len(tc.wantHolders) {
				t.Errorf("HolderCount = %d, want %d", got, len(tc.wantHolders))
			}
			mustInvariants(t, l)
			c := l.Clone()
			mustInvariants(t, c)
			if err := c.Reserve(tc.add); err == nil && tc.wantErr == nil {
				t.Errorf("clone: reserving %s twice succeeded", tc.add)
			}
		})
	}
}

// TestAdoptUnits: pods the KCNR lists on one NIC of several units share
// it; what is over-allocated stays clamped to the NIC's units.
func TestAdoptUnits(t *testing.T) {
	consumer := func(name string) string { return "ns/" + name + "/u-" + name }
	cases := map[string]struct {
		units  map[string]int64
		held   []ledger.Reservation
		listed map[string]map[string]int64
		want   map[string]ledger.Reservation
		// mismatched are the UIDs reported, with the NICs contested.
		mismatched map[string][]topology.NICID
		displaced  []string
	}{
		"two consumers listed on one NIC of 4 units: both hold it": {
			units:  map[string]int64{nicA0: 4},
			held:   []ledger.Reservation{res("a", "n1", zone(0, 1, nicA0)), res("b", "n1", zone(0, 1, nicA0))},
			listed: map[string]map[string]int64{consumer("a"): {nicA0: 1}, consumer("b"): {nicA0: 1}},
			want: map[string]ledger.Reservation{
				"u-a": confirmed(res("a", "n1", zone(0, 1, nicA0))),
				"u-b": confirmed(res("b", "n1", zone(0, 1, nicA0))),
			},
		},
		"the agent put a pod on another pod's NIC that has a unit left: adopted, nothing contested": {
			units:  map[string]int64{nicA0: 4},
			held:   []ledger.Reservation{res("a", "n1", zone(0, 1, nicA0)), res("b", "n1", zone(0, 1, nicA1))},
			listed: map[string]map[string]int64{consumer("b"): {nicA0: 1}},
			want: map[string]ledger.Reservation{
				"u-a": res("a", "n1", zone(0, 1, nicA0)),
				"u-b": confirmed(res("b", "n1", zone(0, 1, nicA0))),
			},
			mismatched: map[string][]topology.NICID{"u-b": nil},
		},
		"a consumer listed with 2 units of one NIC holds it once": {
			units:  map[string]int64{nicA0: 4},
			held:   []ledger.Reservation{res("a", "n1", zone(0, 1, nicA0, nicA1))},
			listed: map[string]map[string]int64{consumer("a"): {nicA0: 2}},
			want: map[string]ledger.Reservation{
				"u-a": confirmed(res("a", "n1", zone(0, 1, nicA0))),
			},
			mismatched: map[string][]topology.NICID{"u-a": nil},
		},
		"a full NIC: the last unconfirmed holder by UID gives its unit up": {
			units: map[string]int64{nicA0: 2},
			held: []ledger.Reservation{
				res("a", "n1", zone(0, 1, nicA0)), res("b", "n1", zone(0, 1, nicA0)),
				res("c", "n1", zone(0, 1, nicA1)),
			},
			listed: map[string]map[string]int64{consumer("c"): {nicA0: 1}},
			want: map[string]ledger.Reservation{
				"u-a": res("a", "n1", zone(0, 1, nicA0)),
				"u-b": res("b", "n1", zone(0, 1, nicA1)),
				"u-c": confirmed(res("c", "n1", zone(0, 1, nicA0))),
			},
			mismatched: map[string][]topology.NICID{"u-c": {nicA0}},
			displaced:  []string{"u-b"},
		},
		"over-allocated, none held it before: the first two by UID take it": {
			units: map[string]int64{nicA0: 2},
			held: []ledger.Reservation{
				res("a", "n1", zone(0, 1, nicA1)), res("b", "n1", zone(0, 1, nicB0)),
				res("c", "n1", zone(0, 1, nicB1)),
			},
			listed: map[string]map[string]int64{consumer("a"): {nicA0: 1}, consumer("b"): {nicA0: 1}, consumer("c"): {nicA0: 1}},
			want: map[string]ledger.Reservation{
				"u-a": confirmed(res("a", "n1", zone(0, 1, nicA0))),
				"u-b": confirmed(res("b", "n1", zone(0, 1, nicA0))),
				"u-c": confirmed(res("c", "n1", zone(0, 1))),
			},
			mismatched: map[string][]topology.NICID{"u-a": nil, "u-b": nil, "u-c": nil},
		},
		"over-allocated: three listed on a NIC of 2 units, the first two by UID keep it": {
			units: map[string]int64{nicA0: 2},
			held: []ledger.Reservation{
				res("a", "n1", zone(0, 1, nicA0)), res("b", "n1", zone(0, 1, nicA0)),
				res("c", "n1", zone(0, 1, nicA1)),
			},
			listed: map[string]map[string]int64{consumer("a"): {nicA0: 1}, consumer("b"): {nicA0: 1}, consumer("c"): {nicA0: 1}},
			want: map[string]ledger.Reservation{
				"u-a": confirmed(res("a", "n1", zone(0, 1, nicA0))),
				"u-b": confirmed(res("b", "n1", zone(0, 1, nicA0))),
				"u-c": confirmed(res("c", "n1", zone(0, 1))),
			},
			mismatched: map[string][]topology.NICID{"u-c": nil},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			f := unitsFabric(tc.units, tc.listed)
			l := ledger.New()
			l.UseFabric(f)
			for _, r := range tc.held {
				if err := l.Reserve(r); err != nil {
					t.Fatal(err)
				}
			}
			ms, displaced := l.Adopt(f, nil)
			got := map[string][]topology.NICID{}
			for _, m := range ms {
				got[m.Planned.UID] = m.Contested
			}
			if len(got) == 0 {
				got = nil
			}
			if diff := cmp.Diff(tc.mismatched, got); diff != "" {
				t.Errorf("mismatches (-want,+got):\n%s", diff)
			}
			var gotDisplaced []string
			for _, d := range displaced {
				gotDisplaced = append(gotDisplaced, d.Realized.UID)
			}
			if diff := cmp.Diff(tc.displaced, gotDisplaced); diff != "" {
				t.Errorf("displaced (-want,+got):\n%s", diff)
			}
			all := map[string]ledger.Reservation{}
			for _, r := range l.All() {
				all[r.UID] = r
			}
			if diff := cmp.Diff(tc.want, all); diff != "" {
				t.Errorf("ledger after Adopt (-want,+got):\n%s", diff)
			}
			mustInvariants(t, l)
			if again, _ := l.Adopt(f, nil); len(again) != 0 {
				t.Errorf("second Adopt reported %d mismatches, want none", len(again))
			}
		})
	}
}

// TestRebuildSharedNICs: pods annotated with one NIC of several units keep
// it up to its units, earliest first; the others are reported.
func TestRebuildSharedNICs(t *testing.T) {
	f := unitsFabric(map[string]int64{nicA0: 2, nicA1: 2}, nil)
	pods := []*corev1.Pod{
		bound("p1", "n1", nicA0+","+nicA1, "0").Created(t0).Obj(),
		bound("p2", "n1", nicA0, "0").Created(t0.Add(1)).Obj(),
		bound("p3", "n1", nicA0+","+nicA1, "0").Created(t0.Add(2)).Obj(),
	}
	l, errs := ledger.Rebuild(topology.Config{}, pods, f)
	want := []ledger.Reservation{
		{UID: "u-p1", Namespace: "ns", Name: "p1", Node: "n1", Zones: []ledger.ZoneUse{{NUMA: 0, NICs: []topology.NICID{nicA0, nicA1}}}},
		{UID: "u-p2", Namespace: "ns", Name: "p2", Node: "n1", Zones: []ledger.ZoneUse{{NUMA: 0, NICs: []topology.NICID{nicA0}}}},
		{UID: "u-p3", Namespace: "ns", Name: "p3", Node: "n1", Zones: []ledger.ZoneUse{{NUMA: 0, NICs: []topology.NICID{nicA1}}}},
	}
	if diff := cmp.Diff(want, l.All()); diff != "" {
		t.Errorf("rebuilt (-want,+got):\n%s", diff)
	}
	if len(errs) != 1 || !errors.Is(errs[0], ledger.ErrNICTaken) {
		t.Errorf("errors = %v, want one ErrNICTaken for p3's %s", errs, nicA0)
	}
	mustInvariants(t, l)
}
