package sim

import (
	"fmt"
	"sort"

	corev1 "k8s.io/api/core/v1"
	schedulingv1beta1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"

	"github.com/rdmatopo/rdmatopo/actions/topologypreempt"
	"github.com/rdmatopo/rdmatopo/core/ledger"
	"github.com/rdmatopo/rdmatopo/core/placement"
	"github.com/rdmatopo/rdmatopo/core/topology"
	"github.com/rdmatopo/rdmatopo/internal/sim/nodeagent"
	"github.com/rdmatopo/rdmatopo/plugins/rdmatopology"
)

// PodPlacement is where one workload pod landed, seen through the fabric.
type PodPlacement struct {
	Namespace string
	Name      string
	// Job is the pod's PodGroup as "namespace/name".
	Job string
	// Rank is the pod's rank in its gang (placement.Ranks), -1 when an
	// rdmatopo.io/rank of the gang is invalid.
	Rank int
	// Node is empty for an unplaced pod.
	Node string
	// NUMA is the NUMA id of the pod's NICs; -1 when they span zones, or
	// the pod holds no NIC.
	NUMA int
	// NICs are the pod's NICs (PCI addresses, sorted).
	NICs []string
	// S0 and S1 are the distinct leaves and miniPods of those NICs
	// (sorted); a NIC of unknown leaf has a synthetic leaf of its own, and
	// an unknown S1 is left out.
	S0 []string
	S1 []string
	// Evicted is the eviction reason of a pod the scheduler evicted.
	Evicted string
	// Annotations are the keys the scheduler wrote on a bound pod that
	// requests RDMA: rdmatopo.io/* and katalyst's numa_bind_result (as the
	// pod carries them, patches after an adoption included); empty
	// otherwise.
	Annotations map[string]string
}

// JobPlacement is the outcome of one workload PodGroup.
type JobPlacement struct {
	Namespace string
	Name      string
	// Owner is the controller object the PodGroup was expanded from
	// ("Job/name", "PyTorchJob/name"), empty for a plain PodGroup.
	Owner     string
	MinMember int32
	// Placed is true when at least minMember (and at least one) of the
	// job's pods are bound.
	Placed    bool
	BoundPods int
	// Pods is the number of the job's pods.
	Pods int
	// RDMA is true when a pod of the job requests the RDMA resource.
	RDMA bool
	// Tier is the narrowest of node, s0, s1, cluster holding every NIC of
	// the job's bound pods; empty for an unplaced job or one without NICs.
	Tier string
	S0   []string
	S1   []string
	// Reason says what blocks an unplaced job; empty when placed.
	Reason string
	// WaitedSeconds is how long the job waited on the simulated clock
	// (Simulator.Waited): from its first failed attempt to its placement,
	// 0 when placed at once; for an unplaced job, until the last cycle.
	WaitedSeconds float64
	// RingCrossings counts the leaf changes along the ring of its bound
	// pods with NICs in rank order (a pod's leaf: its S0 list): its number
	// of leaves when the ranks are contiguous, 0 on one leaf.
	RingCrossings int
	// Segments, for a gang with rdmatopo.io/segment-size, are its blocks of
	// consecutive ranks with the leaves their pods use.
	Segments []SegmentPlacement
}

// Eviction is one pod the scheduler evicted during the simulation.
type Eviction struct {
	Namespace string
	Name      string
	// Job is the pod's PodGroup as "namespace/name" (empty for a pod of
	// none).
	Job string
	// Preemptor is the gang ("namespace/podgroup") that topology-preempt
	// evicted the pod for; empty when another action evicted it.
	Preemptor string
	// Reason is the eviction's reason.
	Reason string
}

// Report is the outcome of a simulation, workload pods and jobs only, in
// arrival order.
type Report struct {
	Pods []PodPlacement
	Jobs []JobPlacement
	// Evictions lists every evicted pod (workload and cluster pods), in
	// arrival order.
	Evictions []Eviction
	Cycles    int
}

