package nodeagent

import (
	"slices"
	"strconv"
	"strings"

	"github.com/kubewharf/katalyst-api/pkg/apis/node/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/rdmatopo/rdmatopo/core/ledger"
	"github.com/rdmatopo/rdmatopo/core/topology"
)

// Consumer is a pod's KCNR consumer id (ledger.ConsumerID).
func Consumer(p *corev1.Pod) string {
	return ledger.ConsumerID(p.Namespace, p.Name, string(p.UID))
}

// Record adds consumer's allocations for r to a KCNR's zone tree, as
// katalyst reports a running pod: one RDMA unit on each NIC zone, and on
// each NUMA zone the NICs, GPUs and CPU r takes there (a resource it takes
// none of is left out). NICs the KCNR does not list are passed over. It
// reports whether it wrote anything.
func Record(cnr *v1alpha1.CustomNodeResource, cfg topology.Config, consumer string, r ledger.Reservation) bool {
	cfg = cfg.WithDefaults()
	rdma := corev1.ResourceName(cfg.RDMAResource)
	gpu := corev1.ResourceName(cfg.GPUResource)
	wrote := false
	for _, u := range r.Zones {
		var numa *v1alpha1.TopologyZone
		n := int64(0)
		for _, nic := range u.NICs {
			nz, z := findNIC(cnr.Status.TopologyZone, nic)
			if z == nil {
				continue
			}
			z.Allocations = append(z.Allocations, &v1alpha1.Allocation{
				Consumer: consumer,
				Requests: &corev1.ResourceList{rdma: *resource.NewQuantity(1, resource.DecimalSI)},
			})
			if numa == nil && nz != nil && nz.Name == strconv.Itoa(u.NUMA) {
				numa = nz
			}
			n++
		}
		if numa == nil {
			numa = findNUMA(cnr.Status.TopologyZone, u.NUMA)
		}
		if numa == nil {
			continue
		}
		share := corev1.ResourceList{rdma: *resource.NewQuantity(n, resource.DecimalSI)}
		if u.GPU > 0 {
			share[gpu] = *resource.NewQuantity(u.GPU, resource.DecimalSI)
		}
		if u.CPUMilli > 0 {
			share[corev1.ResourceCPU] = *resource.NewMilliQuantity(u.CPUMilli, resource.DecimalSI)
		}
		numa.Allocations = append(numa.Allocations, &v1alpha1.Allocation{Consumer: consumer, Requests: &share})
		wrote = true
	}
	return wrote
}

// Release deletes consumer's allocations from a KCNR's zone tree, as
// katalyst does once the pod is gone, and reports whether any existed.
func Release(cnr *v1alpha1.CustomNodeResource, consumer string) bool {
	if cnr == nil {
		return false
	}
	return removeConsumer(cnr.Status.TopologyZone, consumer)
}

// ListedNICs maps each consumer a KCNR lists on a NIC zone to those NICs
// (lower case, in tree order).
func ListedNICs(cnr *v1alpha1.CustomNodeResource) map[string][]topology.NICID {
	out := map[string][]topology.NICID{}
	var walk func([]*v1alpha1.TopologyZone)
	walk = func(zones []*v1alpha1.TopologyZone) {
		for _, z := range zones {
			if z == nil {
				continue
			}
			if z.Type == v1alpha1.TopologyTypeNIC {
				id := ledger.NormalizeNIC(z.Name)
				for _, a := range z.Allocations {
					if a != nil && a.Consumer != "" && !containsNIC(out[a.Consumer], id) {
						out[a.Consumer] = append(out[a.Consumer], id)
					}
				}
			}
			walk(z.Children)
		}
	}
	if cnr != nil {
		walk(cnr.Status.TopologyZone)
	}
	return out
}

