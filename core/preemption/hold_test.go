package preemption

import (
	"testing"

	"github.com/kubewharf/katalyst-api/pkg/apis/node/v1alpha1"
	corev1 "k8s.io/api/core/v1"

	"github.com/rdmatopo/rdmatopo/core/topology"
	"github.com/rdmatopo/rdmatopo/internal/testing/builders"
)

// TestListedOther: a held NIC the node's KCNR lists for a consumer other
// than the hold's victims and held pods breaks the hold's plan; listings of
// the victims (the KCNR lags their eviction) and of the held pods do not.
func TestListedOther(t *testing.T) {
	nic := builders.NUMANICs[0][0]
	hold := &Hold{Name: "ns/big", Victims: []string{"ns/victim-0"},
		Tasks: []HoldTask{{Name: "ns/big-0", Node: "n1", RDMA: true}}}
	cases := map[string]struct {
		consumer string // "" lists nobody on the NIC
		want     string
	}{
		"free NIC":                      {},
		"listed for a victim":           {consumer: builders.Consumer("ns", "victim-0", "u-v0")},
		"listed for a held pod":         {consumer: builders.Consumer("ns", "big-0", "u-b0")},
		"listed for a pod gone since":   {consumer: builders.Consumer("ns", "done-3", "u-d3"), want: builders.Consumer("ns", "done-3", "u-d3")},
		"listed for a victim's sibling": {consumer: builders.Consumer("ns", "victim-00", "u-v00"), want: builders.Consumer("ns", "victim-00", "u-v00")},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			w := builders.MakeCNR("n1").Policy(v1alpha1.TopologyPolicySingleNUMANodeContainerLevel).
				Zone(0, 4, 64000).Zone(1, 4, 64000).
				NIC(nic, 0, "A").NIC(builders.NUMANICs[0][1], 0, "A").
				NIC(builders.NUMANICs[1][0], 1, "B").NIC(builders.NUMANICs[1][1], 1, "B")
			if tc.consumer != "" {
				w.UseNIC(nic, tc.consumer)
			}
			node := builders.ProviderNode("n1").Obj()
			f := topology.Build(topology.Config{}.WithDefaults(), []*corev1.Node{node}, []*v1alpha1.CustomNodeResource{w.Obj()})
			if got := hold.ListedOther(f, "n1", topology.NICID(nic)); got != tc.want {
				t.Errorf("ListedOther = %q, want %q", got, tc.want)
			}
			if got := hold.ListedOther(f, "n9", topology.NICID(nic)); got != "" {
				t.Errorf("ListedOther on an unknown node = %q, want none", got)
			}
		})
	}
}
