package sim

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"

	"github.com/rdmatopo/rdmatopo/framework/ledger"
	"github.com/rdmatopo/rdmatopo/internal/sim/nodeagent"
)

// ConfirmPod records a bound pod in its node's KCNR, as katalyst's agent
// reports a running pod: the simulator's node agent (Options.NodeAgent,
// nodeagent.Default when unset) chooses the pod's zones and NICs (see
// nodeagent.Allot), and the KCNR lists one RDMA unit on each chosen NIC
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
	r, ok := nodeagent.Allot(mode, s.conf.Topology, cnr, nil, p)
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