// nicPlace is what the fabric says about one NIC of one node.
type nicPlace struct {
	numa  int // -1 unknown
	s0    topology.S0ID
	s1    topology.S1ID
	known bool // the fabric lists the NIC
}

// locate finds a node's NIC in the fabric. A NIC the fabric does not list
// is a leaf of its own (topology.UnknownS0) in the node's S1.
func locate(f *topology.Fabric, node string, nic topology.NICID) nicPlace {
	n, ok := f.Node(node)
	if !ok {
		return nicPlace{numa: -1, s0: topology.UnknownS0(node, nic)}
	}
	for _, z := range n.Zones {
		for _, c := range z.NICs {
			if c.ID != nic {
				continue
			}
			p := nicPlace{numa: z.ID, s0: c.S0, s1: n.S1, known: true}
			if l, ok := f.Leaf(c.S0); ok {
				p.s1 = l.S1
			}
			return p
		}
	}
	return nicPlace{numa: -1, s0: topology.UnknownS0(node, nic), s1: n.S1}
}

// BuildReport summarises the simulator's workload: per pod its node and
// NICs, per PodGroup whether it is placed, at which tier, and why not. A
// pod's NICs are the realized ones: what its node's KCNR lists for it (the
// node agent's choice); only a pod no KCNR lists yet is reported with the
// NICs of its rdmatopo.io/nics annotation.
func BuildReport(s *Simulator) *Report {
	rep := &Report{Pods: []PodPlacement{}, Jobs: []JobPlacement{}, Evictions: []Eviction{}, Cycles: s.Cycle()}
	jobs := reportPods(s, rep)
	events := s.Events()
	for _, pg := range s.PodGroups() {
		key := pg.Namespace + "/" + pg.Name
		a := jobs.get(key)
		jp := JobPlacement{Namespace: pg.Namespace, Name: pg.Name, Owner: ownerOf(pg),
			MinMember: pg.Spec.MinMember, BoundPods: a.bound, Pods: a.pods, RDMA: a.rdma, S0: []string{}, S1: []string{}}
		jp.Placed = a.bound > 0 && int32(a.bound) >= pg.Spec.MinMember
		if jp.Placed && len(a.leaves) > 0 {
			jp.Tier = placement.TierOf(len(a.nodes), len(a.leaves), len(a.s1s)).String()
			jp.S0 = sortedS0(a.leaves)
			jp.S1 = sortedS1(a.s1s)
		}
		if !jp.Placed {
			jp.Reason = unplacedReason(pg, events, a.pods, a.pendingMsg)
		}
		jp.WaitedSeconds = s.Waited(pg.Namespace, pg.Name).Seconds()
		entries := make([]*PodPlacement, len(a.entries))
		for i, at := range a.entries {
			entries[i] = &rep.Pods[at]
		}
		jp.RingCrossings, jp.Segments = s.rankJob(pg, entries, a.objs)
		rep.Jobs = append(rep.Jobs, jp)
	}
	return rep
}

// jobAcc is what a job's pods add up to in a report.
type jobAcc struct {
	nodes  map[string]bool
	leaves map[topology.S0ID]bool
	s1s    map[topology.S1ID]bool
	bound  int
	pods   int
	rdma   bool
	// pendingMsg is the scheduling condition of a pending pod.
	pendingMsg string
	// entries index the job's pods in the report's Pods; objs are the
	// pods themselves, in the same order.
	entries []int
	objs    []*corev1.Pod
}

// jobAccs are the jobs' accumulations by "namespace/podgroup".
type jobAccs map[string]*jobAcc

func (m jobAccs) get(job string) *jobAcc {
	a, ok := m[job]
	if !ok {
		a = &jobAcc{nodes: map[string]bool{}, leaves: map[topology.S0ID]bool{}, s1s: map[topology.S1ID]bool{}}
		m[job] = a
	}
	return a
}

