package ledger

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	resourcehelper "k8s.io/kubernetes/pkg/api/v1/resource"

	"github.com/rdmatopo/rdmatopo/core/topology"
)

// Rebuild recreates the ledger from bound pods, e.g. after a scheduler
// restart or while a KCNR lags. A pod counts when it has spec.nodeName, is
// neither Succeeded nor Failed, is not being deleted, requests the RDMA
// resource and carries a non-empty AnnotationNICs.
//
// A reservation is never dropped because an annotation cannot be read: a
// NIC the scheduler named stays held until the KCNR lists the pod (Adopt) or
// the pod is gone. Each NIC goes to the NUMA zone the fabric shows it in.
// Every problem comes back as a *PodError naming the pod and the annotation:
//   - annotations that cannot be fully read (CheckAnnotations: a missing or
//     non-numeric AnnotationNUMA, a NIC named twice, names with stray
//     spaces, an unreadable AnnotationS0): the pod keeps every NIC it names
//     (items trimmed, repeats counted once) that is on its node in the
//     fabric;
//   - a NIC the fabric does not show on the node, when AnnotationNUMA is
//     readable: kept under the first annotated NUMA id; when it is not, the
//     NIC has no zone to be held in and is not held (the fabric does not
//     show it, so it cannot be handed out either; Rebuild runs again for a
//     pod that holds nothing);
//   - on a node whose NICs are the synthetic "rdma-<n>" of a node without
//     usable topology, a named NIC the fabric does not show (a PCI address
//     written while the KCNR still had its status) takes a free synthetic
//     NIC in its place, after every pod named its own, so the node's
//     bound pods never leave their units free.
//
// Every readable annotated NUMA id gets a zone. The pod's GPU and CPU
// requests (effective requests: the larger of the containers' sum and any
// init container) are split over its zones with SplitEvenly. Confirmed
// comes from the node's KCNR consumers.
//
// Pods are taken in (creationTimestamp, UID) order. A NIC serves as many
// pods as it has units (topology.NIC.Units in f): when more pods name a NIC
// of a node than that, the earlier pods keep it; a later one keeps its
// other NICs and is reported (ErrNICTaken) for the contested one. A pod
// whose UID repeats an earlier pod's is skipped and reported. f may be nil
// (every NIC is then unknown).
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
	l.UseFabric(f)
	var errs []error
	seen := make(map[string]string, len(live)) // UID -> namespace/name
	var later []*podPlan                       // plans with NICs that take synthetic slots
	for _, p := range live {
		plan, perrs := planOf(p, f)
		errs = append(errs, perrs...)
		if plan == nil {
			continue
		}
		if prev, dup := seen[string(p.UID)]; dup {
			errs = append(errs, plan.errorf(AnnotationNICs, "%w: pod %s has the same UID", ErrPodReserved, prev))
			continue
		}
		seen[string(p.UID)] = p.Namespace + "/" + p.Name
		for i := range plan.zones {
			z := &plan.zones[i]
			kept := z.NICs[:0]
			for _, nic := range z.NICs {
				if hs := l.Holders(plan.node, nic); len(hs) >= l.Units(plan.node, nic) {
					holder, _ := l.Get(hs[0])
					errs = append(errs, plan.errorf(AnnotationNICs, "%w: NIC %s on node %s is held by pod %s%s (all its units), which come first (creation time, UID); this pod keeps its other NICs",
						ErrNICTaken, nic, plan.node, holder, others(len(hs)-1)))
					continue
				}
				kept = append(kept, nic)
			}
			z.NICs = kept
		}
		errs = append(errs, plan.reserve(cfg, f, l)...)
		if len(plan.slots) > 0 {
			later = append(later, plan)
		}
	}
	// Synthetic slots go last, so that no pod's own NIC is taken for
	// another pod's slot.
	for _, plan := range later {
		l.Release(string(plan.pod.UID))
		errs = append(errs, plan.takeSlots(f, l)...)
		errs = append(errs, plan.reserve(cfg, f, l)...)
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

// podPlan is what Rebuild reads from one pod before reserving it.
type podPlan struct {
	pod  *corev1.Pod
	node string
	// zones are the pod's zones by NUMA id, unsorted.
	zones []ZoneUse
	// slots are named NICs the fabric does not show on a node of synthetic
	// NICs: each takes a free synthetic NIC.
	slots []topology.NICID
}

// errorf builds a *PodError for the plan's pod.
func (p *podPlan) errorf(key, format string, args ...any) error {
	return &PodError{Namespace: p.pod.Namespace, Name: p.pod.Name, UID: string(p.pod.UID), Key: key, Err: fmt.Errorf(format, args...)}
}

// zone returns the plan's zone of a NUMA id, adding it when missing.
func (p *podPlan) zone(numa int) *ZoneUse {
	for i := range p.zones {
		if p.zones[i].NUMA == numa {
			return &p.zones[i]
		}
	}
	p.zones = append(p.zones, ZoneUse{NUMA: numa})
	return &p.zones[len(p.zones)-1]
}

// has reports whether the plan holds a NIC.
func (p *podPlan) has(nic topology.NICID) bool {
	for _, z := range p.zones {
		if slices.Contains(z.NICs, nic) {
			return true
		}
	}
	return false
}

// hasZone reports whether the plan has a zone of that NUMA id.
func (p *podPlan) hasZone(numa int) bool {
	for _, z := range p.zones {
		if z.NUMA == numa {
			return true
		}
	}
	return false
}

// planOf reads one pod's annotations against the fabric. It returns nil when
// the pod names nothing that can be held, and errors for everything worth
// reporting.
func planOf(p *corev1.Pod, f *topology.Fabric) (*podPlan, []error) {
	plan := &podPlan{pod: p, node: p.Spec.NodeName}
	var errs []error
	for _, bad := range CheckAnnotations(p.Annotations) {
		errs = append(errs, plan.errorf(bad.Key, "%w; the pod keeps the NICs it names that are on node %s", bad.Err, plan.node))
	}
	raw := p.Annotations[AnnotationNICs]
	nics, err := ParseNICs(raw)
	if err != nil {
		nics = salvageNICs(raw)
	}
	rawNUMA, numaSet := p.Annotations[AnnotationNUMA]
	numas, err := ParseNUMA(rawNUMA)
	if err != nil || !numaSet {
		numas = nil
	}
	for _, id := range numas {
		plan.zone(id)
	}

	node, known := f.Node(plan.node)
	synthetic := known && syntheticNICs(node)
	for _, nic := range nics {
		numa, found := nicNUMA(node, known, nic)
		switch {
		case found:
			if len(numas) > 0 && !plan.hasZone(numa) {
				errs = append(errs, plan.errorf(AnnotationNUMA, "NIC %s is on NUMA %d of node %s, which %q does not list",
					nic, numa, plan.node, rawNUMA))
			}
			z := plan.zone(numa)
			z.NICs = append(z.NICs, nic)
		case synthetic:
			plan.slots = append(plan.slots, nic)
		case len(numas) > 0:
			errs = append(errs, plan.errorf(AnnotationNICs, "NIC %s is not on node %s in the fabric; kept under NUMA %d",
				nic, plan.node, numas[0]))
			z := plan.zone(numas[0])
			z.NICs = append(z.NICs, nic)
		default:
			errs = append(errs, plan.errorf(AnnotationNICs, "NIC %s is not on node %s in the fabric and %s gives no zone to hold it under; not held",
				nic, plan.node, AnnotationNUMA))
		}
	}
	for _, z := range plan.zones {
		if len(z.NICs) > 0 {
			return plan, errs
		}
	}
	if len(plan.slots) > 0 {
		return plan, errs
	}
	return nil, errs
}

// takeSlots gives each of the plan's slots a free synthetic NIC of its node
// (in zone, then name order): one the fabric shows free and no reservation
// of l holds. It reports the slots left without one.
func (p *podPlan) takeSlots(f *topology.Fabric, l *Ledger) []error {
	node, _ := f.Node(p.node)
	var errs []error
	next := 0
	for _, z := range node.Zones {
		for _, n := range z.NICs {
			if next == len(p.slots) {
				break
			}
			if len(l.Holders(p.node, n.ID)) >= l.Units(p.node, n.ID) || !n.Free || p.has(n.ID) {
				continue
			}
			errs = append(errs, p.errorf(AnnotationNICs, "NIC %s is not on node %s, whose NICs are synthetic (no usable topology); it holds %s in its place",
				p.slots[next], p.node, n.ID))
			zu := p.zone(z.ID)
			zu.NICs = append(zu.NICs, n.ID)
			next++
		}
	}
	for _, nic := range p.slots[next:] {
		errs = append(errs, p.errorf(AnnotationNICs, "%w: NIC %s is not on node %s, whose NICs are synthetic (no usable topology), and no free one is left to hold in its place",
			ErrNICTaken, nic, p.node))
	}
	p.slots = nil
	return errs
}

// reserve turns the plan into a reservation of l: zones sorted, NICs sorted,
// GPU and CPU requests split evenly, confirmed when the node's KCNR lists
// the pod. A plan left without NICs reserves nothing.
func (p *podPlan) reserve(cfg topology.Config, f *topology.Fabric, l *Ledger) []error {
	r := Reservation{
		UID:       string(p.pod.UID),
		Namespace: p.pod.Namespace,
		Name:      p.pod.Name,
		Node:      p.node,
	}
	if g := p.pod.Annotations[GroupNameAnnotation]; g != "" {
		r.Job = p.pod.Namespace + "/" + g
	}
	held := 0
	for _, z := range p.zones {
		held += len(z.NICs)
		z.NICs = append([]topology.NICID(nil), z.NICs...)
		sort.Slice(z.NICs, func(i, j int) bool { return z.NICs[i] < z.NICs[j] })
		r.Zones = append(r.Zones, z)
	}
	if held == 0 {
		return nil
	}
	sort.Slice(r.Zones, func(i, j int) bool { return r.Zones[i].NUMA < r.Zones[j].NUMA })
	gpus := SplitEvenly(podRequest(p.pod, corev1.ResourceName(cfg.GPUResource), false), len(r.Zones))
	cpus := SplitEvenly(podRequest(p.pod, corev1.ResourceCPU, true), len(r.Zones))
	for i := range r.Zones {
		r.Zones[i].GPU, r.Zones[i].CPUMilli = gpus[i], cpus[i]
	}
	var errs []error
	if split, err := p.containerSplit(cfg, r); err != nil {
		errs = append(errs, p.errorf(AnnotationContainers, "%w; the pod's GPUs and CPUs are split evenly over its zones", err))
	} else if split != nil {
		r = *split
	}
	if node, ok := f.Node(p.node); ok {
		r.Confirmed = node.Consumers[r.Consumer()]
	}
	if err := l.Reserve(r); err != nil {
		return append(errs, p.errorf(AnnotationNICs, "%w", err))
	}
	return errs
}

// containerSplit reads the pod's AnnotationContainers against r (its
// zones and NICs as reserve built them): r with the split and each zone's
// GPUs and CPUs the sum of its containers' requests; nil without the
// annotation or when r holds one zone (all the containers are there); an
// error when the annotation cannot be read or does not match the pod (a
// container it does not have, a zone or NIC it does not hold).
func (p *podPlan) containerSplit(cfg topology.Config, r Reservation) (*Reservation, error) {
	raw := p.pod.Annotations[AnnotationContainers]
	cs, err := ParseContainers(raw)
	if err != nil || cs == nil || len(r.Zones) < 2 {
		return nil, err
	}
	gpu, cpu := map[int]int64{}, map[int]int64{}
	for _, c := range cs {
		for _, name := range c.Names {
			ctr := containerNamed(p.pod, name)
			if ctr == nil {
				return nil, fmt.Errorf("%w: the pod has no container %q", ErrBadAnnotation, name)
			}
			gpu[c.NUMA] += quantity(ctr.Resources.Requests[corev1.ResourceName(cfg.GPUResource)], false)
			cpu[c.NUMA] += quantity(ctr.Resources.Requests[corev1.ResourceCPU], true)
		}
	}
	out := r.clone()
	out.Containers = cs
	for i := range out.Zones {
		out.Zones[i].GPU, out.Zones[i].CPUMilli = gpu[out.Zones[i].NUMA], cpu[out.Zones[i].NUMA]
	}
	if err := out.validate(); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrBadAnnotation, err)
	}
	return &out, nil
}

