package preemption

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/kubewharf/katalyst-api/pkg/apis/node/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rdmatopo/rdmatopo/core/ledger"
	"github.com/rdmatopo/rdmatopo/core/placement"
	"github.com/rdmatopo/rdmatopo/core/topology"
	"github.com/rdmatopo/rdmatopo/internal/testing/builders"
)

// TestBook: records are kept per job, replaced by a later Put, listed and
// visited in job order, and dropped by Remove and Retain.
func TestBook(t *testing.T) {
	var b Book[string]
	if b.Has("a") || len(b.Values()) != 0 {
		t.Fatalf("zero book is not empty")
	}
	for _, job := range []string{"c", "a", "b"} {
		b.Put(job, job+"1")
	}
	b.Put("a", "a2")
	if diff := cmp.Diff([]string{"a2", "b1", "c1"}, b.Values()); diff != "" {
		t.Errorf("values (-want,+got):\n%s", diff)
	}
	var visited []string
	b.Retain(func(job, v string) bool {
		visited = append(visited, job)
		return job != "b"
	})
	if diff := cmp.Diff([]string{"a", "b", "c"}, visited); diff != "" {
		t.Errorf("retain visits (-want,+got):\n%s", diff)
	}
	b.Remove("c")
	b.Remove("missing")
	if diff := cmp.Diff([]string{"a2"}, b.Values()); diff != "" {
		t.Errorf("after Retain and Remove (-want,+got):\n%s", diff)
	}
}

func TestOlder(t *testing.T) {
	t0 := metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	t1 := metav1.NewTime(t0.Add(time.Minute))
	cases := map[string]struct {
		ca   metav1.Time
		a    string
		cb   metav1.Time
		b    string
		want bool
	}{
		"created earlier":        {ca: t0, a: "z", cb: t1, b: "a", want: true},
		"created later":          {ca: t1, a: "a", cb: t0, b: "z"},
		"same time, smaller UID": {ca: t0, a: "a", cb: t0, b: "b", want: true},
		"same time, larger UID":  {ca: t0, a: "b", cb: t0, b: "a"},
		"same job is not older":  {ca: t0, a: "a", cb: t0, b: "a"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := Older(tc.ca, tc.a, tc.cb, tc.b); got != tc.want {
				t.Errorf("Older = %v, want %v", got, tc.want)
			}
		})
	}
}

// TestKeepOff: a leaf or S1 room excludes its leaves, a node room its
// node; ClaimedNodes names each room's nodes by the first claim keeping
// them; ClaimedFailure says how many rooms and for whom.
func TestKeepOff(t *testing.T) {
	leafRoom := &Claim{Name: "ns/c1", Room: "s0 A", S0s: map[topology.S0ID]bool{"A": true}, Nodes: map[string]bool{"n1": true, "n2": true}}
	nodeRoom := &Claim{Name: "ns/c2", Room: "node n2", Nodes: map[string]bool{"n2": true}}
	cases := map[string]struct {
		claims    []*Claim
		wantBy    string
		wantN     int
		wantS0s   map[topology.S0ID]bool
		wantNodes map[string]bool
		claimed   map[string]string
		message   string
	}{
		"no claim": {message: "no S0 holds 2 pods"},
		"a leaf room": {claims: []*Claim{leafRoom}, wantBy: "ns/c1", wantN: 1, wantS0s: map[topology.S0ID]bool{"A": true},
			claimed: map[string]string{"n1": "ns/c1", "n2": "ns/c1"},
			message: "no S0 holds 2 pods (a room kept for ns/c1, an older waiting gang of the same priority)"},
		"a node room": {claims: []*Claim{nodeRoom}, wantBy: "ns/c2", wantN: 1, wantNodes: map[string]bool{"n2": true},
			claimed: map[string]string{"n2": "ns/c2"},
			message: "no S0 holds 2 pods (a room kept for ns/c2, an older waiting gang of the same priority)"},
		"both": {claims: []*Claim{leafRoom, nodeRoom}, wantBy: "ns/c1", wantN: 2, wantS0s: map[topology.S0ID]bool{"A": true},
			wantNodes: map[string]bool{"n2": true}, claimed: map[string]string{"n1": "ns/c1", "n2": "ns/c1"},
			message: "no S0 holds 2 pods (2 rooms kept for ns/c1, an older waiting gang of the same priority)"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var g placement.Gang
			by, n := KeepOff(&g, tc.claims)
			if by != tc.wantBy || n != tc.wantN {
				t.Errorf("KeepOff = %q, %d; want %q, %d", by, n, tc.wantBy, tc.wantN)
			}
			if diff := cmp.Diff(tc.wantS0s, g.ExcludeS0s); diff != "" {
				t.Errorf("excluded S0s (-want,+got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantNodes, g.Exclude); diff != "" {
				t.Errorf("excluded nodes (-want,+got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.claimed, ClaimedNodes(tc.claims)); diff != "" {
				t.Errorf("claimed nodes (-want,+got):\n%s", diff)
			}
			f := ClaimedFailure(&placement.Failure{Code: placement.ReasonNoCapacity, Message: "no S0 holds 2 pods"}, by, n)
			if f.Message != tc.message {
				t.Errorf("failure %q, want %q", f.Message, tc.message)
			}
		})
	}
	if ClaimedFailure(nil, "ns/c1", 1) != nil {
		t.Errorf("ClaimedFailure of no failure is not nil")
	}
}

func TestCostLess(t *testing.T) {
	base := Cost{Pods: 2, Prio: 10, Start: 100, Names: "ns/a,ns/b"}
	cases := map[string]struct {
		other Cost
		want  bool // base.Less(other)
	}{
		"fewer pods win":          {other: Cost{Pods: 3}, want: true},
		"more pods lose":          {other: Cost{Pods: 1, Prio: 100}},
		"lower priority sum wins": {other: Cost{Pods: 2, Prio: 11}, want: true},
		"younger pods win":        {other: Cost{Pods: 2, Prio: 10, Start: 99}, want: true},
		"older pods lose":         {other: Cost{Pods: 2, Prio: 10, Start: 101}},
		"names break ties":        {other: Cost{Pods: 2, Prio: 10, Start: 100, Names: "ns/c"}, want: true},
		"equal is not less":       {other: base},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := base.Less(tc.other); got != tc.want {
				t.Errorf("Less = %v, want %v", got, tc.want)
			}
		})
	}
}

