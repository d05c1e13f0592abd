package ledger_test

import (
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/kubewharf/katalyst-api/pkg/apis/node/v1alpha1"
	corev1 "k8s.io/api/core/v1"

	"github.com/rdmatopo/rdmatopo/core/ledger"
	"github.com/rdmatopo/rdmatopo/core/topology"
	"github.com/rdmatopo/rdmatopo/internal/testing/builders"
)

const (
	nicA0 = "0000:1a:00.0"
	nicA1 = "0000:3f:00.0"
	nicB0 = "0000:d1:00.0"
	nicB1 = "0000:e7:00.0"
)

// res builds a reservation of pod ns/<name> (UID "u-<name>", job ns/job).
func res(name, node string, zones ...ledger.ZoneUse) ledger.Reservation {
	return ledger.Reservation{UID: "u-" + name, Namespace: "ns", Name: name, Job: "ns/job", Node: node, Zones: zones}
}

// zone builds a zone use with gpu GPUs and 1000*gpu CPU millicores.
func zone(numa int, gpu int64, nics ...topology.NICID) ledger.ZoneUse {
	return ledger.ZoneUse{NUMA: numa, GPU: gpu, CPUMilli: 1000 * gpu, NICs: nics}
}

func mustInvariants(t *testing.T, l *ledger.Ledger) {
	t.Helper()
	if err := l.CheckInvariants(); err != nil {
		t.Fatalf("CheckInvariants: %v", err)
	}
}

func TestReserve(t *testing.T) {
	base := []ledger.Reservation{
		res("a", "n1", zone(0, 4, nicA0, nicA1)),
		res("b", "n1", zone(1, 2, nicB0)),
	}
	cases := map[string]struct {
		add     ledger.Reservation
		wantErr error
		wantMsg []string
	}{
		"free NIC on the same node": {add: res("c", "n1", zone(1, 2, nicB1))},
		"same NIC on another node":  {add: res("c", "n2", zone(0, 4, nicA0))},
		"no NIC at all":             {add: res("c", "n1", zone(1, 1))},
		"zones out of order": {
			add:     res("c", "n1", zone(1, 1, nicB1), zone(0, 1, nicA1)),
			wantErr: ledger.ErrInvalidReservation,
		},
		"NIC held": {
			add:     res("c", "n1", zone(0, 1, nicA1), zone(1, 1, nicB1)),
			wantErr: ledger.ErrNICTaken,
			wantMsg: []string{nicA1, "n1", "ns/a (u-a)"},
		},
		"duplicate pod": {
			add:     res("a", "n2", zone(0, 1, nicA0)),
			wantErr: ledger.ErrPodReserved,
			wantMsg: []string{"ns/a (u-a)"},
		},
		"no UID":            {add: ledger.Reservation{Node: "n1"}, wantErr: ledger.ErrInvalidReservation},
		"no node":           {add: ledger.Reservation{UID: "x"}, wantErr: ledger.ErrInvalidReservation},
		"upper-case NIC":    {add: res("c", "n1", zone(1, 1, "0000:E7:00.0")), wantErr: ledger.ErrInvalidReservation},
		"NIC in two zones":  {add: res("c", "n2", zone(0, 1, nicA0), zone(1, 1, nicA0)), wantErr: ledger.ErrInvalidReservation},
		"unsorted NICs":     {add: res("c", "n2", zone(0, 1, nicA1, nicA0)), wantErr: ledger.ErrInvalidReservation},
		"negative GPU":      {add: res("c", "n2", zone(0, -1)), wantErr: ledger.ErrInvalidReservation},
		"duplicate NUMA id": {add: res("c", "n2", zone(0, 1), zone(0, 1)), wantErr: ledger.ErrInvalidReservation},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			l := ledger.New()
			for _, r := range base {
				if err := l.Reserve(r); err != nil {
					t.Fatalf("Reserve(%s): %v", r, err)
				}
			}
			before := l.All()
			err := l.Reserve(tc.add)
			mustInvariants(t, l)
			if tc.wantErr == nil {
				if err != nil {
					t.Fatalf("Reserve: %v", err)
				}
				got, ok := l.Get(tc.add.UID)
				if !ok {
					t.Fatal("reservation not stored")
				}
				if diff := cmp.Diff(tc.add, got, cmpopts.EquateEmpty()); diff != "" {
					t.Errorf("Get (-want +got):\n%s", diff)
				}
				return
			}
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("Reserve error = %v, want %v", err, tc.wantErr)
			}
			for _, m := range tc.wantMsg {
				if !strings.Contains(err.Error(), m) {
					t.Errorf("error %q does not mention %q", err, m)
				}
			}
			if diff := cmp.Diff(before, l.All()); diff != "" {
				t.Errorf("failed Reserve changed the ledger (-before +after):\n%s", diff)
			}
		})
	}
}