// reportPods adds the workload's pods and the evictions to rep, and
// returns what each job's pods add up to: the NICs the node agent lists
// for a bound pod (else its annotations) decide its leaves.
func reportPods(s *Simulator, rep *Report) jobAccs {
	f := s.Fabric()
	listed := map[string]map[string][]topology.NICID{}
	for name, cnr := range s.cnrs {
		listed[name] = nodeagent.ListedNICs(cnr)
	}
	jobs := jobAccs{}
	for _, ps := range s.Pods() {
		if ps.Evicted != "" {
			rep.Evictions = append(rep.Evictions, evictionOf(ps))
		}
		if !ps.Workload {
			continue
		}
		p := ps.Pod
		job := p.Namespace + "/" + p.Annotations[schedulingv1beta1.KubeGroupNameAnnotationKey]
		pp := PodPlacement{Namespace: p.Namespace, Name: p.Name, Job: job, NUMA: -1,
			NICs: []string{}, S0: []string{}, S1: []string{}, Evicted: ps.Evicted, Annotations: map[string]string{}}
		a := jobs.get(job)
		a.pods++
		rdma := requestsResource(p, s.conf.Topology.RDMAResource)
		if rdma {
			a.rdma = true
		}
		if ps.Evicted == "" && p.Spec.NodeName != "" {
			pp.Node = p.Spec.NodeName
			a.bound++
			if rdma {
				pp.Annotations = SchedulerAnnotations(p)
			}
			nics, ok := listed[p.Spec.NodeName][nodeagent.Consumer(p)]
			if !ok {
				nics = nodeagent.AnnotatedNICs(p)
			}
			fillNICs(f, p, nics, &pp, a.nodes, a.leaves, a.s1s)
		} else if a.pendingMsg == "" {
			a.pendingMsg = scheduledMessage(p)
		}
		rep.Pods = append(rep.Pods, pp)
		a.entries = append(a.entries, len(rep.Pods)-1)
		a.objs = append(a.objs, p)
	}
	return jobs
}

// evictionOf describes an evicted pod.
func evictionOf(ps PodState) Eviction {
	p := ps.Pod
	ev := Eviction{Namespace: p.Namespace, Name: p.Name, Reason: ps.Evicted}
	if g := p.Annotations[schedulingv1beta1.KubeGroupNameAnnotationKey]; g != "" {
		ev.Job = p.Namespace + "/" + g
	}
	ev.Preemptor, _ = topologypreempt.PreemptorOf(ps.Evicted)
	return ev
}

// fillNICs locates a bound pod's NICs in the fabric, adding the pod's
// node, leaves and S1s to the job's sets.
func fillNICs(f *topology.Fabric, p *corev1.Pod, nics []topology.NICID, pp *PodPlacement, nodes map[string]bool,
	leaves map[topology.S0ID]bool, s1s map[topology.S1ID]bool) {
	if len(nics) == 0 {
		return
	}
	nodes[p.Spec.NodeName] = true
	numas := map[int]bool{}
	podLeaves := map[topology.S0ID]bool{}
	podS1 := map[topology.S1ID]bool{}
	unknownNUMA := false
	for _, nic := range nics {
		loc := locate(f, p.Spec.NodeName, nic)
		pp.NICs = append(pp.NICs, string(nic))
		if loc.numa < 0 {
			unknownNUMA = true
		} else {
			numas[loc.numa] = true
		}
		podLeaves[loc.s0], leaves[loc.s0] = true, true
		podS1[loc.s1], s1s[loc.s1] = true, true
	}
	sort.Strings(pp.NICs)
	pp.S0 = sortedS0(podLeaves)
	pp.S1 = sortedS1(podS1)
	switch {
	case !unknownNUMA && len(numas) == 1:
		for id := range numas {
			pp.NUMA = id
		}
	case unknownNUMA && len(numas) == 0:
		// The fabric does not know the NICs: trust the annotation.
		if ids, err := ledger.ParseNUMA(p.Annotations[ledger.AnnotationNUMA]); err == nil && len(ids) == 1 {
			pp.NUMA = ids[0]
		}
	}
}