// Listed reads what a KCNR lists for consumer: per NUMA zone (by id) the
// NICs it holds there (sorted) and the GPUs of its allocation on the zone.
// ok is false when the KCNR lists the consumer on no NIC.
func Listed(cfg topology.Config, cnr *v1alpha1.CustomNodeResource, consumer string) (zones []ledger.ZoneUse, ok bool) {
	cfg = cfg.WithDefaults()
	gpu := corev1.ResourceName(cfg.GPUResource)
	nics := 0
	var walk func([]*v1alpha1.TopologyZone)
	walk = func(zs []*v1alpha1.TopologyZone) {
		for _, z := range zs {
			if z == nil {
				continue
			}
			if z.Type != v1alpha1.TopologyTypeNuma {
				walk(z.Children)
				continue
			}
			id, err := strconv.Atoi(z.Name)
			if err != nil {
				continue
			}
			u := ledger.ZoneUse{NUMA: id}
			held := false
			for _, al := range z.Allocations {
				if al == nil || al.Consumer != consumer {
					continue
				}
				held = true
				if al.Requests != nil {
					if q, ok := (*al.Requests)[gpu]; ok {
						u.GPU += q.Value()
					}
				}
			}
			for _, c := range z.Children {
				if c == nil || c.Type != v1alpha1.TopologyTypeNIC {
					continue
				}
				if slices.ContainsFunc(c.Allocations, func(al *v1alpha1.Allocation) bool { return al != nil && al.Consumer == consumer }) {
					u.NICs = append(u.NICs, ledger.NormalizeNIC(c.Name))
					held = true
				}
			}
			if held {
				slices.Sort(u.NICs)
				nics += len(u.NICs)
				zones = append(zones, u)
			}
		}
	}
	if cnr != nil {
		walk(cnr.Status.TopologyZone)
	}
	slices.SortFunc(zones, func(a, b ledger.ZoneUse) int { return a.NUMA - b.NUMA })
	return zones, nics > 0
}

// AnnotatedNICs returns the NICs of a pod's rdmatopo.io/nics annotation,
// lower case, without empty items. It is lenient where ledger.ParseNICs is
// strict: the NICs of topology-unknown nodes have synthetic ids that are
// not PCI addresses, and a report must still show them.
func AnnotatedNICs(p *corev1.Pod) []topology.NICID {
	var out []topology.NICID
	for _, item := range strings.Split(p.Annotations[ledger.AnnotationNICs], ",") {
		if item = strings.ToLower(strings.TrimSpace(item)); item != "" {
			out = append(out, topology.NICID(item))
		}
	}
	return out
}

// findNUMA returns the NUMA zone of an id in a KCNR's zone tree.
func findNUMA(zones []*v1alpha1.TopologyZone, id int) *v1alpha1.TopologyZone {
	for _, z := range zones {
		if z == nil {
			continue
		}
		if z.Type == v1alpha1.TopologyTypeNuma && z.Name == strconv.Itoa(id) {
			return z
		}
		if n := findNUMA(z.Children, id); n != nil {
			return n
		}
	}
	return nil
}

// findNIC returns the NUMA zone and the zone of a NIC (names compared as
// ledger.NormalizeNIC reads them) in a KCNR's zone tree; nil, nil when it
// has none.
func findNIC(zones []*v1alpha1.TopologyZone, nic topology.NICID) (numa, z *v1alpha1.TopologyZone) {
	for _, zone := range zones {
		if zone == nil {
			continue
		}
		if zone.Type == v1alpha1.TopologyTypeNuma {
			for _, c := range zone.Children {
				if c != nil && c.Type == v1alpha1.TopologyTypeNIC && ledger.NormalizeNIC(c.Name) == nic {
					return zone, c
				}
			}
			continue
		}
		if n, c := findNIC(zone.Children, nic); c != nil {
			return n, c
		}
	}
	return nil, nil
}

// removeConsumer deletes consumer's allocations from a zone tree and
// reports whether any existed.
func removeConsumer(zones []*v1alpha1.TopologyZone, consumer string) bool {
	removed := false
	for _, z := range zones {
		if z == nil {
			continue
		}
		kept := z.Allocations[:0]
		for _, a := range z.Allocations {
			if a != nil && a.Consumer == consumer {
				removed = true
				continue
			}
			kept = append(kept, a)
		}
		z.Allocations = kept
		if removeConsumer(z.Children, consumer) {
			removed = true
		}
	}
	return removed
}

func containsNIC(list []topology.NICID, id topology.NICID) bool {
	return slices.Contains(list, id)
}
