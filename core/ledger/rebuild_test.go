package ledger_test

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/rdmatopo/rdmatopo/core/ledger"
	"github.com/rdmatopo/rdmatopo/core/topology"
	"github.com/rdmatopo/rdmatopo/internal/testing/builders"
)

func mustQty(s string) resource.Quantity { return resource.MustParse(s) }

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// twoNodeFabric: n1 and n2 in the provider's shape; n1's KCNR lists ns/a/u-a.
func twoNodeFabric() *topology.Fabric {
	nodes, cnrs := builders.TwoLeavesFourNodes()
	cnrs[0] = builders.MakeCNR("n1").Zone(0, 4, 64000).Zone(1, 4, 64000).
		NIC(nicA0, 0, "leafA").NIC(nicA1, 0, "leafA").NIC(nicB0, 1, "leafB").NIC(nicB1, 1, "leafB").
		UseNIC(nicA0, "ns/a/u-a").Obj()
	return topology.Build(topology.Config{}, nodes[:2], cnrs[:2])
}

// bound returns a pod of ns bound to node with NIC and NUMA annotations,
// requesting one RDMA unit per annotated NIC.
func bound(name, node, nics, numa string) *builders.PodWrapper {
	return builders.MakePod("ns", name).UID("u-"+name).Node(node).Created(t0).
		Req(builders.RDMAResource, strconv.Itoa(len(strings.Split(nics, ",")))).
		Annotation(ledger.AnnotationNICs, nics).Annotation(ledger.AnnotationNUMA, numa)
}