// SchedulerAnnotations returns the annotations of a pod that the scheduler
// writes: rdmatopo.io/nics, numa and s0, rdmatopo.io/containers for a pod
// split by container, and katalyst's numa_bind_result (not the job
// contract a pod template may carry).
func SchedulerAnnotations(p *corev1.Pod) map[string]string {
	out := map[string]string{}
	for _, k := range []string{ledger.AnnotationNICs, ledger.AnnotationNUMA, ledger.AnnotationS0, ledger.AnnotationContainers, rdmatopology.AnnotationNUMABindResult} {
		if v, ok := p.Annotations[k]; ok && (v != "" || k != ledger.AnnotationContainers) {
			out[k] = v
		}
	}
	return out
}

// requestsResource reports whether a pod's containers request a positive
// amount of the named resource.
func requestsResource(p *corev1.Pod, name string) bool {
	for _, c := range p.Spec.Containers {
		if q, ok := c.Resources.Requests[corev1.ResourceName(name)]; ok && q.Sign() > 0 {
			return true
		}
	}
	return false
}

// sortedS0 lists leaves in order.
func sortedS0(set map[topology.S0ID]bool) []string {
	out := make([]string, 0, len(set))
	for id := range set {
		out = append(out, string(id))
	}
	sort.Strings(out)
	return out
}

// sortedS1 lists known S1s in order (the unknown S1 "" is left out).
func sortedS1(set map[topology.S1ID]bool) []string {
	out := make([]string, 0, len(set))
	for id := range set {
		if id != "" {
			out = append(out, string(id))
		}
	}
	sort.Strings(out)
	return out
}

// ownerOf names a PodGroup's controller ("Kind/name"), if any.
func ownerOf(pg *schedulingv1beta1.PodGroup) string {
	for _, ref := range pg.OwnerReferences {
		if ref.Controller != nil && *ref.Controller {
			return ref.Kind + "/" + ref.Name
		}
	}
	return ""
}

// scheduledMessage returns the message of a pod's PodScheduled=False
// condition.
func scheduledMessage(p *corev1.Pod) string {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse && c.Message != "" {
			return c.Message
		}
	}
	return ""
}

// unplacedReason says what blocks a job, preferring the most specific
// source: a PodGroup still Pending was never admitted by enqueue; else the
// rdma-topology plugin's condition, then Volcano's gang condition, then the
// last warning event on the PodGroup, then a pending pod's condition.
func unplacedReason(pg *schedulingv1beta1.PodGroup, events []Event, pods int, pendingMsg string) string {
	if pods == 0 {
		return "the PodGroup has no pods"
	}
	if pg.Status.Phase == schedulingv1beta1.PodGroupPending || pg.Status.Phase == "" {
		return fmt.Sprintf("not admitted to queue %q by enqueue: the queue's capability or the cluster's idle resources are below the PodGroup's minResources", pg.Spec.Queue)
	}
	var gang string
	for _, c := range pg.Status.Conditions {
		switch {
		case string(c.Type) == string(rdmatopology.ConditionType) && c.Status == corev1.ConditionFalse &&
			c.Reason != rdmatopology.ReasonInvalid && c.Message != "":
			return c.Message
		case c.Type == schedulingv1beta1.PodGroupUnschedulableType && c.Status == corev1.ConditionTrue && c.Message != "":
			gang = c.Message
		}
	}
	if gang != "" {
		return gang
	}
	for i := len(events) - 1; i >= 0; i-- {
		e := events[i]
		if e.Kind == "PodGroup" && e.Namespace == pg.Namespace && e.Name == pg.Name &&
			e.Type == corev1.EventTypeWarning && e.Message != "" {
			return e.Message
		}
	}
	if pendingMsg != "" {
		return pendingMsg
	}
	return "not scheduled"
}
