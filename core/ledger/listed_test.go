package ledger_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/kubewharf/katalyst-api/pkg/apis/node/v1alpha1"
	corev1 "k8s.io/api/core/v1"

	"github.com/rdmatopo/rdmatopo/core/ledger"
	"github.com/rdmatopo/rdmatopo/core/topology"
	"github.com/rdmatopo/rdmatopo/internal/testing/builders"
)

// TestListed: a bound pod without annotations gets the reservation its
// KCNR lists, its GPUs and CPUs split over the listed zones; a pod the KCNR
// does not list on a NIC gets none.
func TestListed(t *testing.T) {
	pod := func(name string) *corev1.Pod {
		return builders.MakePod("ns", name).Node("n1").Req(builders.GPUResource, "8").
			Req(builders.RDMAResource, "2").Req("cpu", "3").Obj()
	}
	consumer := func(name string) string { return builders.Consumer("ns", name, "uid-ns-"+name) }
	cnr := builders.MakeCNR("n1").Policy(v1alpha1.TopologyPolicyNone).Zone(0, 4, 64000).Zone(1, 4, 64000).
		NIC(builders.NUMANICs[0][0], 0, "A").NIC(builders.NUMANICs[0][1], 0, "A").
		NIC(builders.NUMANICs[1][0], 1, "B").NIC(builders.NUMANICs[1][1], 1, "B").
		UseNIC(builders.NUMANICs[0][1], consumer("span")).UseNIC(builders.NUMANICs[1][0], consumer("span")).
		Alloc(0, consumer("zoneonly"), corev1.ResourceList{}).Obj()
	node := builders.ProviderNode("n1").Obj()
	f := topology.Build(topology.Config{}.WithDefaults(), []*corev1.Node{node}, []*v1alpha1.CustomNodeResource{cnr})
	cases := map[string]struct {
		pod    *corev1.Pod
		want   ledger.Reservation
		wantOK bool
	}{
		"listed on a NIC of each zone": {
			pod: pod("span"),
			want: ledger.Reservation{UID: "uid-ns-span", Namespace: "ns", Name: "span", Node: "n1", Confirmed: true,
				Zones: []ledger.ZoneUse{
					{NUMA: 0, GPU: 4, CPUMilli: 1500, NICs: []topology.NICID{topology.NICID(builders.NUMANICs[0][1])}},
					{NUMA: 1, GPU: 4, CPUMilli: 1500, NICs: []topology.NICID{topology.NICID(builders.NUMANICs[1][0])}},
				}},
			wantOK: true,
		},
		"listed on a zone only":      {pod: pod("zoneonly")},
		"not listed":                 {pod: pod("other")},
		"on a node the fabric lacks": {pod: builders.MakePod("ns", "span").Node("n9").Obj()},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, ok := ledger.Listed(topology.Config{}, tc.pod, f)
			if ok != tc.wantOK {
				t.Fatalf("ok = %v, want %v", ok, tc.wantOK)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("reservation (-want,+got):\n%s", diff)
			}
		})
	}
}
