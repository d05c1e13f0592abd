package ledger_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/kubewharf/katalyst-api/pkg/apis/node/v1alpha1"
	corev1 "k8s.io/api/core/v1"

	"github.com/rdmatopo/rdmatopo/core/ledger"
	"github.com/rdmatopo/rdmatopo/core/topology"
	"github.com/rdmatopo/rdmatopo/internal/testing/builders"
)

// namedNICFabric: n1 in the provider's shape (PCI-named NICs); n3 whose KCNR
// names its NICs mlx5_0, mlx5_1 (NUMA 0) and 1a:00.0 (NUMA 1); n4 with four
// RDMA NICs and no KCNR (synthetic rdma-0..rdma-3).
func namedNICFabric() *topology.Fabric {
	nodes, cnrs := builders.TwoLeavesFourNodes()
	nodes, cnrs = nodes[:1], cnrs[:1]
	nodes = append(nodes,
		builders.MakeNode("n3").Shared().GPU(8).RDMA(3).CPU("128").Obj(),
		builders.ProviderNode("n4").Obj())
	cnrs = append(cnrs, builders.MakeCNR("n3").Policy(v1alpha1.TopologyPolicySingleNUMANodeContainerLevel).
		Zone(0, 4, 64000).Zone(1, 4, 64000).
		NIC("mlx5_0", 0, "leafC").NIC("mlx5_1", 0, "leafC").NIC("1a:00.0", 1, "leafD").Obj())
	return topology.Build(topology.Config{}, nodes, cnrs)
}

// onN3 is a reservation of ns/name on n3 with the given zones.
func onN3(name string, zones ...ledger.ZoneUse) ledger.Reservation {
	return ledger.Reservation{UID: "u-" + name, Namespace: "ns", Name: name, Node: "n3", Zones: zones}
}

// nicsZone is a zone use with NICs and nothing else.
func nicsZone(numa int, nics ...topology.NICID) ledger.ZoneUse {
	return ledger.ZoneUse{NUMA: numa, NICs: nics}
}

