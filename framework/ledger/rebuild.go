package ledger

import (
	"fmt"
	"sort"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/rdmatopo/rdmatopo/framework/topology"
)

// Rebuild recreates the ledger from bound pods, e.g. after a scheduler
// restart. A pod counts when it has spec.nodeName, is neither Succeeded nor
// Failed, is not being deleted and carries a non-empty AnnotationNICs; it then
// must also carry AnnotationNUMA.
//
// Each NIC goes to the NUMA zone the fabric shows it in; a NIC the fabric does
// not know is kept under the first annotated NUMA id and reported. Every
// annotated NUMA id gets a zone. The pod's GPU and CPU requests (effective
// requests: the larger of the containers' sum and any init container) are
// split over its zones with SplitEvenly. Confirmed comes from the node's KCNR
// consumers.
//
// Pods are taken in (creationTimestamp, UID) order: a pod whose NIC is
// already held by an earlier pod, whose UID repeats, or whose annotations are
// malformed is skipped with an error naming the pod and the annotation. f may
// be nil (every NIC is then unknown).
func Rebuild(cfg topology.Config, pods []*corev1.Pod, f *topology.Fabric) (*Ledger, []error) {
	cfg = cfg.WithDefaults()
	if f == nil {
		f = topology.Build(cfg, nil, nil)
	}
	var live []*corev1.Pod
	for _, p := range pods {
		// A Binding merges annotations but cannot remove one, so a pod
		// that requests no RDMA may carry a key a user forged: only RDMA
		// pods' annotations were written by the scheduler.
		if p != nil && holdsNICs(p) && podRequest(p, corev1.ResourceName(cfg.RDMAResource), false) > 0 {
			live = append(live, p)
		}
	}
	sort.SliceStable(live, func(i, j int) bool {
		a, b := live[i], live[j]
		if !a.CreationTimestamp.Equal(&b.CreationTimestamp) {
			return a.CreationTimestamp.Before(&b.CreationTimestamp)
		}
		return a.UID < b.UID
	})

	l := New()
	var errs []error
	for _, p := range live {
		r, rerrs := reservationOf(cfg, p, f)
		errs = append(errs, rerrs...)
		if r == nil {
			continue
		}
		if err := l.Reserve(*r); err != nil {
			errs = append(errs, fmt.Errorf("pod %s/%s: annotation %s: %w", p.Namespace, p.Name, AnnotationNICs, err))
		}
	}
	return l, errs
}

// holdsNICs reports whether a pod is bound, alive and annotated with NICs.
func holdsNICs(p *corev1.Pod) bool {
	if p.Spec.NodeName == "" || p.DeletionTimestamp != nil {
		return false
	}
	if p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
		return false
	}
	nics, ok := p.Annotations[AnnotationNICs]
	return ok && nics != ""
}

