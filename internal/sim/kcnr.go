package sim

import (
	"fmt"

	"github.com/kubewharf/katalyst-api/pkg/apis/node/v1alpha1"
	corev1 "k8s.io/api/core/v1"

	"github.com/rdmatopo/rdmatopo/core/ledger"
	"github.com/rdmatopo/rdmatopo/core/topology"
	"github.com/rdmatopo/rdmatopo/internal/sim/nodeagent"
)

// ConfirmPod records a bound pod in its node's KCNR, as katalyst's agent
// reports a running pod: the simulator's node agent (Options.NodeAgent,
// nodeagent.Default when unset) chooses the pod's zones and NICs (see
// nodeagent.Allot; what the pods that arrived bound hold by their
// annotations while the KCNR does not list them stays theirs, see heldOn),
// and the KCNR lists one RDMA unit on each chosen NIC
// and, on each chosen NUMA zone, those NICs plus the pod's GPUs and CPU
// taken there (nodeagent.Record). With Options.NodeAgent set, the
// simulator confirms every pod right after its bind; otherwise a bind is
// only known to the scheduler's reservations until ConfirmPod is called (a
// soak test chooses the lag). Confirming a pod twice changes nothing. It
// returns what the KCNR lists for the pod (no zones when there is nothing
// to report).
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
	consumer := nodeagent.Consumer(p)
	if listed := nodeagent.ListedNICs(cnr)[consumer]; len(listed) > 0 {
		return ledger.Reservation{}, nil
	}
	mode := s.opts.NodeAgent
	if mode == "" {
		mode = nodeagent.Default
	}
	r, ok := nodeagent.Allot(mode, s.conf.Topology, cnr, s.heldOn(p.Spec.NodeName, cnr, namespace+"/"+name), p)
	if !ok {
		return ledger.Reservation{}, nil
	}
	next := cnr.DeepCopy()
	if !nodeagent.Record(next, s.conf.Topology, consumer, r) {
		return ledger.Reservation{}, nil
	}
	s.putCNR(next)
	return r, nil
}

// heldOn returns what the pods that arrived bound to node (cluster pods,
// running workload pods) hold there by their rdmatopo.io/* annotations
// while its KCNR does not list them, read as ledger.Rebuild reads them
// (the earlier pod keeps a NIC two pods name), leaving out the pod self
// ("namespace/name"). A node agent has admitted those pods before the
// simulation began: what they hold is not its to hand out again. Pods the
// simulation bound are the agent's own choices (ConfirmPod), listed once
// confirmed.
func (s *Simulator) heldOn(node string, cnr *v1alpha1.CustomNodeResource, self string) []ledger.Reservation {
	keys := s.arrivedBound[node]
	if len(keys) == 0 {
		return nil
	}
	listed := nodeagent.ListedNICs(cnr)
	var pods []*corev1.Pod
	for key := range keys {
		e, ok := s.pods[key]
		switch {
		case !ok || e.deleted || e.pod.Spec.NodeName != node || len(listed[nodeagent.Consumer(e.pod)]) > 0:
			delete(keys, key)
		case key != self:
			pods = append(pods, e.pod)
		}
	}
	if len(keys) == 0 {
		delete(s.arrivedBound, node)
	}
	if len(pods) == 0 {
		return nil
	}
	var nodes []*corev1.Node
	if n, ok := s.nodes[node]; ok {
		nodes = append(nodes, n)
	}
	f := topology.BuildWithHyperNodes(s.conf.Topology, s.hyper, nodes, []*v1alpha1.CustomNodeResource{cnr})
	l, _ := ledger.Rebuild(s.conf.Topology, pods, f)
	return l.All()
}

// releaseFromCNR removes a deleted pod's allocations from its node's KCNR,
// as katalyst does once the pod is gone.
func (s *Simulator) releaseFromCNR(p *corev1.Pod) {
	cnr, ok := s.cnrs[p.Spec.NodeName]
	if !ok || p.Spec.NodeName == "" {
		return
	}
	next := cnr.DeepCopy()
	if nodeagent.Release(next, nodeagent.Consumer(p)) {
		s.putCNR(next)
	}
}
