package replay

import (
	"sort"

	"github.com/kubewharf/katalyst-api/pkg/apis/node/v1alpha1"
	corev1 "k8s.io/api/core/v1"

	"github.com/rdmatopo/rdmatopo/core/ledger"
	"github.com/rdmatopo/rdmatopo/core/placement"
	"github.com/rdmatopo/rdmatopo/core/topology"
	"github.com/rdmatopo/rdmatopo/internal/devtools/bench/grade"
	"github.com/rdmatopo/rdmatopo/internal/sim/nodeagent"
)

// listRunning returns copies of cnrs whose zone trees list the bound pods
// of pods (the cluster's pre-bound pods) on the NICs of their
// rdmatopo.io/nics annotation, as the node agent in exact mode lists a
// running pod (nodeagent.Allot, nodeagent.Record): one RDMA unit on each
// NIC zone and, on the NUMA zone, the pod's NICs, GPUs and CPU. The
// simulated node agent then sees those zones as taken. cnrs are not
// modified.
func listRunning(cfg topology.Config, cnrs []*v1alpha1.CustomNodeResource, pods []*corev1.Pod) []*v1alpha1.CustomNodeResource {
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
		if r, ok := nodeagent.Allot(nodeagent.Exact, cfg, cnr, nil, p); ok {
			nodeagent.Record(cnr, cfg, nodeagent.Consumer(p), r)
		}
	}
	return out
}

// listedAssignment reads what a KCNR lists for consumer on node
// (nodeagent.Listed): per NUMA zone the NICs it holds there and the GPUs of
// its allocation on that zone. ok is false when the KCNR lists the
// consumer on no NIC.
func listedAssignment(cfg topology.Config, node string, cnr *v1alpha1.CustomNodeResource, consumer string) (placement.Assignment, bool) {
	zones, ok := nodeagent.Listed(cfg, cnr, consumer)
	return placement.Assignment{Node: node, Zones: zones}, ok
}

// agentAssign is what agent gives pod p (bound to node, carrying no
// rdmatopo.io/nics annotation: the baseline's pods) on the tracker's state:
// nodeagent.Allot on the node's KCNR, with what the tracker holds there as the
// agent's earlier hand-outs. When Allot has nothing to give (nodeagent.Exact has
// no annotation to follow), the pod gets what the tracker's own model of
// the node gives it (NodeAssign), as in the planned figures.
func agentAssign(t *grade.Tracker, agent nodeagent.Mode, cfg topology.Config, cnr *v1alpha1.CustomNodeResource,
	p *corev1.Pod, node string, sh placement.Shape) (placement.Assignment, error) {
	if r, ok := nodeagent.Allot(agent, cfg, cnr, t.ReservationsOn(node), p); ok {
		a := placement.Assignment{Node: node}
		for _, u := range r.Zones {
			a.Zones = append(a.Zones, ledger.ZoneUse{NUMA: u.NUMA, GPU: u.GPU, NICs: append([]topology.NICID(nil), u.NICs...)})
		}
		return a, nil
	}
	return t.NodeAssign(node, sh)
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
