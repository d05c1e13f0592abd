package sim

import (
	"fmt"
	"strings"

	"github.com/kubewharf/katalyst-api/pkg/apis/node/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/rdmatopo/rdmatopo/framework/ledger"
	"github.com/rdmatopo/rdmatopo/internal/workload"
)

// consumerOf is the KCNR consumer id of a pod ("namespace/name/uid").
func consumerOf(p *corev1.Pod) string {
	return p.Namespace + "/" + p.Name + "/" + string(p.UID)
}

// ConfirmPod records a bound pod in its node's KCNR, as katalyst's agent
// reports a running pod: one RDMA unit on each NIC of its rdmatopo.io/nics
// annotation and, on the NUMA zones of those NICs, the NICs plus the pod's
// GPU and CPU requests (split evenly over the zones). Until it is called a
// bind is only known to the scheduler's own reservations: a soak test
// chooses the lag. Confirming a pod twice changes nothing.
func (s *Simulator) ConfirmPod(namespace, name string) error {
	e, ok := s.pods[namespace+"/"+name]
	if !ok || e.deleted {
		return fmt.Errorf("pod %s/%s does not exist", namespace, name)
	}
	p := e.pod
	if p.Spec.NodeName == "" {
		return fmt.Errorf("pod %s/%s is not bound", namespace, name)
	}
	nics, err := ledger.ParseNICs(p.Annotations[ledger.AnnotationNICs])
	if err != nil {
		return fmt.Errorf("pod %s/%s: %w", namespace, name, err)
	}
	cnr, ok := s.cnrs[p.Spec.NodeName]
	if !ok || len(nics) == 0 {
		return nil // nothing to report: no KCNR, or a pod without NICs
	}
	next := cnr.DeepCopy()
	consumer := consumerOf(p)
	rdma := corev1.ResourceName(s.conf.Topology.RDMAResource)
	gpu := corev1.ResourceName(s.conf.Topology.GPUResource)

	// NIC zones and their NUMA zones, in tree order.
	perZone := map[*v1alpha1.TopologyZone]int64{}
	var zones []*v1alpha1.TopologyZone
	for _, nic := range nics {
		numa, nz := findNIC(next.Status.TopologyZone, string(nic))
		if nz == nil || hasConsumer(nz, consumer) {
			continue
		}
		nz.Allocations = append(nz.Allocations, &v1alpha1.Allocation{
			Consumer: consumer,
			Requests: &corev1.ResourceList{rdma: *resource.NewQuantity(1, resource.DecimalSI)},
		})
		if numa != nil {
			if _, seen := perZone[numa]; !seen {
				zones = append(zones, numa)
			}
			perZone[numa]++
		}
	}
	if len(zones) == 0 {
		return nil
	}
	req := workload.PodRequests(&p.Spec)
	for _, z := range zones {
		share := corev1.ResourceList{rdma: *resource.NewQuantity(perZone[z], resource.DecimalSI)}
		for _, name := range []corev1.ResourceName{gpu, corev1.ResourceCPU} {
			if q, ok := req[name]; ok {
				share[name] = *resource.NewMilliQuantity(q.MilliValue()/int64(len(zones)), q.Format)
			}
		}
		z.Allocations = append(z.Allocations, &v1alpha1.Allocation{Consumer: consumer, Requests: &share})
	}
	s.UpsertCNR(next)
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

// hasConsumer reports whether a zone lists an allocation of consumer.
func hasConsumer(z *v1alpha1.TopologyZone, consumer string) bool {
	for _, a := range z.Allocations {
		if a != nil && a.Consumer == consumer {
			return true
		}
	}
	return false
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
