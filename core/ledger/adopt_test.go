package ledger_test

import (
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/kubewharf/katalyst-api/pkg/apis/node/v1alpha1"
	corev1 "k8s.io/api/core/v1"

	"github.com/rdmatopo/rdmatopo/core/ledger"
	"github.com/rdmatopo/rdmatopo/core/topology"
	"github.com/rdmatopo/rdmatopo/internal/testing/builders"
)

// adoptFabric builds node n1 (leaf A on NUMA 0, B on NUMA 1) whose KCNR
// lists each consumer on the given NICs.
func adoptFabric(listed map[string][]string) *topology.Fabric {
	w := builders.ProviderCNR("n1", "A", "B")
	for consumer, nics := range listed {
		for _, n := range nics {
			w.UseNIC(n, consumer)
		}
	}
	node := builders.ProviderNode("n1").Obj()
	return topology.Build(topology.Config{}.WithDefaults(), []*corev1.Node{node}, []*v1alpha1.CustomNodeResource{w.Obj()})
}

func TestAdopt(t *testing.T) {
	consumer := func(name string) string { return "ns/" + name + "/u-" + name }
	cases := map[string]struct {
		held   []ledger.Reservation
		listed map[string][]string
		// want is every reservation after Adopt, by UID.
		want map[string]ledger.Reservation
		// mismatched are the UIDs reported, with the NICs contested.
		mismatched map[string][]topology.NICID
		// gone names the consumers whose pods are gone.
		gone []string
		// displaced are the unconfirmed reservations that lost NICs, as
		// they are after Adopt, by UID.
		displaced map[string]ledger.Reservation
	}{
		"listed as reserved: confirmed, no mismatch": {
			held:   []ledger.Reservation{res("a", "n1", zone(0, 4, nicA0, nicA1))},
			listed: map[string][]string{consumer("a"): {nicA0, nicA1}},
			want: map[string]ledger.Reservation{
				"u-a": confirmed(res("a", "n1", zone(0, 4, nicA0, nicA1))),
			},
		},
		"agent took the other zone: adopted, planned NICs freed": {
			held:   []ledger.Reservation{res("a", "n1", zone(0, 4, nicA0, nicA1))},
			listed: map[string][]string{consumer("a"): {nicB0, nicB1}},
			want: map[string]ledger.Reservation{
				"u-a": confirmed(res("a", "n1", zone(1, 4, nicB0, nicB1))),
			},
			mismatched: map[string][]topology.NICID{"u-a": nil},
		},
		"agent split the pod over two zones: GPUs split evenly": {
			held:   []ledger.Reservation{res("a", "n1", zone(0, 4, nicA0, nicA1))},
			listed: map[string][]string{consumer("a"): {nicA1, nicB0}},
			want: map[string]ledger.Reservation{
				"u-a": confirmed(res("a", "n1", zone(0, 2, nicA1), zone(1, 2, nicB0))),
			},
			mismatched: map[string][]topology.NICID{"u-a": nil},
		},
		"split by container, listed as reserved: confirmed, split kept": {
			held:   []ledger.Reservation{byContainer(res("a", "n1", zone(0, 4, nicA0), zone(1, 4, nicB0)))},
			listed: map[string][]string{consumer("a"): {nicA0, nicB0}},
			want: map[string]ledger.Reservation{
				"u-a": confirmed(byContainer(res("a", "n1", zone(0, 4, nicA0), zone(1, 4, nicB0)))),
			},
		},
		"split by container, listed on other NICs: adopted, split dropped": {
			held:   []ledger.Reservation{byContainer(res("a", "n1", zone(0, 4, nicA0), zone(1, 4, nicB0)))},
			listed: map[string][]string{consumer("a"): {nicA1, nicB1}},
			want: map[string]ledger.Reservation{
				"u-a": confirmed(res("a", "n1", zone(0, 4, nicA1), zone(1, 4, nicB1))),
			},
			mismatched: map[string][]topology.NICID{"u-a": nil},
		},
		"not listed yet: unchanged": {
			held: []ledger.Reservation{res("a", "n1", zone(0, 4, nicA0, nicA1))},
			want: map[string]ledger.Reservation{
				"u-a": res("a", "n1", zone(0, 4, nicA0, nicA1)),
			},
		},
		"adopted NICs taken from an unconfirmed reservation: it takes the freed zone": {
			held: []ledger.Reservation{
				res("a", "n1", zone(0, 4, nicA0, nicA1)),
				res("b", "n1", zone(1, 4, nicB0, nicB1)),
			},
			listed: map[string][]string{consumer("a"): {nicB0, nicB1}},
			want: map[string]ledger.Reservation{
				"u-a": confirmed(res("a", "n1", zone(1, 4, nicB0, nicB1))),
				"u-b": res("b", "n1", zone(0, 4, nicA0, nicA1)),
			},
			mismatched: map[string][]topology.NICID{"u-a": {nicB0, nicB1}},
			displaced:  map[string]ledger.Reservation{"u-b": res("b", "n1", zone(0, 4, nicA0, nicA1))},
		},
		"contested NIC replaced by a free one of the same zone": {
			held: []ledger.Reservation{
				res("a", "n1", zone(0, 2, nicA1)),
				res("b", "n1", zone(0, 2, nicA0)),
			},
			listed: map[string][]string{consumer("a"): {nicA0}},
			want: map[string]ledger.Reservation{
				"u-a": confirmed(res("a", "n1", zone(0, 2, nicA0))),
				"u-b": res("b", "n1", zone(0, 2, nicA1)),
			},
			mismatched: map[string][]topology.NICID{"u-a": {nicA0}},
			displaced:  map[string]ledger.Reservation{"u-b": res("b", "n1", zone(0, 2, nicA1))},
		},
		"no free NIC: the displaced pod keeps its zone without it": {
			held: []ledger.Reservation{
				res("a", "n1", zone(1, 2, nicB0)),
				res("c", "n1", zone(0, 2, nicA0)),
			},
			listed: map[string][]string{consumer("a"): {nicA0}, consumer("x"): {nicA1, nicB0, nicB1}},
			want: map[string]ledger.Reservation{
				"u-a": confirmed(res("a", "n1", zone(0, 2, nicA0))),
				"u-c": res("c", "n1", zone(0, 2)),
			},
			mismatched: map[string][]topology.NICID{"u-a": {nicA0}},
			displaced:  map[string]ledger.Reservation{"u-c": res("c", "n1", zone(0, 2))},
		},
		"a NIC the KCNR lists only for a gone pod stands in": {
			held: []ledger.Reservation{
				res("a", "n1", zone(0, 2, nicA1)),
				res("b", "n1", zone(0, 2, nicA0)),
			},
			listed: map[string][]string{consumer("a"): {nicA0}, consumer("x"): {nicA1, nicB0, nicB1}},
			gone:   []string{consumer("x")},
			want: map[string]ledger.Reservation{
				"u-a": confirmed(res("a", "n1", zone(0, 2, nicA0))),
				"u-b": res("b", "n1", zone(0, 2, nicA1)),
			},
			mismatched: map[string][]topology.NICID{"u-a": {nicA0}},
			displaced:  map[string]ledger.Reservation{"u-b": res("b", "n1", zone(0, 2, nicA1))},
		},
		"a NIC the KCNR lists for a live pod does not stand in": {
			held: []ledger.Reservation{
				res("a", "n1", zone(0, 2, nicA1)),
				res("b", "n1", zone(0, 2, nicA0)),
			},
			listed: map[string][]string{consumer("a"): {nicA0}, consumer("x"): {nicA1, nicB0, nicB1}},
			want: map[string]ledger.Reservation{
				"u-a": confirmed(res("a", "n1", zone(0, 2, nicA0))),
				"u-b": res("b", "n1", zone(0, 2)),
			},
			mismatched: map[string][]topology.NICID{"u-a": {nicA0}},
			displaced:  map[string]ledger.Reservation{"u-b": res("b", "n1", zone(0, 2))},
		},
		"NIC of a confirmed holder is not adopted": {
			held: []ledger.Reservation{
				res("a", "n1", zone(0, 4, nicA0, nicA1)),
				res("b", "n1", zone(1, 4, nicB0, nicB1)),
			},
			listed: map[string][]string{consumer("a"): {nicA0, nicB0}, consumer("b"): {nicB0, nicB1}},
			want: map[string]ledger.Reservation{
				"u-a": confirmed(res("a", "n1", zone(0, 2, nicA0), zone(1, 2))),
				"u-b": confirmed(res("b", "n1", zone(1, 4, nicB0, nicB1))),
			},
			mismatched: map[string][]topology.NICID{"u-a": nil},
		},
		"agent swapped two pods' zones: both adopted": {
			held: []ledger.Reservation{
				res("a", "n1", zone(0, 4, nicA0, nicA1)),
				res("b", "n1", zone(1, 4, nicB0, nicB1)),
			},
			listed: map[string][]string{consumer("a"): {nicB0, nicB1}, consumer("b"): {nicA0, nicA1}},
			want: map[string]ledger.Reservation{
				"u-a": confirmed(res("a", "n1", zone(1, 4, nicB0, nicB1))),
				"u-b": confirmed(res("b", "n1", zone(0, 4, nicA0, nicA1))),
			},
			mismatched: map[string][]topology.NICID{"u-a": nil, "u-b": nil},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			l := ledger.New()
			for _, r := range tc.held {
				if err := l.Reserve(r); err != nil {
					t.Fatal(err)
				}
			}
			// u-b is confirmed first when the KCNR lists it, as a
			// session's earlier Confirm would have done.
			gone := map[string]bool{}
			for _, c := range tc.gone {
				gone[c] = true
			}
			ms, displaced := l.Adopt(adoptFabric(tc.listed), func(c string) bool { return gone[c] })
			gotDisplaced := map[string]ledger.Reservation{}
			for _, d := range displaced {
				gotDisplaced[d.Realized.UID] = d.Realized
				if before := heldByUID(tc.held)[d.Planned.UID]; !cmp.Equal(before, d.Planned) {
					t.Errorf("displaced %s: Planned %v, want the reservation before Adopt %v", d.Planned.UID, d.Planned, before)
				}
			}
			if len(gotDisplaced) == 0 {
				gotDisplaced = nil
			}
			if diff := cmp.Diff(tc.displaced, gotDisplaced); diff != "" {
				t.Errorf("displaced (-want,+got):\n%s", diff)
			}
			got := map[string][]topology.NICID{}
			for _, m := range ms {
				got[m.Planned.UID] = m.Contested
				if m.Planned.UID != m.Realized.UID {
					t.Errorf("mismatch pairs %s with %s", m.Planned.UID, m.Realized.UID)
				}
			}
			if len(got) == 0 {
				got = nil
			}
			if diff := cmp.Diff(tc.mismatched, got); diff != "" {
				t.Errorf("mismatches (-want,+got):\n%s", diff)
			}
			all := map[string]ledger.Reservation{}
			for _, r := range l.All() {
				all[r.UID] = r
			}
			if diff := cmp.Diff(tc.want, all); diff != "" {
				t.Errorf("ledger after Adopt (-want,+got):\n%s", diff)
			}
			mustInvariants(t, l)
			if again, _ := l.Adopt(adoptFabric(tc.listed), func(c string) bool { return gone[c] }); len(again) != 0 {
				t.Errorf("second Adopt reported %d mismatches, want none", len(again))
			}
		})
	}
}