// containerNamed returns the pod's regular or sidecar (restartable init)
// container of that name; nil if there is none.
func containerNamed(p *corev1.Pod, name string) *corev1.Container {
	for i := range p.Spec.Containers {
		if p.Spec.Containers[i].Name == name {
			return &p.Spec.Containers[i]
		}
	}
	for i := range p.Spec.InitContainers {
		c := &p.Spec.InitContainers[i]
		if c.Name == name && c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways {
			return c
		}
	}
	return nil
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

// syntheticNICs reports whether every NIC of a node is a synthetic
// "rdma-<n>" the topology package invents for a node without usable
// topology (and the node has at least one).
func syntheticNICs(node *topology.Node) bool {
	any := false
	for _, z := range node.Zones {
		for _, n := range z.NICs {
			rest, ok := strings.CutPrefix(string(n.ID), topology.SyntheticNICPrefix)
			if !ok || rest == "" || strings.Trim(rest, "0123456789") != "" {
				return false
			}
			any = true
		}
	}
	return any
}

// podRequest is what kubelet's topology manager aligns of a resource for
// the whole pod: Kubernetes' effective request (sidecars and init
// containers counted as Kubernetes counts them) without the pod overhead.
// Negative values count as 0.
func podRequest(p *corev1.Pod, name corev1.ResourceName, milli bool) int64 {
	return quantity(resourcehelper.PodRequests(p, resourcehelper.PodResourcesOptions{ExcludeOverhead: true})[name], milli)
}

// quantity is q in units (milli: thousandths); negative values count as 0.
func quantity(q resource.Quantity, milli bool) int64 {
	if q.Sign() <= 0 {
		return 0
	}
	if milli {
		return q.MilliValue()
	}
	return q.Value()
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
// NICs, sorted), AnnotationNUMA (the zones' NUMA ids), AnnotationS0 (the
// distinct leaves of those NICs, in the order the NICs first reach them,
// from f; a NIC f does not know gets its synthetic unknown leaf) and, for a
// pod split by container, AnnotationContainers. f may be
// nil. It is the one encoder of these keys: the plugin writes them at bind
// and after adopting what a KCNR lists, the example generator for its
// running pods.
func (r Reservation) Annotations(f *topology.Fabric) map[string]string {
	nics := r.NICs()
	s0 := make([]topology.S0ID, 0, len(nics))
	for _, n := range nics {
		id, ok := topology.S0ID(""), false
		if f != nil {
			id, ok = f.NICLeaf(r.Node, n)
		}
		if !ok {
			id = topology.UnknownS0(r.Node, n)
		}
		if !slices.Contains(s0, id) {
			s0 = append(s0, id)
		}
	}
	out := map[string]string{
		AnnotationNICs: FormatNICs(nics),
		AnnotationNUMA: FormatNUMA(r.NUMAs()),
		AnnotationS0:   FormatS0(s0),
	}
	if len(r.Containers) > 0 {
		out[AnnotationContainers] = FormatContainers(r.Containers)
	}
	return out
}
