package sim

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/kubewharf/katalyst-api/pkg/apis/node/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/rdmatopo/rdmatopo/framework/ledger"
	"github.com/rdmatopo/rdmatopo/framework/topology"
)

// consumerOf is the KCNR consumer id of a pod ("namespace/name/uid").
func consumerOf(p *corev1.Pod) string {
	return p.Namespace + "/" + p.Name + "/" + string(p.UID)
}

// ConfirmPod records a bound pod in its node's KCNR, as katalyst's agent
// reports a running pod: the simulator's node agent (Options.NodeAgent,
// DefaultNodeAgent when unset) chooses the pod's zones and NICs (see
// Allot), and the KCNR lists one RDMA unit on each chosen NIC and, on each
// chosen NUMA zone, those NICs plus the pod's GPUs and CPU taken there.
// With Options.NodeAgent set, the simulator confirms every pod right after
// its bind; otherwise a bind is only known to the scheduler's reservations
// until ConfirmPod is called (a soak test chooses the lag). Confirming a
// pod twice changes nothing. It returns what the KCNR lists for the pod
// (no zones when there is nothing to report).
func (s *Simulator) ConfirmPod(namespace, name string) (ledger.Reservation, error) {
	e, ok := s.pods[namespace+"/"+name]
	if !ok || e.deleted {
		return ledger.Reservation{}, fmt.Errorf("pod %s/%s does not exist", namespace, name)
	}
	p := e.pod
	if p.Spec.NodeName == "" {
		return ledger.Reservation{}, fmt.Errorf("pod %s/%s is not bound", namespace, name)
	}
	nics, err := ledger.ParseNICs(p.Annotations[ledger.AnnotationNICs])
	if err != nil {
		return ledger.Reservation{}, fmt.Errorf("pod %s/%s: %w", namespace, name, err)
	}
	cnr, ok := s.cnrs[p.Spec.NodeName]
	if !ok || len(nics) == 0 {
		return ledger.Reservation{}, nil // nothing to report: no KCNR, or a pod the scheduler gave no NICs
	}
	consumer := consumerOf(p)
	if listed := ListedNICs(cnr)[consumer]; len(listed) > 0 {
		return ledger.Reservation{}, nil
	}
	agent := s.opts.NodeAgent
	if agent == "" {
		agent = DefaultNodeAgent
	}
	r, ok := Allot(agent, s.conf.Topology, cnr, nil, p)
	if !ok {
		return ledger.Reservation{}, nil
	}
	next := cnr.DeepCopy()
	if !writeAllocations(next, s.conf.Topology, consumer, r) {
		return ledger.Reservation{}, nil
	}
	s.UpsertCNR(next)
	return r, nil
}

// writeAllocations adds consumer's allocations for r to a KCNR's zone
// tree: one RDMA unit on each NIC zone, and on each NUMA zone the NICs,
// GPUs and CPU r takes there. It reports whether it wrote anything.
func writeAllocations(cnr *v1alpha1.CustomNodeResource, cfg topology.Config, consumer string, r ledger.Reservation) bool {
	cfg = cfg.WithDefaults()
	rdma := corev1.ResourceName(cfg.RDMAResource)
	gpu := corev1.ResourceName(cfg.GPUResource)
	wrote := false
	for _, u := range r.Zones {
		var numa *v1alpha1.TopologyZone
		n := int64(0)
		for _, nic := range u.NICs {
			nz, z := findNIC(cnr.Status.TopologyZone, string(nic))
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

// releaseFromCNR removes a deleted pod's allocations from its node's KCNR,
// as katalyst does once the pod is gone.
func (s *Simulator) releaseFromCNR(p *corev1.Pod) {
	cnr, ok := s.cnrs[p.Spec.NodeName]
	if !ok || p.Spec.NodeName == "" {
		return
	}
	next := cnr.DeepCopy()
	if removeConsumer(next.Status.TopologyZone, consumerOf(p)) {
		s.UpsertCNR(next)
	}
}

// findNIC returns the NUMA zone and the zone of a NIC (PCI addresses
// compared in lower case) in a KCNR's zone tree.
func findNIC(zones []*v1alpha1.TopologyZone, pci string) (numa, nic *v1alpha1.TopologyZone) {
	for _, z := range zones {
		if z == nil {
			continue
		}
		if z.Type == v1alpha1.TopologyTypeNuma {
			for _, c := range z.Children {
				if c != nil && c.Type == v1alpha1.TopologyTypeNIC && strings.EqualFold(c.Name, pci) {
					return z, c
				}
			}
			continue
		}
		if n, c := findNIC(z.Children, pci); c != nil {
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
