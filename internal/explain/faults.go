package explain

// Failed leaves, read from the KCNRs as the scheduler reads them
// (docs/node-contract.md, "When hardware fails"): a leaf every NIC of
// which is gone from its node's zones or listed with allocatable 0, while
// the KCNRs' RDMATOR/<pci> properties still name it. The gangs listed under
// it are those whose rdmatopo.io/placement names the leaf: they had pods
// under it and lost them.

import (
	"encoding/json"
	"slices"
	"sort"
	"strings"

	"github.com/kubewharf/katalyst-api/pkg/apis/node/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	schedulingv1beta1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"

	"github.com/rdmatopo/rdmatopo/core/ledger"
	"github.com/rdmatopo/rdmatopo/core/topology"
)

// FailedLeaf is a leaf every NIC of which failed.
type FailedLeaf struct {
	S0    string   `json:"s0"`
	NICs  int      `json:"nics"`
	Nodes []string `json:"nodes"`
	// Gangs are the PodGroups ("namespace/name") whose placement names
	// the leaf.
	Gangs []string `json:"gangs"`
}

// FailedLeaves returns the failed leaves of the cluster, sorted by S0.
func FailedLeaves(cfg topology.Config, cnrs []*v1alpha1.CustomNodeResource, pgs []*schedulingv1beta1.PodGroup) []FailedLeaf {
	cfg = cfg.WithDefaults()
	type leafNICs struct {
		all, up int
		nodes   map[string]bool
	}
	by := map[string]*leafNICs{}
	for _, cnr := range cnrs {
		if cnr == nil {
			continue
		}
		units := listedUnits(cnr, corev1.ResourceName(cfg.RDMAResource))
		for _, p := range cnr.Spec.NodeResourceProperties {
			if p == nil || !strings.HasPrefix(p.PropertyName, topology.RDMATorPrefix) || len(p.PropertyValues) == 0 || p.PropertyValues[0] == "" {
				continue
			}
			nic := string(topology.NormalizeNICName(strings.TrimPrefix(p.PropertyName, topology.RDMATorPrefix)))
			l := by[p.PropertyValues[0]]
			if l == nil {
				l = &leafNICs{nodes: map[string]bool{}}
				by[p.PropertyValues[0]] = l
			}
			l.all++
			l.nodes[cnr.Name] = true
			if units[nic] > 0 {
				l.up++
			}
		}
	}
	out := []FailedLeaf{}
	for id, l := range by {
		if l.up > 0 {
			continue
		}
		fl := FailedLeaf{S0: id, NICs: l.all, Nodes: []string{}, Gangs: []string{}}
		for n := range l.nodes {
			fl.Nodes = append(fl.Nodes, n)
		}
		sort.Strings(fl.Nodes)
		for _, pg := range pgs {
			var ann struct {
				S0 []string `json:"s0"`
			}
			if json.Unmarshal([]byte(pg.Annotations[ledger.AnnotationPlacement]), &ann) == nil && slices.Contains(ann.S0, id) {
				fl.Gangs = append(fl.Gangs, pg.Namespace+"/"+pg.Name)
			}
		}
		sort.Strings(fl.Gangs)
		out = append(out, fl)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].S0 < out[j].S0 })
	return out
}

// listedUnits maps each NIC a KCNR lists under a NUMA zone to its
// allocatable units (1 when the zone does not say).
func listedUnits(cnr *v1alpha1.CustomNodeResource, rdma corev1.ResourceName) map[string]int64 {
	out := map[string]int64{}
	var walk func(zs []*v1alpha1.TopologyZone)
	walk = func(zs []*v1alpha1.TopologyZone) {
		for _, z := range zs {
			if z == nil {
				continue
			}
			if z.Type == v1alpha1.TopologyTypeNIC {
				units := int64(1)
				if a := z.Resources.Allocatable; a != nil {
					if q, ok := (*a)[rdma]; ok {
						units = q.Value()
					}
				}
				out[string(topology.NormalizeNICName(z.Name))] = units
			}
			walk(z.Children)
		}
	}
	walk(cnr.Status.TopologyZone)
	return out
}