func TestRebuild(t *testing.T) {
	f := twoNodeFabric()
	cases := map[string]struct {
		pods     []*corev1.Pod
		want     []ledger.Reservation
		wantErrs []string
	}{
		"single zone with requests and job": {
			pods: []*corev1.Pod{
				bound("a", "n1", nicA0+","+strings.ToUpper(nicA1), "0").Group("job").
					Req(builders.GPUResource, "4").Req(corev1.ResourceCPU, "8").Obj(),
			},
			want: []ledger.Reservation{{
				UID: "u-a", Namespace: "ns", Name: "a", Job: "ns/job", Node: "n1", Confirmed: true,
				Zones: []ledger.ZoneUse{{NUMA: 0, GPU: 4, CPUMilli: 8000, NICs: []topology.NICID{nicA0, nicA1}}},
			}},
		},
		"spanning pod splits requests evenly": {
			pods: []*corev1.Pod{
				bound("b", "n2", nicB1+","+nicA0+","+nicB0, "1,0").
					Req(builders.GPUResource, "7").Req(corev1.ResourceCPU, "1001m").Obj(),
			},
			want: []ledger.Reservation{{
				UID: "u-b", Namespace: "ns", Name: "b", Node: "n2",
				Zones: []ledger.ZoneUse{
					{NUMA: 0, GPU: 4, CPUMilli: 501, NICs: []topology.NICID{nicA0}},
					{NUMA: 1, GPU: 3, CPUMilli: 500, NICs: []topology.NICID{nicB0, nicB1}},
				},
			}},
		},
		"pods that hold nothing are ignored": {
			pods: []*corev1.Pod{
				nil,
				builders.MakePod("ns", "pending").Annotation(ledger.AnnotationNICs, nicA0).Obj(),
				bound("done", "n1", nicA0, "0").Phase(corev1.PodSucceeded).Obj(),
				bound("failed", "n1", nicA0, "0").Phase(corev1.PodFailed).Obj(),
				bound("deleting", "n1", nicA0, "0").Terminating(t0).Obj(),
				builders.MakePod("ns", "plain").Node("n1").Obj(),
				// A pod that requests no RDMA: its NIC annotation is
				// forged (a Binding cannot remove keys) and never trusted.
				builders.MakePod("ns", "cpu-only").Node("n1").Annotation(ledger.AnnotationNICs, nicA0).Annotation(ledger.AnnotationNUMA, "0").Obj(),
				bound("empty", "n1", "", "0").Obj(),
			},
		},
		"first pod by creation time keeps a contested NIC": {
			pods: []*corev1.Pod{
				bound("late", "n1", nicA1, "0").Created(t0.Add(time.Minute)).Obj(),
				bound("early", "n1", nicA1, "0").Obj(),
				bound("tie-z", "n2", nicB0, "1").UID("z").Obj(),
				bound("tie-y", "n2", nicB0, "1").UID("y").Obj(),
			},
			want: []ledger.Reservation{
				{UID: "u-early", Namespace: "ns", Name: "early", Node: "n1",
					Zones: []ledger.ZoneUse{{NUMA: 0, NICs: []topology.NICID{nicA1}}}},
				{UID: "y", Namespace: "ns", Name: "tie-y", Node: "n2",
					Zones: []ledger.ZoneUse{{NUMA: 1, NICs: []topology.NICID{nicB0}}}},
			},
			wantErrs: []string{
				"pod ns/tie-z: annotation rdmatopo.io/nics: NIC already reserved: NIC 0000:d1:00.0 on node n2 is held by pod ns/tie-y (y)",
				"pod ns/late: annotation rdmatopo.io/nics: NIC already reserved: NIC 0000:3f:00.0 on node n1 is held by pod ns/early (u-early)",
			},
		},
		"a later pod naming a held NIC keeps its other NICs": {
			pods: []*corev1.Pod{
				bound("late", "n1", nicA1+","+nicB1, "0,1").Created(t0.Add(time.Minute)).Obj(),
				bound("early", "n1", nicA1, "0").Obj(),
			},
			want: []ledger.Reservation{
				{UID: "u-early", Namespace: "ns", Name: "early", Node: "n1",
					Zones: []ledger.ZoneUse{{NUMA: 0, NICs: []topology.NICID{nicA1}}}},
				{UID: "u-late", Namespace: "ns", Name: "late", Node: "n1",
					Zones: []ledger.ZoneUse{{NUMA: 0}, {NUMA: 1, NICs: []topology.NICID{nicB1}}}},
			},
			wantErrs: []string{
				"pod ns/late: annotation rdmatopo.io/nics: NIC already reserved: NIC 0000:3f:00.0 on node n1 is held by pod ns/early (u-early)",
			},
		},
		"duplicate UID": {
			pods: []*corev1.Pod{
				bound("one", "n1", nicA1, "0").UID("same").Obj(),
				bound("two", "n2", nicA1, "0").UID("same").Obj(),
			},
			want: []ledger.Reservation{{UID: "same", Namespace: "ns", Name: "one", Node: "n1",
				Zones: []ledger.ZoneUse{{NUMA: 0, NICs: []topology.NICID{nicA1}}}}},
			wantErrs: []string{"pod ns/two: annotation rdmatopo.io/nics: pod already has a reservation"},
		},
		"annotations that cannot be read keep the NICs that are on the node": {
			pods: []*corev1.Pod{
				bound("badnic", "n1", "eth0", "0").Obj(),
				bound("dupnic", "n1", nicA0+","+nicA0, "0").Obj(),
				bound("badnuma", "n1", nicA1, "zero").Obj(),
				bound("emptynuma", "n2", nicA0, "").Obj(),
				builders.MakePod("ns", "nonuma").UID("u-nonuma").Node("n2").Created(t0).Req(builders.RDMAResource, "1").Annotation(ledger.AnnotationNICs, nicB0).Obj(),
			},
			want: []ledger.Reservation{
				{UID: "u-badnic", Namespace: "ns", Name: "badnic", Node: "n1",
					Zones: []ledger.ZoneUse{{NUMA: 0, NICs: []topology.NICID{"eth0"}}}},
				{UID: "u-badnuma", Namespace: "ns", Name: "badnuma", Node: "n1",
					Zones: []ledger.ZoneUse{{NUMA: 0, NICs: []topology.NICID{nicA1}}}},
				{UID: "u-dupnic", Namespace: "ns", Name: "dupnic", Node: "n1",
					Zones: []ledger.ZoneUse{{NUMA: 0, NICs: []topology.NICID{nicA0}}}},
				{UID: "u-emptynuma", Namespace: "ns", Name: "emptynuma", Node: "n2",
					Zones: []ledger.ZoneUse{{NUMA: 0, NICs: []topology.NICID{nicA0}}}},
				{UID: "u-nonuma", Namespace: "ns", Name: "nonuma", Node: "n2",
					Zones: []ledger.ZoneUse{{NUMA: 1, NICs: []topology.NICID{nicB0}}}},
			},
			wantErrs: []string{
				"pod ns/badnic: annotation rdmatopo.io/nics: NIC eth0 is not on node n1 in the fabric; kept under NUMA 0",
				"pod ns/badnuma: annotation rdmatopo.io/numa: malformed annotation value",
				"pod ns/dupnic: annotation rdmatopo.io/nics: malformed annotation value: NIC 0000:1a:00.0 is listed twice",
				"pod ns/emptynuma: annotation rdmatopo.io/numa: malformed annotation value: empty",
				"pod ns/nonuma: annotation rdmatopo.io/numa: malformed annotation value: missing",
			},
		},
		"NIC unknown to the fabric stays under the annotated NUMA": {
			pods: []*corev1.Pod{
				bound("x", "n9", "0000:aa:00.0", "1").Obj(),
				bound("y", "n1", "0000:ab:00.0,"+nicA1, "1").Obj(),
			},
			want: []ledger.Reservation{
				{UID: "u-x", Namespace: "ns", Name: "x", Node: "n9",
					Zones: []ledger.ZoneUse{{NUMA: 1, NICs: []topology.NICID{"0000:aa:00.0"}}}},
				{UID: "u-y", Namespace: "ns", Name: "y", Node: "n1",
					Zones: []ledger.ZoneUse{
						{NUMA: 0, NICs: []topology.NICID{nicA1}},
						{NUMA: 1, NICs: []topology.NICID{"0000:ab:00.0"}},
					}},
			},
			wantErrs: []string{
				"pod ns/x: annotation rdmatopo.io/nics: NIC 0000:aa:00.0 is not on node n9 in the fabric; kept under NUMA 1",
				"pod ns/y: annotation rdmatopo.io/nics: NIC 0000:ab:00.0 is not on node n1 in the fabric; kept under NUMA 1",
				`pod ns/y: annotation rdmatopo.io/numa: NIC 0000:3f:00.0 is on NUMA 0 of node n1, which "1" does not list`,
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			l, errs := ledger.Rebuild(topology.Config{}, tc.pods, f)
			mustInvariants(t, l)
			if diff := cmp.Diff(tc.want, l.All(), cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("reservations (-want +got):\n%s", diff)
			}
			var got []string
			for _, err := range errs {
				got = append(got, err.Error())
			}
			if len(got) != len(tc.wantErrs) {
				t.Fatalf("errors = %q, want %d errors", got, len(tc.wantErrs))
			}
			for i, want := range tc.wantErrs {
				if !strings.HasPrefix(got[i], want) {
					t.Errorf("error %d = %q, want prefix %q", i, got[i], want)
				}
			}
		})
	}
}