// reservationOf reads one pod's reservation. It returns nil when the pod must
// be skipped, and errors for everything worth reporting.
func reservationOf(cfg topology.Config, p *corev1.Pod, f *topology.Fabric) (*Reservation, []error) {
	podErr := func(key string, err error) error {
		return fmt.Errorf("pod %s/%s: annotation %s: %w", p.Namespace, p.Name, key, err)
	}
	nics, err := ParseNICs(p.Annotations[AnnotationNICs])
	if err != nil {
		return nil, []error{podErr(AnnotationNICs, err)}
	}
	raw, ok := p.Annotations[AnnotationNUMA]
	if !ok {
		return nil, []error{podErr(AnnotationNUMA, fmt.Errorf("%w: missing while %s is set", ErrBadAnnotation, AnnotationNICs))}
	}
	numas, err := ParseNUMA(raw)
	if err != nil {
		return nil, []error{podErr(AnnotationNUMA, err)}
	}
	if len(numas) == 0 {
		return nil, []error{podErr(AnnotationNUMA, fmt.Errorf("%w: empty while %s is set", ErrBadAnnotation, AnnotationNICs))}
	}

	var errs []error
	zones := map[int]*ZoneUse{}
	for _, id := range numas {
		zones[id] = &ZoneUse{NUMA: id}
	}
	node, known := f.Node(p.Spec.NodeName)
	for _, nic := range nics {
		numa, found := nicNUMA(node, known, nic)
		switch {
		case !found:
			numa = numas[0]
			errs = append(errs, podErr(AnnotationNICs, fmt.Errorf("NIC %s is not on node %s in the fabric; kept under NUMA %d",
				nic, p.Spec.NodeName, numa)))
		case zones[numa] == nil:
			errs = append(errs, podErr(AnnotationNUMA, fmt.Errorf("NIC %s is on NUMA %d of node %s, which %q does not list",
				nic, numa, p.Spec.NodeName, raw)))
			zones[numa] = &ZoneUse{NUMA: numa}
		}
		zones[numa].NICs = append(zones[numa].NICs, nic)
	}

	r := &Reservation{
		UID:       string(p.UID),
		Namespace: p.Namespace,
		Name:      p.Name,
		Node:      p.Spec.NodeName,
	}
	if g := p.Annotations[GroupNameAnnotation]; g != "" {
		r.Job = p.Namespace + "/" + g
	}
	for _, z := range zones {
		sort.Slice(z.NICs, func(i, j int) bool { return z.NICs[i] < z.NICs[j] })
		r.Zones = append(r.Zones, *z)
	}
	sort.Slice(r.Zones, func(i, j int) bool { return r.Zones[i].NUMA < r.Zones[j].NUMA })
	gpus := SplitEvenly(podRequest(p, corev1.ResourceName(cfg.GPUResource), false), len(r.Zones))
	cpus := SplitEvenly(podRequest(p, corev1.ResourceCPU, true), len(r.Zones))
	for i := range r.Zones {
		r.Zones[i].GPU, r.Zones[i].CPUMilli = gpus[i], cpus[i]
	}
	r.Confirmed = known && node.Consumers[r.Consumer()]
	return r, errs
}

// nicNUMA finds the NUMA zone of a NIC on a fabric node.
func nicNUMA(node *topology.Node, known bool, nic topology.NICID) (int, bool) {
	if !known {
		return 0, false
	}
	for _, z := range node.Zones {
		for _, n := range z.NICs {
			if n.ID == nic {
				return z.ID, true
			}
		}
	}
	return 0, false
}

// podRequest is the pod's effective request of a resource: the larger of the
// sum over its containers and the largest init container request. Negative
// values count as 0.
func podRequest(p *corev1.Pod, name corev1.ResourceName, milli bool) int64 {
	value := func(q resource.Quantity) int64 {
		if q.Sign() <= 0 {
			return 0
		}
		if milli {
			return q.MilliValue()
		}
		return q.Value()
	}
	var sum int64
	for _, c := range p.Spec.Containers {
		sum += value(c.Resources.Requests[name])
	}
	for _, c := range p.Spec.InitContainers {
		sum = max(sum, value(c.Resources.Requests[name]))
	}
	return sum
}

// SplitEvenly divides total into parts shares that differ by at most one, the
// larger shares first (parts <= 0: nil). Placement uses the same rule for a
// pod spanning NUMA zones, so a ledger rebuilt from pods matches the one that
// placed them.
func SplitEvenly(total int64, parts int) []int64 {
	if parts <= 0 {
		return nil
	}
	out := make([]int64, parts)
	base, rest := total/int64(parts), total%int64(parts)
	for i := range out {
		out[i] = base
		if int64(i) < rest {
			out[i]++
		}
	}
	return out
}

// Annotations returns the pod annotations that record r: AnnotationNICs (all
// NICs, sorted), AnnotationNUMA (the zones' NUMA ids) and AnnotationS0 (the
// leaf of each NIC in the same order, from f; a NIC f does not know gets its
// synthetic unknown leaf). f may be nil.
func (r Reservation) Annotations(f *topology.Fabric) map[string]string {
	nics := r.NICs()
	s0 := make([]topology.S0ID, len(nics))
	for i, n := range nics {
		id, ok := topology.S0ID(""), false
		if f != nil {
			id, ok = f.NICLeaf(r.Node, n)
		}
		if !ok {
			id = topology.UnknownS0(r.Node, n)
		}
		s0[i] = id
	}
	return map[string]string{
		AnnotationNICs: FormatNICs(nics),
		AnnotationNUMA: FormatNUMA(r.NUMAs()),
		AnnotationS0:   FormatS0(s0),
	}
}