// viewFabric is one node n1 with two NICs on leaf A (zone 0) and two on
// leaf B (zone 1).
func viewFabric(t *testing.T) *topology.Fabric {
	t.Helper()
	node := builders.ProviderNode("n1").Obj()
	cnr := builders.ProviderCNR("n1", "A", "B").Obj()
	return topology.Build(topology.Config{}.WithDefaults(), []*corev1.Node{node}, []*v1alpha1.CustomNodeResource{cnr})
}

// TestView: an applied hold takes its NICs in the planner state under the
// hold's holder, is listed and counted on its node for other jobs, and
// gives the NICs back when taken; pipelining is allowed per job.
func TestView(t *testing.T) {
	f := viewFabric(t)
	st := placement.NewState(f, ledger.New())
	nic := topology.NICID(builders.NUMANICs[0][0])
	a := placement.Assignment{PodUID: "u-0", Node: "n1", Zones: []ledger.ZoneUse{{NUMA: 0, GPU: 4, CPUMilli: 4000,
		NICs: []topology.NICID{nic, topology.NICID(builders.NUMANICs[0][1])}}}}
	rdma := HoldTask{UID: "u-0", Name: "ns/g-0", Node: "n1", RDMA: true, Assignment: a, Resreq: Resources{MilliCPU: 4000}}
	cpu := HoldTask{UID: "u-1", Name: "ns/g-1", Node: "n1", Resreq: Resources{MilliCPU: 1000}}
	v := NewView(st)
	v.Apply(&Hold{Job: "g", Name: "ns/g", Tasks: []HoldTask{rdma, cpu}})
	v.Apply(&Hold{Job: "h", Name: "ns/h", Tasks: []HoldTask{{UID: "u-2", Name: "ns/h-0", Node: "n2"}}})

	if holder, ok := st.HolderOf("n1", nic); !ok || holder != "hold/u-0" {
		t.Errorf("held NIC holder = %q, %v; want hold/u-0", holder, ok)
	}
	if got := len(v.Applied()); got != 2 || v.Applied()[0].Name != "ns/g" {
		t.Errorf("applied holds: %d, first %q", got, v.Applied()[0].Name)
	}
	kept, first := v.KeptOn("other", "n1")
	if len(kept) != 2 || first != "ns/g" {
		t.Errorf("KeptOn(other, n1) = %d tasks by %q; want 2 by ns/g", len(kept), first)
	}
	if kept, first := v.KeptOn("g", "n1"); len(kept) != 0 || first != "" {
		t.Errorf("the gang's own hold is kept from it: %v %q", kept, first)
	}

	if v.PipelineAllowed("g") {
		t.Errorf("pipeline allowed before AllowPipeline")
	}
	v.AllowPipeline("g", true)
	if !v.PipelineAllowed("g") {
		t.Errorf("pipeline not allowed after AllowPipeline")
	}
	v.AllowPipeline("g", false)
	if v.PipelineAllowed("g") {
		t.Errorf("pipeline allowed after AllowPipeline(false)")
	}

	h := v.Take("g")
	if h == nil || h.Name != "ns/g" {
		t.Fatalf("Take(g) = %v", h)
	}
	if _, ok := st.HolderOf("n1", nic); ok {
		t.Errorf("NIC still held after Take")
	}
	if got, ok := v.Taken("g"); !ok || got != h {
		t.Errorf("Taken(g) = %v, %v", got, ok)
	}
	if v.Take("g") != nil {
		t.Errorf("a hold was taken twice")
	}
	if kept, _ := v.KeptOn("other", "n1"); len(kept) != 0 {
		t.Errorf("a taken hold still keeps %d tasks", len(kept))
	}
}