// TestRebuildNeverDropsNICs covers each way a bound pod's annotations can
// fail to read: the pod keeps what it names that its node has, and the
// problem is reported naming the pod and the annotation.
func TestRebuildNeverDropsNICs(t *testing.T) {
	f := namedNICFabric()
	// A reservation as the scheduler makes it on n3, annotated as at bind.
	named := onN3("named", nicsZone(0, "mlx5_0"), nicsZone(1, "1a:00.0"))
	annotated := bound("named", "n3", "x,y", "0").Obj()
	for k, v := range named.Annotations(f) {
		annotated.Annotations[k] = v
	}
	cases := map[string]struct {
		pods     []*corev1.Pod
		want     []ledger.Reservation
		wantErrs []string
	}{
		"mlx5_0 and 1a:00.0 round-trip through the annotations": {
			pods: []*corev1.Pod{annotated},
			want: []ledger.Reservation{named},
		},
		"PCI addresses in upper case are the fabric's lower-case names": {
			pods: []*corev1.Pod{bound("upper", "n3", "mlx5_1,1A:00.0", "0,1").Obj()},
			want: []ledger.Reservation{onN3("upper", nicsZone(0, "mlx5_1"), nicsZone(1, "1a:00.0"))},
		},
		"missing numa: zones come from the fabric": {
			pods: []*corev1.Pod{builders.MakePod("ns", "nonuma").UID("u-nonuma").Node("n3").Created(t0).
				Req(builders.RDMAResource, "2").Annotation(ledger.AnnotationNICs, "mlx5_0,1a:00.0").Obj()},
			want:     []ledger.Reservation{onN3("nonuma", nicsZone(0, "mlx5_0"), nicsZone(1, "1a:00.0"))},
			wantErrs: []string{"pod ns/nonuma: annotation rdmatopo.io/numa: malformed annotation value: missing"},
		},
		"non-numeric numa": {
			pods:     []*corev1.Pod{bound("word", "n3", "1a:00.0", "one").Obj()},
			want:     []ledger.Reservation{onN3("word", nicsZone(1, "1a:00.0"))},
			wantErrs: []string{`pod ns/word: annotation rdmatopo.io/numa: malformed annotation value: "one" is not a NUMA id`},
		},
		"NIC named twice is held once": {
			pods:     []*corev1.Pod{bound("twice", "n3", "mlx5_0,mlx5_0", "0").Obj()},
			want:     []ledger.Reservation{onN3("twice", nicsZone(0, "mlx5_0"))},
			wantErrs: []string{"pod ns/twice: annotation rdmatopo.io/nics: malformed annotation value: NIC mlx5_0 is listed twice"},
		},
		"stray spaces around names": {
			pods:     []*corev1.Pod{bound("spaced", "n3", " mlx5_0 , 1a:00.0", "0,1").Obj()},
			want:     []ledger.Reservation{onN3("spaced", nicsZone(0, "mlx5_0"), nicsZone(1, "1a:00.0"))},
			wantErrs: []string{`pod ns/spaced: annotation rdmatopo.io/nics: malformed annotation value: NIC name " mlx5_0 " holds whitespace`},
		},
		"unknown NICs mixed with known ones and no readable numa": {
			pods: []*corev1.Pod{bound("mixed", "n3", "mlx5_1,mlx5_9", "").Obj()},
			want: []ledger.Reservation{onN3("mixed", nicsZone(0, "mlx5_1"))},
			wantErrs: []string{
				"pod ns/mixed: annotation rdmatopo.io/numa: malformed annotation value: empty",
				"pod ns/mixed: annotation rdmatopo.io/nics: NIC mlx5_9 is not on node n3 in the fabric and rdmatopo.io/numa gives no zone to hold it under; not held",
			},
		},
		"unreadable s0": {
			pods:     []*corev1.Pod{bound("s0", "n3", "mlx5_0", "0").Annotation(ledger.AnnotationS0, "leafC,,leafC").Obj()},
			want:     []ledger.Reservation{onN3("s0", nicsZone(0, "mlx5_0"))},
			wantErrs: []string{"pod ns/s0: annotation rdmatopo.io/s0: malformed annotation value: empty item"},
		},
		"two pods naming a device-named NIC: the earlier keeps it": {
			pods: []*corev1.Pod{
				bound("second", "n3", "mlx5_0,mlx5_1", "0").Created(t0.Add(time.Second)).Obj(),
				bound("first", "n3", "mlx5_0", "bad").Obj(),
			},
			want: []ledger.Reservation{
				onN3("first", nicsZone(0, "mlx5_0")),
				onN3("second", nicsZone(0, "mlx5_1")),
			},
			wantErrs: []string{
				"pod ns/first: annotation rdmatopo.io/numa: malformed annotation value",
				"pod ns/second: annotation rdmatopo.io/nics: NIC already reserved: NIC mlx5_0 on node n3 is held by pod ns/first (u-first)",
			},
		},
		"synthetic NICs of a node without topology are held": {
			pods: []*corev1.Pod{bound("synth", "n4", "rdma-1,rdma-3", "0").Obj()},
			want: []ledger.Reservation{{UID: "u-synth", Namespace: "ns", Name: "synth", Node: "n4",
				Zones: []ledger.ZoneUse{nicsZone(0, "rdma-1", "rdma-3")}}},
		},
		"PCI names on a node whose KCNR lost its status take synthetic NICs after the pods naming their own": {
			pods: []*corev1.Pod{
				bound("old", "n4", nicA0+","+nicA1, "0").Obj(),
				bound("new", "n4", "rdma-0", "0").Created(t0.Add(time.Minute)).Obj(),
			},
			want: []ledger.Reservation{
				{UID: "u-new", Namespace: "ns", Name: "new", Node: "n4", Zones: []ledger.ZoneUse{nicsZone(0, "rdma-0")}},
				{UID: "u-old", Namespace: "ns", Name: "old", Node: "n4", Zones: []ledger.ZoneUse{nicsZone(0, "rdma-1", "rdma-2")}},
			},
			wantErrs: []string{
				"pod ns/old: annotation rdmatopo.io/nics: NIC 0000:1a:00.0 is not on node n4, whose NICs are synthetic (no usable topology); it holds rdma-1 in its place",
				"pod ns/old: annotation rdmatopo.io/nics: NIC 0000:3f:00.0 is not on node n4, whose NICs are synthetic (no usable topology); it holds rdma-2 in its place",
			},
		},
		"no synthetic NIC left": {
			pods: []*corev1.Pod{
				bound("full", "n4", "rdma-0,rdma-1,rdma-2", "0").Obj(),
				bound("over", "n4", nicA0+","+nicA1, "0").Obj(),
			},
			want: []ledger.Reservation{
				{UID: "u-full", Namespace: "ns", Name: "full", Node: "n4", Zones: []ledger.ZoneUse{nicsZone(0, "rdma-0", "rdma-1", "rdma-2")}},
				{UID: "u-over", Namespace: "ns", Name: "over", Node: "n4", Zones: []ledger.ZoneUse{nicsZone(0, "rdma-3")}},
			},
			wantErrs: []string{
				"pod ns/over: annotation rdmatopo.io/nics: NIC 0000:1a:00.0 is not on node n4, whose NICs are synthetic (no usable topology); it holds rdma-3 in its place",
				"pod ns/over: annotation rdmatopo.io/nics: NIC already reserved: NIC 0000:3f:00.0 is not on node n4",
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
				var pe *ledger.PodError
				if !errors.As(err, &pe) || pe.Namespace != "ns" || pe.Name == "" || !strings.HasPrefix(pe.Key, "rdmatopo.io/") {
					t.Errorf("error %q is not a *PodError naming the pod and the annotation", err)
				}
			}
			if len(got) != len(tc.wantErrs) {
				t.Fatalf("errors = %q, want %d errors", got, len(tc.wantErrs))
			}
			for i, want := range tc.wantErrs {
				if !strings.HasPrefix(got[i], want) {
					t.Errorf("error %d = %q, want prefix %q", i, got[i], want)
				}
			}
			// Whatever a rebuilt pod holds cannot be reserved again.
			for _, r := range l.All() {
				for _, nic := range r.NICs() {
					again := ledger.Reservation{UID: "other", Namespace: "ns", Name: "other", Node: r.Node,
						Zones: []ledger.ZoneUse{nicsZone(0, nic)}}
					if err := l.Reserve(again); !errors.Is(err, ledger.ErrNICTaken) {
						t.Errorf("NIC %s of %s reserved again: %v", nic, r.Node, err)
					}
				}
			}
		})
	}
}