func TestRebuildNilFabric(t *testing.T) {
	l, errs := ledger.Rebuild(topology.Config{}, []*corev1.Pod{bound("a", "n1", nicA0, "0").Obj()}, nil)
	if l.Len() != 1 || len(errs) != 1 {
		t.Fatalf("Len = %d, errors = %v; want 1 reservation and 1 error", l.Len(), errs)
	}
}

// TestRebuildRoundTrip reserves NICs on a generated cluster, annotates pods
// from the reservations as the scheduler does at bind, and rebuilds.
func TestRebuildRoundTrip(t *testing.T) {
	nodes, cnrs := builders.ClusterShape{Nodes: 32, ZonesPerLeaf: 4, LeavesPerS1: 4, SpanningEvery: 2}.Generate()
	// Node 0's KCNR already lists its first pod.
	cnrs[0] = builders.ProviderCNR(nodes[0].Name, builders.LeafID(0), builders.LeafID(1)).
		UseNIC(nicA0, "ns/p-0-0/uid-0-0").Obj()
	f := topology.Build(topology.Config{}, nodes, cnrs)

	want := ledger.New()
	for i, n := range nodes {
		uid := func(k int) string { return "uid-" + strconv.Itoa(i) + "-" + strconv.Itoa(k) }
		name := func(k int) string { return "p-" + strconv.Itoa(i) + "-" + strconv.Itoa(k) }
		var rs []ledger.Reservation
		if i%2 == 0 {
			// Two single-zone pods.
			rs = []ledger.Reservation{
				{UID: uid(0), Namespace: "ns", Name: name(0), Job: "ns/j0", Node: n.Name,
					Zones: []ledger.ZoneUse{{NUMA: 0, GPU: 4, CPUMilli: 32000, NICs: []topology.NICID{nicA0, nicA1}}}},
				{UID: uid(1), Namespace: "ns", Name: name(1), Job: "ns/j1", Node: n.Name,
					Zones: []ledger.ZoneUse{{NUMA: 1, GPU: 1, CPUMilli: 500, NICs: []topology.NICID{nicB1}}}},
			}
		} else {
			// One whole-node pod spanning both zones.
			rs = []ledger.Reservation{{UID: uid(0), Namespace: "ns", Name: name(0), Node: n.Name,
				Zones: []ledger.ZoneUse{
					{NUMA: 0, GPU: 4, CPUMilli: 60000, NICs: []topology.NICID{nicA0, nicA1}},
					{NUMA: 1, GPU: 4, CPUMilli: 60000, NICs: []topology.NICID{nicB0, nicB1}},
				}}}
		}
		for _, r := range rs {
			if err := want.Reserve(r); err != nil {
				t.Fatal(err)
			}
		}
	}
	if n := want.Confirm(f); n != 1 {
		t.Fatalf("Confirm = %d, want 1", n)
	}

	var pods []*corev1.Pod
	for _, r := range want.All() {
		var gpu, cpu int64
		for _, z := range r.Zones {
			gpu += z.GPU
			cpu += z.CPUMilli
		}
		p := builders.MakePod(r.Namespace, r.Name).UID(r.UID).Node(r.Node).Created(t0).
			Req(builders.GPUResource, strconv.Itoa(int(gpu))).Req(corev1.ResourceCPU, strconv.Itoa(int(cpu))+"m").
			Req(builders.RDMAResource, strconv.Itoa(len(r.NICs())))
		if r.Job != "" {
			p.Group(strings.TrimPrefix(r.Job, r.Namespace+"/"))
		}
		for k, v := range r.Annotations(f) {
			p.Annotation(k, v)
		}
		pods = append(pods, p.Obj())
	}
	got, errs := ledger.Rebuild(topology.Config{}, pods, f)
	if len(errs) != 0 {
		t.Fatalf("Rebuild errors: %v", errs)
	}
	mustInvariants(t, got)
	if diff := cmp.Diff(want.All(), got.All()); diff != "" {
		t.Errorf("rebuilt ledger (-want +got):\n%s", diff)
	}
	// The S0 annotation names the distinct leaves of the pod's NICs.
	if s0 := pods[0].Annotations[ledger.AnnotationS0]; s0 != builders.LeafID(0) {
		t.Errorf("s0 annotation = %q", s0)
	}
}

