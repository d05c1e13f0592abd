package bench

import (
	"sort"
	"strconv"

	"github.com/kubewharf/katalyst-api/pkg/apis/node/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/rdmatopo/rdmatopo/framework/ledger"
	"github.com/rdmatopo/rdmatopo/framework/placement"
	"github.com/rdmatopo/rdmatopo/framework/topology"
	"github.com/rdmatopo/rdmatopo/internal/sim"
)

// consumerOf is a pod's KCNR consumer id, as katalyst's agent writes it
// ("namespace/name/uid").
func consumerOf(p *corev1.Pod) string {
	return p.Namespace + "/" + p.Name + "/" + string(p.UID)
}

// listRunning returns copies of cnrs whose zone trees list the bound pods
// of pods (the cluster's pre-bound pods) on the NICs and NUMA zones of their
// rdmatopo.io/nics and rdmatopo.io/numa annotations, as katalyst's agent
// reports running pods: one RDMA unit on each NIC zone and, on the NUMA
// zone, the pod's NICs, GPUs and CPU. The simulated node agent then sees
// those zones as taken. cnrs are not modified.
func listRunning(cfg topology.Config, cnrs []*v1alpha1.CustomNodeResource, pods []*corev1.Pod) []*v1alpha1.CustomNodeResource {
	cfg = cfg.WithDefaults()
	rdma := corev1.ResourceName(cfg.RDMAResource)
	gpu := corev1.ResourceName(cfg.GPUResource)
	out := make([]*v1alpha1.CustomNodeResource, len(cnrs))
	byNode := map[string]*v1alpha1.CustomNodeResource{}
	for i, c := range cnrs {
		out[i] = c.DeepCopy()
		byNode[c.Name] = out[i]
	}
	for _, p := range pods {
		cnr := byNode[p.Spec.NodeName]
		nics, err := ledger.ParseNICs(p.Annotations[ledger.AnnotationNICs])
		if cnr == nil || err != nil || len(nics) == 0 {
			continue
		}
		consumer := consumerOf(p)
		perZone := map[*v1alpha1.TopologyZone]int64{}
		var zones []*v1alpha1.TopologyZone
		for _, nic := range nics {
			numa, z := findNICZone(cnr.Status.TopologyZone, nic)
			if z == nil {
				continue
			}
			z.Allocations = append(z.Allocations, &v1alpha1.Allocation{Consumer: consumer,
				Requests: &corev1.ResourceList{rdma: *resource.NewQuantity(1, resource.DecimalSI)}})
			if _, seen := perZone[numa]; !seen {
				zones = append(zones, numa)
			}
			perZone[numa]++
		}
		if len(zones) == 0 {
			continue
		}
		req := shapeOf(p)
		gpus := ledger.SplitEvenly(req.GPU, len(zones))
		cpus := ledger.SplitEvenly(podCPUMilli(p), len(zones))
		for i, z := range zones {
			share := corev1.ResourceList{rdma: *resource.NewQuantity(perZone[z], resource.DecimalSI)}
			if gpus[i] > 0 {
				share[gpu] = *resource.NewQuantity(gpus[i], resource.DecimalSI)
			}
			if cpus[i] > 0 {
				share[corev1.ResourceCPU] = *resource.NewMilliQuantity(cpus[i], resource.DecimalSI)
			}
			z.Allocations = append(z.Allocations, &v1alpha1.Allocation{Consumer: consumer, Requests: &share})
		}
	}
	return out
}

// podCPUMilli is the CPU a pod's containers request, in millicores.
func podCPUMilli(p *corev1.Pod) int64 {
	var n int64
	for _, c := range p.Spec.Containers {
		if q, ok := c.Resources.Requests[corev1.ResourceCPU]; ok {
			n += q.MilliValue()
		}
	}
	return n
}

// findNICZone returns the NUMA zone and the NIC zone of nic in a KCNR's
// zone tree (nil, nil when it has none).
func findNICZone(zones []*v1alpha1.TopologyZone, nic topology.NICID) (numa, z *v1alpha1.TopologyZone) {
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
		if n, c := findNICZone(zone.Children, nic); c != nil {
			return n, c
		}
	}
	return nil, nil
}

// listedAssignment reads what a KCNR lists for consumer on node: per NUMA
// zone the NICs it holds there and the GPUs of its allocation on that zone.
// ok is false when the KCNR lists the consumer on no NIC.
func listedAssignment(cfg topology.Config, node string, cnr *v1alpha1.CustomNodeResource, consumer string) (placement.Assignment, bool) {
	cfg = cfg.WithDefaults()
	gpu := corev1.ResourceName(cfg.GPUResource)
	a := placement.Assignment{Node: node}
	nics := 0
	var walk func([]*v1alpha1.TopologyZone)
	walk = func(zones []*v1alpha1.TopologyZone) {
		for _, z := range zones {
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
				for _, al := range c.Allocations {
					if al != nil && al.Consumer == consumer {
						u.NICs = append(u.NICs, ledger.NormalizeNIC(c.Name))
						held = true
						break
					}
				}
			}
			if held {
				sort.Slice(u.NICs, func(x, y int) bool { return u.NICs[x] < u.NICs[y] })
				nics += len(u.NICs)
				a.Zones = append(a.Zones, u)
			}
		}
	}
	if cnr != nil {
		walk(cnr.Status.TopologyZone)
	}
	sort.Slice(a.Zones, func(x, y int) bool { return a.Zones[x].NUMA < a.Zones[y].NUMA })
	return a, nics > 0
}

// agentAssign is what agent gives pod p (bound to node, carrying no
// rdmatopo.io/nics annotation: the baseline's pods) on the tracker's state:
// sim.Allot on the node's KCNR, with what the tracker holds there as the
// agent's earlier hand-outs. When Allot has nothing to give (AgentExact has
// no annotation to follow), the pod gets what the tracker's own model of
// the node gives it (NodeAssign), as in the planned figures.
func (t *Tracker) agentAssign(agent sim.NodeAgent, cfg topology.Config, cnr *v1alpha1.CustomNodeResource,
	p *corev1.Pod, node string, sh placement.Shape) (placement.Assignment, error) {
	if r, ok := sim.Allot(agent, cfg, cnr, t.reservationsOn(node), p); ok {
		a := placement.Assignment{Node: node}
		for _, u := range r.Zones {
			a.Zones = append(a.Zones, ledger.ZoneUse{NUMA: u.NUMA, GPU: u.GPU, NICs: append([]topology.NICID(nil), u.NICs...)})
		}
		return a, nil
	}
	return t.NodeAssign(node, sh)
}

// reservationsOn lists what the tracker holds on node, as reservations.
func (t *Tracker) reservationsOn(node string) []ledger.Reservation {
	uids := make([]string, 0, len(t.onNode[node]))
	for uid := range t.onNode[node] {
		uids = append(uids, uid)
	}
	sort.Strings(uids)
	out := make([]ledger.Reservation, 0, len(uids))
	for _, uid := range uids {
		out = append(out, ledger.Reservation{UID: uid, Node: node, Zones: t.held[uid].Zones})
	}
	return out
}

// sameNICs reports whether a and b hold the same NICs.
func sameNICs(a, b []topology.NICID) bool {
	if len(a) != len(b) {
		return false
	}
	x := append([]topology.NICID(nil), a...)
	y := append([]topology.NICID(nil), b...)
	sort.Slice(x, func(i, j int) bool { return x[i] < x[j] })
	sort.Slice(y, func(i, j int) bool { return y[i] < y[j] })
	for i := range x {
		if x[i] != y[i] {
			return false
		}
	}
	return true
}