func heldByUID(rs []ledger.Reservation) map[string]ledger.Reservation {
	out := map[string]ledger.Reservation{}
	for _, r := range rs {
		out[r.UID] = r
	}
	return out
}

// byContainer splits r by container: container "c<i>" in zone i of r, with
// its NICs.
func byContainer(r ledger.Reservation) ledger.Reservation {
	for i, z := range r.Zones {
		r.Containers = append(r.Containers, ledger.ContainerUse{Names: []string{fmt.Sprintf("c%d", i)}, NUMA: z.NUMA,
			NICs: append([]topology.NICID(nil), z.NICs...)})
	}
	return r
}

func confirmed(r ledger.Reservation) ledger.Reservation {
	r.Confirmed = true
	return r
}

func TestReserveUncontested(t *testing.T) {
	cases := map[string]struct {
		held          []ledger.Reservation
		add           ledger.Reservation
		wantContested []topology.NICID
		want          ledger.Reservation
	}{
		"nothing held: reserved whole": {
			add:  res("b", "n1", zone(0, 4, nicA0, nicA1)),
			want: res("b", "n1", zone(0, 4, nicA0, nicA1)),
		},
		"one NIC held: the pod keeps the other": {
			held:          []ledger.Reservation{res("a", "n1", zone(0, 2, nicA0))},
			add:           res("b", "n1", zone(0, 4, nicA0, nicA1)),
			wantContested: []topology.NICID{nicA0},
			want:          res("b", "n1", zone(0, 4, nicA1)),
		},
		"every NIC held: zone kept, no NIC": {
			held:          []ledger.Reservation{res("a", "n1", zone(0, 4, nicA0, nicA1))},
			add:           res("b", "n1", zone(0, 4, nicA0, nicA1)),
			wantContested: []topology.NICID{nicA0, nicA1},
			want:          res("b", "n1", zone(0, 4)),
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			l := ledger.New()
			for _, r := range tc.held {
				if err := l.Reserve(r); err != nil {
					t.Fatal(err)
				}
			}
			contested, err := l.ReserveUncontested(tc.add)
			if err != nil {
				t.Fatalf("ReserveUncontested: %v", err)
			}
			if diff := cmp.Diff(tc.wantContested, contested); diff != "" {
				t.Errorf("contested (-want,+got):\n%s", diff)
			}
			got, _ := l.Get(tc.add.UID)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("reservation (-want,+got):\n%s", diff)
			}
			mustInvariants(t, l)
		})
	}
}