func TestReservationAnnotationsUnknownNIC(t *testing.T) {
	r := ledger.Reservation{UID: "u", Namespace: "ns", Name: "p", Node: "n1",
		Zones: []ledger.ZoneUse{{NUMA: 0, NICs: []topology.NICID{"rdma-0"}}, {NUMA: 2}}}
	want := map[string]string{
		ledger.AnnotationNICs: "rdma-0",
		ledger.AnnotationNUMA: "0,2",
		ledger.AnnotationS0:   string(topology.UnknownS0("n1", "rdma-0")),
	}
	if diff := cmp.Diff(want, r.Annotations(nil)); diff != "" {
		t.Errorf("Annotations (-want +got):\n%s", diff)
	}
}

func TestSplitEvenly(t *testing.T) {
	cases := map[string]struct {
		total int64
		parts int
		want  []int64
	}{
		"none":      {total: 5, parts: 0},
		"one":       {total: 5, parts: 1, want: []int64{5}},
		"even":      {total: 8, parts: 2, want: []int64{4, 4}},
		"remainder": {total: 7, parts: 3, want: []int64{3, 2, 2}},
		"zero":      {total: 0, parts: 2, want: []int64{0, 0}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, ledger.SplitEvenly(tc.total, tc.parts)); diff != "" {
				t.Errorf("SplitEvenly (-want +got):\n%s", diff)
			}
		})
	}
}