func TestCheckAnnotations(t *testing.T) {
	cases := map[string]struct {
		ann  map[string]string
		want []string // keys at fault, in order
	}{
		"nothing":           {ann: nil},
		"no NICs":           {ann: map[string]string{ledger.AnnotationNUMA: "x"}},
		"readable":          {ann: map[string]string{ledger.AnnotationNICs: "mlx5_0,1a:00.0", ledger.AnnotationNUMA: "0,1", ledger.AnnotationS0: "a,b"}},
		"readable, no s0":   {ann: map[string]string{ledger.AnnotationNICs: "mlx5_0", ledger.AnnotationNUMA: "0"}},
		"missing numa":      {ann: map[string]string{ledger.AnnotationNICs: "mlx5_0"}, want: []string{ledger.AnnotationNUMA}},
		"non-numeric numa":  {ann: map[string]string{ledger.AnnotationNICs: "mlx5_0", ledger.AnnotationNUMA: "zero"}, want: []string{ledger.AnnotationNUMA}},
		"NIC twice":         {ann: map[string]string{ledger.AnnotationNICs: "1a:00.0,1A:00.0", ledger.AnnotationNUMA: "0"}, want: []string{ledger.AnnotationNICs}},
		"everything broken": {ann: map[string]string{ledger.AnnotationNICs: "a, b", ledger.AnnotationNUMA: "", ledger.AnnotationS0: ","}, want: []string{ledger.AnnotationNICs, ledger.AnnotationNUMA, ledger.AnnotationS0}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var got []string
			for _, e := range ledger.CheckAnnotations(tc.ann) {
				got = append(got, e.Key)
				if !errors.Is(e, ledger.ErrBadAnnotation) {
					t.Errorf("%v does not wrap ErrBadAnnotation", e)
				}
			}
			if diff := cmp.Diff(tc.want, got, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("keys at fault (-want +got):\n%s", diff)
			}
		})
	}
}