func TestReleaseAndQueries(t *testing.T) {
	l := ledger.New()
	for _, r := range []ledger.Reservation{
		res("b", "n1", zone(1, 2, nicB0)),
		res("a", "n1", zone(0, 4, nicA0, nicA1)),
		res("c", "n2", zone(0, 4, nicA0), zone(1, 4, nicB0, nicB1)),
	} {
		if err := l.Reserve(r); err != nil {
			t.Fatal(err)
		}
	}
	if l.Len() != 3 {
		t.Fatalf("Len = %d, want 3", l.Len())
	}
	if diff := cmp.Diff([]string{"u-c"}, l.Holders("n2", nicB1)); diff != "" {
		t.Errorf("Holders(n2, %s) (-want +got):\n%s", nicB1, diff)
	}
	if n := l.HolderCount("n1", nicB1); n != 0 {
		t.Errorf("HolderCount of a free NIC = %d, want 0", n)
	}
	held := map[topology.NICID][]string{}
	for _, nic := range []topology.NICID{nicA0, nicA1, nicB0, nicB1} {
		if hs := l.Holders("n1", nic); hs != nil {
			held[nic] = hs
		}
	}
	if diff := cmp.Diff(map[topology.NICID][]string{nicA0: {"u-a"}, nicA1: {"u-a"}, nicB0: {"u-b"}}, held); diff != "" {
		t.Errorf("Holders on n1 (-want +got):\n%s", diff)
	}
	uids := func(rs []ledger.Reservation) []string {
		var out []string
		for _, r := range rs {
			out = append(out, r.UID)
		}
		return out
	}
	if diff := cmp.Diff([]string{"u-a", "u-b"}, uids(l.OnNode("n1"))); diff != "" {
		t.Errorf("OnNode (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"u-a", "u-b", "u-c"}, uids(l.All())); diff != "" {
		t.Errorf("All (-want +got):\n%s", diff)
	}
	var each []ledger.Reservation
	l.Each(func(r ledger.Reservation) {
		// Each runs outside the lock: the ledger may be called from fn.
		if _, ok := l.Get(r.UID); !ok {
			t.Errorf("Each: Get(%s) finds nothing", r.UID)
		}
		each = append(each, r)
	})
	if diff := cmp.Diff(l.All(), each, cmpopts.SortSlices(func(a, b ledger.Reservation) bool { return a.UID < b.UID })); diff != "" {
		t.Errorf("Each differs from All (-All +Each):\n%s", diff)
	}
	c, _ := l.Get("u-c")
	if diff := cmp.Diff([]topology.NICID{nicA0, nicB0, nicB1}, c.NICs()); diff != "" {
		t.Errorf("NICs (-want +got):\n%s", diff)
	}
	if c.Consumer() != "ns/c/u-c" {
		t.Errorf("Consumer = %q", c.Consumer())
	}

	// Returned reservations are copies.
	c.Zones[0].NICs[0] = "0000:ff:00.0"
	if again, _ := l.Get("u-c"); again.Zones[0].NICs[0] != nicA0 {
		t.Error("modifying a returned reservation changed the ledger")
	}

	got, ok := l.Release("u-a")
	if !ok || got.UID != "u-a" {
		t.Fatalf("Release = %v, %v", got, ok)
	}
	if _, ok := l.Release("u-a"); ok {
		t.Error("second Release succeeded")
	}
	mustInvariants(t, l)
	if l.HolderCount("n1", nicA0) != 0 {
		t.Error("released NIC still held")
	}
	if err := l.Reserve(res("d", "n1", zone(0, 1, nicA0))); err != nil {
		t.Errorf("reserving a released NIC: %v", err)
	}
	l.Release("u-b")
	l.Release("u-d")
	mustInvariants(t, l)
	if rs := l.OnNode("n1"); len(rs) != 0 {
		t.Errorf("OnNode after releasing all = %v", rs)
	}
}

func TestConfirmAndUnconfirmed(t *testing.T) {
	cnr := builders.MakeCNR("n1").Zone(0, 4, 64000).Zone(1, 4, 64000).
		NIC(nicA0, 0, "leafA").NIC(nicA1, 0, "leafA").NIC(nicB0, 1, "leafB").
		UseNIC(nicA0, "ns/a/u-a").
		Alloc(1, "ns/b/u-b", corev1.ResourceList{builders.GPUResource: mustQty("1")}).
		Obj()
	f := topology.Build(topology.Config{}, []*corev1.Node{builders.MakeNode("n1").Shared().Obj()},
		[]*v1alpha1.CustomNodeResource{cnr})

	l := ledger.New()
	for _, r := range []ledger.Reservation{
		res("a", "n1", zone(0, 1, nicA0)),
		res("b", "n1", zone(1, 1, nicB0)),
		res("c", "n1", zone(0, 1, nicA1)),
		res("d", "n9", zone(0, 1, nicA1)),
	} {
		if err := l.Reserve(r); err != nil {
			t.Fatal(err)
		}
	}
	if n := l.Confirm(nil); n != 0 {
		t.Errorf("Confirm(nil) = %d", n)
	}
	if n := l.Confirm(f); n != 2 {
		t.Errorf("Confirm = %d, want 2", n)
	}
	if n := l.Confirm(f); n != 0 {
		t.Errorf("second Confirm = %d, want 0", n)
	}
	var got []string
	for _, r := range l.Unconfirmed("n1") {
		got = append(got, r.UID)
	}
	if diff := cmp.Diff([]string{"u-c"}, got); diff != "" {
		t.Errorf("Unconfirmed (-want +got):\n%s", diff)
	}
	if a, _ := l.Get("u-a"); !a.Confirmed {
		t.Error("u-a not confirmed")
	}
	// Confirmation survives a fabric that no longer lists the consumer.
	l.Confirm(topology.Build(topology.Config{}, nil, nil))
	if a, _ := l.Get("u-a"); !a.Confirmed {
		t.Error("confirmation withdrawn")
	}
	mustInvariants(t, l)
}

func TestClone(t *testing.T) {
	l := ledger.New()
	if err := l.Reserve(res("a", "n1", zone(0, 1, nicA0))); err != nil {
		t.Fatal(err)
	}
	c := l.Clone()
	if err := c.Reserve(res("b", "n1", zone(0, 1, nicA1))); err != nil {
		t.Fatal(err)
	}
	c.Release("u-a")
	mustInvariants(t, l)
	mustInvariants(t, c)
	if _, ok := l.Get("u-a"); !ok || l.Len() != 1 {
		t.Error("changes to the clone leaked into the original")
	}
	if _, ok := c.Get("u-b"); !ok || c.Len() != 1 {
		t.Error("clone lost its own change")
	}
}

func TestConcurrentReaders(t *testing.T) {
	l := ledger.New()
	for i := 0; i < 64; i++ {
		node := builders.NodeName(i)
		if err := l.Reserve(res(node, node, zone(0, 4, nicA0, nicA1))); err != nil {
			t.Fatal(err)
		}
	}
	var wg sync.WaitGroup
	failures := make(chan string, 64)
	for g := 0; g < 16; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for i := 0; i < 200; i++ {
				node := builders.NodeName((g*7 + i) % 64)
				if hs := l.Holders(node, nicA0); len(hs) != 1 || hs[0] != "u-"+node {
					failures <- node
					return
				}
				_ = l.OnNode(node)
				_ = l.Unconfirmed(node)
			}
		}(g)
	}
	// One writer reserving and releasing on other nodes at the same time.
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; i < 200; i++ {
			r := res("w", "writer-node", zone(0, 1, nicB0))
			if err := l.Reserve(r); err != nil {
				failures <- err.Error()
				return
			}
			l.Release(r.UID)
		}
	}()
	wg.Wait()
	close(failures)
	for f := range failures {
		t.Errorf("concurrent access failed: %s", f)
	}
	mustInvariants(t, l)
}
