package ledger

import (
	corev1 "k8s.io/api/core/v1"

	"github.com/rdmatopo/rdmatopo/core/topology"
)

// Listed returns the reservation of a bound pod as its node's KCNR (in f)
// lists it: the NICs whose allocations name the pod's consumer, grouped by
// NUMA zone, with the pod's GPU and CPU requests (effective requests, as
// Rebuild reads them) split evenly over those zones (SplitEvenly), and
// Confirmed. It is how a pod the scheduler holds no reservation for and
// whose rdmatopo.io annotations are missing (placed before rdmatopo ran, by
// another scheduler, or stripped) enters the ledger, so that it counts
// wherever reservations do (victims, rooms, holds). The pod's Job is left
// empty for the caller. ok is false when the node is unknown or its KCNR
// lists the pod on no NIC.
func Listed(cfg topology.Config, p *corev1.Pod, f *topology.Fabric) (Reservation, bool) {
	cfg = cfg.WithDefaults()
	if p == nil || f == nil || p.Spec.NodeName == "" {
		return Reservation{}, false
	}
	node, ok := f.Node(p.Spec.NodeName)
	if !ok {
		return Reservation{}, false
	}
	r := Reservation{UID: string(p.UID), Namespace: p.Namespace, Name: p.Name, Node: node.Name, Confirmed: true}
	listed := listedNICs(node, r.Consumer())
	if len(listed) == 0 {
		return Reservation{}, false
	}
	total := &Reservation{Zones: []ZoneUse{{
		GPU:      podRequest(p, corev1.ResourceName(cfg.GPUResource), false),
		CPUMilli: podRequest(p, corev1.ResourceCPU, true),
	}}}
	r.Zones = zonesOf(listed, listed, total)
	return r, true
}