// TestAdoptWalksWhatChanged: Adopt walks again only the nodes whose KCNR
// (a new fabric node) or reservations changed since it last walked them,
// and there finds what the full walk would: a second Adopt over the same
// fabric changes nothing, a pod reserved since on a node it already walked
// is adopted, and so is a reservation under a KCNR that changed, or on a
// node that lost all its reservations and got one again.
func TestAdoptWalksWhatChanged(t *testing.T) {
	consumer := func(name string) string { return "ns/" + name + "/u-" + name }
	l := ledger.New()
	if err := l.Reserve(res("a", "n1", zone(0, 4, nicA0, nicA1))); err != nil {
		t.Fatal(err)
	}
	steps := []struct {
		name string
		// release are released, then reserve is reserved, before the
		// step's Adopt.
		release []string
		reserve *ledger.Reservation
		listed  map[string][]string
		// fresh builds the fabric again (a new KCNR) for the step.
		fresh      bool
		mismatched []string
		want       map[string]ledger.Reservation
	}{
		// The KCNR lists b before the scheduler reserved it: a NIC the
		// node agent gave a pod the ledger does not know yet.
		{name: "a listed elsewhere", fresh: true, listed: map[string][]string{consumer("a"): {nicB0, nicB1}, consumer("b"): {nicA1}},
			mismatched: []string{"u-a"},
			want:       map[string]ledger.Reservation{"u-a": confirmed(res("a", "n1", zone(1, 4, nicB0, nicB1)))}},
		{name: "same fabric again",
			want: map[string]ledger.Reservation{"u-a": confirmed(res("a", "n1", zone(1, 4, nicB0, nicB1)))}},
		{name: "b reserved since, listed elsewhere in the same KCNR", reserve: ptr(res("b", "n1", zone(0, 4, nicA0))),
			mismatched: []string{"u-b"},
			want: map[string]ledger.Reservation{
				"u-a": confirmed(res("a", "n1", zone(1, 4, nicB0, nicB1))),
				"u-b": confirmed(res("b", "n1", zone(0, 4, nicA1))),
			}},
		{name: "the KCNR changes: a moves back", fresh: true,
			listed:     map[string][]string{consumer("a"): {nicA0}, consumer("b"): {nicA1}},
			mismatched: []string{"u-a"},
			want: map[string]ledger.Reservation{
				"u-a": confirmed(res("a", "n1", zone(0, 4, nicA0))),
				"u-b": confirmed(res("b", "n1", zone(0, 4, nicA1))),
			}},
		{name: "every reservation of the node released", release: []string{"u-a", "u-b"},
			want: map[string]ledger.Reservation{}},
		{name: "a reserved again elsewhere than the same KCNR lists", reserve: ptr(res("a", "n1", zone(1, 4, nicB0))),
			mismatched: []string{"u-a"},
			want:       map[string]ledger.Reservation{"u-a": confirmed(res("a", "n1", zone(0, 4, nicA0)))}},
	}
	var f *topology.Fabric
	for _, st := range steps {
		if st.fresh || f == nil {
			f = adoptFabric(st.listed)
		}
		for _, uid := range st.release {
			if _, ok := l.Release(uid); !ok {
				t.Fatalf("%s: %s had no reservation", st.name, uid)
			}
		}
		if st.reserve != nil {
			if err := l.Reserve(*st.reserve); err != nil {
				t.Fatalf("%s: %v", st.name, err)
			}
		}
		mismatches, _ := l.Adopt(f, nil)
		var got []string
		for _, m := range mismatches {
			got = append(got, m.Planned.UID)
		}
		if diff := cmp.Diff(st.mismatched, got); diff != "" {
			t.Errorf("%s: mismatches (-want +got):\n%s", st.name, diff)
		}
		if diff := cmp.Diff(st.want, heldByUID(l.All())); diff != "" {
			t.Errorf("%s: ledger (-want +got):\n%s", st.name, diff)
		}
	}
}

func ptr[T any](v T) *T { return &v }
