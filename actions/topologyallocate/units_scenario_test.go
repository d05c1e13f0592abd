package topologyallocate_test

import (
	"fmt"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/kubewharf/katalyst-api/pkg/apis/node/v1alpha1"

	"github.com/rdmatopo/rdmatopo/core/ledger"
	"github.com/rdmatopo/rdmatopo/internal/testing/builders"
)

// addUnitsNode adds a node with one NUMA zone of 8 GPUs and 2 NICs under
// leaf A, each NIC of the given RDMA units (the node's RDMA resource is
// their sum).
func (c *cluster) addUnitsNode(name string, units int64) {
	c.nodes = append(c.nodes, builders.MakeNode(name).Shared().GPU(8).RDMA(2*units).CPU("128").
		Resource("pods", "110").Resource("memory", "512Gi").Obj())
	c.cnrs = append(c.cnrs, builders.MakeCNR(name).Policy(v1alpha1.TopologyPolicySingleNUMANodeContainerLevel).
		Zone(0, 8, 64000).
		NIC(builders.NUMANICs[0][0], 0, "A").NIC(builders.NUMANICs[0][1], 0, "A").
		Units(builders.NUMANICs[0][0], units).Units(builders.NUMANICs[0][1], units).Obj())
}

// TestNICUnitsScenarios: a NIC of several RDMA units serves pods up to its
// units, one unit per pod and NIC (a pod's R units are R distinct NICs).
// The smallest cluster that shows it: one node, two NICs.
func TestNICUnitsScenarios(t *testing.T) {
	nic0, nic1 := builders.NUMANICs[0][0], builders.NUMANICs[0][1]
	cases := map[string]struct {
		units      int64
		pods, rdma int
		wantBound  int
		// wantPerNIC counts the bound pods each NIC serves.
		wantPerNIC map[string]int
		wantReason string
	}{
		"two NICs of 4 units serve four 1-unit pods, two each": {
			units: 4, pods: 4, rdma: 1,
			wantBound: 4, wantPerNIC: map[string]int{nic0: 2, nic1: 2},
		},
		"two NICs of 4 units serve eight 1-unit pods": {
			units: 4, pods: 8, rdma: 1,
			wantBound: 8, wantPerNIC: map[string]int{nic0: 4, nic1: 4},
		},
		"a 2-unit pod takes one unit of each NIC: four fit": {
			units: 4, pods: 4, rdma: 2,
			wantBound: 4, wantPerNIC: map[string]int{nic0: 4, nic1: 4},
		},
		"nine 1-unit pods exceed the eight units: the gang waits": {
			units: 4, pods: 9, rdma: 1,
			wantBound: 0, wantReason: "free capacity holds 8",
		},
		"a 3-unit pod needs three distinct NICs: two do not hold it": {
			units: 4, pods: 1, rdma: 3,
			wantBound: 0, wantReason: "cannot hold",
		},
		"NICs of one unit serve one pod each: four pods do not fit": {
			units: 1, pods: 4, rdma: 1,
			wantBound: 0, wantReason: "free capacity holds 2",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			c := &cluster{}
			c.addUnitsNode("n1", tc.units)
			c.addJob("g", tc.pods, 0, tc.rdma, nil)
			o := runSession(t, c)
			checkBindsPlanned(t, o)
			if got := o.binds.Count("ns", "g"); got != tc.wantBound {
				t.Fatalf("%d pods bound, want %d; condition %q", got, tc.wantBound, condition(o.pgs["ns/g"]))
			}
			if tc.wantReason != "" {
				if got := condition(o.pgs["ns/g"]); !strings.Contains(got, tc.wantReason) {
					t.Errorf("condition %q, want it to say %q", got, tc.wantReason)
				}
			}
			if tc.wantBound > 0 {
				// One node, one leaf: the narrowest tier.
				if got := o.pgs["ns/g"].Annotations[ledger.AnnotationPlacement]; !strings.Contains(got, `"tier":"node"`) {
					t.Errorf("placement %s, want tier node", got)
				}
			}
			perNIC := map[string]int{}
			for i := 0; i < tc.wantBound; i++ {
				task := o.binds[fmt.Sprintf("ns/g-%d", i)]
				nics := strings.Split(task.Pod.Annotations[ledger.AnnotationNICs], ",")
				if len(nics) != tc.rdma {
					t.Errorf("pod g-%d annotated with NICs %v, want %d distinct NICs", i, nics, tc.rdma)
				}
				for _, n := range nics {
					perNIC[n]++
				}
				r, ok := o.ledger.Get(string(task.Pod.UID))
				if !ok || strings.Join(nicStrings(r.NICs()), ",") != task.Pod.Annotations[ledger.AnnotationNICs] {
					t.Errorf("pod g-%d: ledger holds %v (found %v), annotation %q", i, r.NICs(), ok, task.Pod.Annotations[ledger.AnnotationNICs])
				}
			}
			if tc.wantPerNIC != nil {
				if diff := cmp.Diff(tc.wantPerNIC, perNIC); diff != "" {
					t.Errorf("pods per NIC (-want,+got):\n%s", diff)
				}
			}
			if err := o.ledger.CheckInvariants(); err != nil {
				t.Errorf("ledger invariants: %v", err)
			}
		})
	}
}

// nicStrings returns the NIC ids as strings, sorted.
func nicStrings[T ~string](ids []T) []string {
	out := make([]string, len(ids))
	for i, id := range ids {
		out[i] = string(id)
	}
	sort.Strings(out)
	return out
}