// TestReserved: each reservation comes with the leaves of its NICs.
func TestReserved(t *testing.T) {
	f := viewFabric(t)
	r := ledger.Reservation{UID: "u", Node: "n1", Zones: []ledger.ZoneUse{{NUMA: 1, NICs: []topology.NICID{topology.NICID(builders.NUMANICs[1][0])}}}}
	got := Reserved(f, []ledger.Reservation{r})
	if diff := cmp.Diff([]ReservedPod{{Res: r, Leaves: []topology.S0ID{"B"}}}, got); diff != "" {
		t.Errorf("reserved (-want,+got):\n%s", diff)
	}
}

// TestAccess: a claim is recorded and dropped through the access, holds
// are seen by job, and the reservations come from the ledger with the
// leaves of their NICs in the access's fabric.
func TestAccess(t *testing.T) {
	f := viewFabric(t)
	l := ledger.New()
	r := ledger.Reservation{UID: "u", Node: "n1", Zones: []ledger.ZoneUse{{NUMA: 1, NICs: []topology.NICID{topology.NICID(builders.NUMANICs[1][0])}}}}
	if err := l.Reserve(r); err != nil {
		t.Fatalf("reserve: %v", err)
	}
	store := &Store{}
	store.Holds.Put("held", &Hold{Job: "held"})
	if kept, first := NewAccess(f, l, store, nil).KeptOn("other", "n1"); kept != nil || first != "" {
		t.Errorf("KeptOn without a view = %v, %q; want nothing", kept, first)
	}
	v := NewView(placement.NewState(f, ledger.New()))
	v.Apply(&Hold{Job: "held", Name: "ns/held", Tasks: []HoldTask{{UID: "h-0", Name: "ns/held-0", Node: "n1"}}})
	a := NewAccess(f, l, store, v)
	if a.Fabric() != f {
		t.Errorf("Fabric is not the fabric given")
	}
	if kept, first := a.KeptOn("other", "n1"); len(kept) != 1 || kept[0].UID != "h-0" || first != "ns/held" {
		t.Errorf("KeptOn(other, n1) = %v, %q; want h-0 of ns/held", kept, first)
	}
	got := a.Reserved()
	if len(got) != 1 || got[0].Res.UID != "u" || !cmp.Equal(got[0].Leaves, []topology.S0ID{"B"}) {
		t.Errorf("Reserved = %+v, want u on leaf B", got)
	}
	a.Claim(&Claim{Job: "c1", Name: "ns/c1"})
	a.Claim(&Claim{Job: "c2", Name: "ns/c2"})
	a.Claim(&Claim{Job: "c2", Name: "ns/c2", Room: "again"})
	if got := a.Claims(); len(got) != 2 || got[0].Name != "ns/c1" || got[1].Room != "again" {
		t.Errorf("Claims = %+v, want ns/c1 then ns/c2's second claim", got)
	}
	a.RetainClaims(func(c *Claim) bool { return c.Job == "c2" })
	claims := store.Claims.Values()
	if len(claims) != 1 || claims[0].Job != "c2" || claims[0].Room != "again" {
		t.Errorf("claims after RetainClaims = %+v, want c2's second claim only", claims)
	}
	for job, want := range map[string]bool{"held": true, "c1": false, "": false} {
		if got := a.HasHold(job); got != want {
			t.Errorf("HasHold(%q) = %v, want %v", job, got, want)
		}
	}
}
