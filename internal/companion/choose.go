package companion

import (
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"volcano.sh/volcano/pkg/scheduler/api"

	"github.com/rdmatopo/rdmatopo/core/ledger"
	"github.com/rdmatopo/rdmatopo/core/placement"
	"github.com/rdmatopo/rdmatopo/core/topology"
	"github.com/rdmatopo/rdmatopo/plugins/rdmatopology"
)

// Gang keys the companion recognises, most specific first.
const (
	// KueuePodGroupLabel names a Kueue pod group (plain pods).
	KueuePodGroupLabel = "kueue.x-k8s.io/pod-group-name"
	// JobSetNameLabel names a pod's JobSet (Kubeflow Trainer's TrainJobs
	// run as JobSets of the same name).
	JobSetNameLabel = "jobset.sigs.k8s.io/jobset-name"
)

// GangKey is the gang a pod belongs to, "namespace/kind:name": its Volcano
// PodGroup (scheduling.k8s.io/group-name), Kueue pod group or JobSet
// (TrainJob); "" for a pod of no gang.
func GangKey(p *corev1.Pod) string {
	if g := p.Annotations[ledger.GroupNameAnnotation]; g != "" {
		return p.Namespace + "/podgroup:" + g
	}
	if g := p.Labels[KueuePodGroupLabel]; g != "" {
		return p.Namespace + "/kueue:" + g
	}
	if g := p.Labels[JobSetNameLabel]; g != "" {
		return p.Namespace + "/jobset:" + g
	}
	return ""
}

// Request is one bind to answer: the pod, its target node, and what the
// replica knows of the cluster.
type Request struct {
	Pod  *corev1.Pod
	Node string
	// Fabric is the current fabric.
	Fabric *topology.Fabric
	// OnNode are the pods bound to the node (the pod itself excluded).
	OnNode []*corev1.Pod
	// Gang are the other pods of the pod's gang, bound or not.
	Gang []*corev1.Pod
	// Bookings are the node's bookings (the book's current state).
	Bookings Bookings
	// Booked returns a pod's booking and its node, if the book holds one
	// (a gang pod whose bind the informer does not show yet).
	Booked func(uid string) (string, Booking, bool)
}

// Choice is the NICs chosen for a pod.
type Choice struct {
	Assignment placement.Assignment
	// Tier is the gang's tier with the pod placed so; HighestTier and Hard
	// are its contract.
	Tier        placement.Tier
	HighestTier placement.Tier
	Hard        bool
	// Leaves counts the gang's leaves with the pod placed so.
	Leaves int
}

// Chooser picks a pod's NUMA zone(s) and NICs on the node its scheduler
// chose, with the planner's objective.
type Chooser struct {
	Config topology.Config
}

// RequestsRDMA reports whether the pod requests the RDMA resource.
func (c *Chooser) RequestsRDMA(p *corev1.Pod) bool {
	return c.shape(p).NICs > 0
}

// shape is the pod's need, as the scheduler computes it.
func (c *Chooser) shape(p *corev1.Pod) placement.Shape {
	cfg := c.Config.WithDefaults()
	return rdmatopology.ShapeOf(p, api.GetPodResourceRequest(p), corev1.ResourceName(cfg.GPUResource), corev1.ResourceName(cfg.RDMAResource))
}

// Ledger is the book of a node as the scheduler keeps it: the bound pods'
// annotations (ledger.Rebuild), then the bookings of pods not among them,
// each keeping the NICs no earlier holder has; Confirm marks those the
// node's KCNR lists, whose NICs the KCNR's own free counts already leave
// out.
func (c *Chooser) Ledger(f *topology.Fabric, node string, onNode []*corev1.Pod, bk Bookings) *ledger.Ledger {
	l, _ := ledger.Rebuild(c.Config, onNode, f)
	uids := make([]string, 0, len(bk))
	for uid := range bk {
		uids = append(uids, uid)
	}
	slices.Sort(uids)
	for _, uid := range uids {
		if _, ok := l.Get(uid); ok {
			continue
		}
		x := bk[uid]
		_, _ = l.ReserveUncontested(ledger.Reservation{UID: uid, Namespace: x.Namespace, Name: x.Name, Job: x.Job, Node: node, Zones: x.Zones})
	}
	l.Confirm(f)
	return l
}

// Choose picks the pod's zones and NICs on req.Node: the gang's pods
// already bound (their annotations, or what their KCNR lists, or their
// bookings) are the gang's occupancy, and the planner places the one pod
// on that node so that the gang spans the fewest leaves, then S1s, honouring
// the node's topology policy. ok is false when the node has no zone (or
// zones, where its policy lets a pod span them) with the NICs, GPUs and CPUs
// the pod asks; the reason says why.
func (c *Chooser) Choose(req Request) (*Choice, string, error) {
	f := req.Fabric
	if _, ok := f.Node(req.Node); !ok {
		return nil, fmt.Sprintf("node %s has no RDMA topology the companion knows", req.Node), nil
	}
	l := c.Ledger(f, req.Node, req.OnNode, req.Bookings)
	st := placement.NewState(f, l)
	all := append([]*corev1.Pod{req.Pod}, req.Gang...)
	contract, err := placement.ParseGangContract(nil, placement.MembersOf(all))
	if err != nil {
		contract = placement.DefaultContract()
	}
	occ := c.occupancy(f, req)
	pod := placement.Pod{UID: string(req.Pod.UID), Name: req.Pod.Namespace + "/" + req.Pod.Name, Shape: c.shape(req.Pod)}
	g := placement.Gang{
		Job:         GangKey(req.Pod),
		Pods:        []placement.Pod{pod},
		Need:        1,
		Mode:        placement.ModeSoft,
		HighestTier: placement.TierCluster,
		Occupancy:   occ,
		Allowed:     func(node string, _ int) bool { return node == req.Node },
	}
	var plan *placement.Plan
	var fail *placement.Failure
	// In order: the leaves the gang holds (no new leaf), the leaves the
	// whole gang would take with this pod on this node (its pending pods
	// planned too), the leaves of the S1s the gang holds. The pod takes
	// its NICs from the first set the node has room in.
	// Each set is computed only when the ones before it have no room: the
	// whole-gang plan costs a planner run over the fabric, which a pod
	// that fits under its gang's leaves does not need.
	var prefer []func() map[topology.S0ID]bool
	if occ != nil {
		prefer = append(prefer, func() map[topology.S0ID]bool { return occ.S0s })
	}
	prefer = append(prefer, func() map[topology.S0ID]bool { return c.gangLeaves(st, req, g) })
	if occ != nil {
		prefer = append(prefer, func() map[topology.S0ID]bool { return leavesOfS1s(f, occ.S1s) })
	}
	for _, set := range prefer {
		leaves := set()
		if leaves == nil {
			continue
		}
		if a, ok := st.Fit(req.Node, pod.Shape, leaves); ok {
			a.PodUID = pod.UID
			plan = &placement.Plan{Assignments: []placement.Assignment{a}}
			plan.Tier, plan.S0s = c.tierWith(f, occ, a)
			break
		}
	}
	if plan == nil {
		plan, fail = st.Plan(g)
		if plan != nil {
			plan.Tier, plan.S0s = c.tierWith(f, occ, plan.Assignments[0])
		}
	}
	if plan == nil || len(plan.Assignments) == 0 {
		msg := "no zone of the node holds the pod"
		if fail != nil {
			msg = fail.Message
		}
		return nil, msg, nil
	}
	return &Choice{
		Assignment:  plan.Assignments[0],
		Tier:        plan.Tier,
		HighestTier: contract.HighestTier,
		Hard:        contract.Mode == placement.ModeHard,
		Leaves:      len(plan.S0s),
	}, "", nil
}

// gangLeaves plans the gang's pods not bound yet together with this one,
// this one on its node and the others anywhere, and returns the leaves the
// plan uses: where the pod's NICs keep the gang on the fewest leaves once
// its other pods come (their scheduler will pick their nodes; the HyperNodes
// and labels steer it to the same leaf group). nil when the gang has no
// pending pod or the plan fails.
func (c *Chooser) gangLeaves(st *placement.State, req Request, g placement.Gang) map[topology.S0ID]bool {
	pods := g.Pods
	for _, p := range req.Gang {
		if p.UID == req.Pod.UID || p.Spec.NodeName != "" || p.DeletionTimestamp != nil || !c.RequestsRDMA(p) || c.booked(req, p) {
			continue
		}
		pods = append(pods, placement.Pod{UID: string(p.UID), Name: p.Namespace + "/" + p.Name, Shape: c.shape(p), Group: 1})
	}
	if len(pods) == 1 {
		return nil
	}
	g.Pods, g.Need = pods, len(pods)
	g.Allowed = func(node string, group int) bool { return group == 1 || node == req.Node }
	plan, _ := st.Plan(g)
	if plan == nil {
		return nil
	}
	// Every leaf of the plan: the planner hands its slots to the pods in
	// rank order, so this pod's own slot may be another's in the plan.
	leaves := map[topology.S0ID]bool{}
	for _, a := range plan.Assignments {
		for _, id := range req.Fabric.NICLeaves(a.Node, a.NICs()) {
			leaves[id] = true
		}
	}
	if len(leaves) == 0 {
		return nil
	}
	return leaves
}

// leavesOfS1s lists the leaves of the S1s.
func leavesOfS1s(f *topology.Fabric, s1s map[topology.S1ID]bool) map[topology.S0ID]bool {
	out := map[topology.S0ID]bool{}
	for id := range s1s {
		for _, l := range f.LeavesOf(id) {
			out[l] = true
		}
	}
	return out
}

// tierWith is the gang's tier and leaves once the pod holds a.
func (c *Chooser) tierWith(f *topology.Fabric, occ *placement.Occupancy, a placement.Assignment) (placement.Tier, []topology.S0ID) {
	nodes := map[string]bool{a.Node: true}
	leaves := map[topology.S0ID]bool{}
	s1s := map[topology.S1ID]bool{}
	if occ != nil {
		for n := range occ.Nodes {
			nodes[n] = true
		}
		for l := range occ.S0s {
			leaves[l] = true
		}
		for s := range occ.S1s {
			s1s[s] = true
		}
	}
	for _, id := range f.NICLeaves(a.Node, a.NICs()) {
		leaves[id] = true
		if l, ok := f.Leaf(id); ok {
			s1s[l.S1] = true
		}
	}
	out := make([]topology.S0ID, 0, len(leaves))
	for l := range leaves {
		out = append(out, l)
	}
	slices.Sort(out)
	return placement.TierOf(len(nodes), len(leaves), max(1, len(s1s))), out
}

// booked reports whether the book holds a booking of the pod.
func (c *Chooser) booked(req Request, p *corev1.Pod) bool {
	if req.Booked == nil {
		return false
	}
	_, _, ok := req.Booked(string(p.UID))
	return ok
}

// occupancy is where the gang's other bound pods hold NICs: what their
// node's KCNR lists, else their annotations, else their bookings (which
// also count the pods whose bind the informer does not show yet).
func (c *Chooser) occupancy(f *topology.Fabric, req Request) *placement.Occupancy {
	occ := &placement.Occupancy{Nodes: map[string]bool{}, S0s: map[topology.S0ID]bool{}, S1s: map[topology.S1ID]bool{}}
	for _, p := range req.Gang {
		if p.UID == req.Pod.UID || p.DeletionTimestamp != nil || !c.RequestsRDMA(p) {
			continue
		}
		node, nics := c.nicsOf(f, p, req)
		if len(nics) == 0 {
			continue
		}
		occ.Nodes[node] = true
		occ.Pods++
		for _, id := range f.NICLeaves(node, nics) {
			occ.S0s[id] = true
			if leaf, ok := f.Leaf(id); ok {
				occ.S1s[leaf.S1] = true
			}
		}
	}
	if len(occ.Nodes) == 0 {
		return nil
	}
	return occ
}

// nicsOf is the node and NICs a gang pod holds: what its KCNR lists, else
// its annotation (bound pods), else its booking (bound or not, as the
// informer shows it).
func (c *Chooser) nicsOf(f *topology.Fabric, p *corev1.Pod, req Request) (string, []topology.NICID) {
	if p.Spec.NodeName != "" {
		if r, ok := ledger.Listed(c.Config, p, f); ok {
			return p.Spec.NodeName, r.NICs()
		}
		if nics, err := ledger.ParseNICs(p.Annotations[ledger.AnnotationNICs]); err == nil && len(nics) > 0 {
			return p.Spec.NodeName, nics
		}
	}
	if req.Booked != nil {
		if node, x, ok := req.Booked(string(p.UID)); ok && (p.Spec.NodeName == "" || p.Spec.NodeName == node) {
			return node, x.NICs()
		}
	}
	return "", nil
}

// Annotations are what the webhook writes on the Binding for a choice:
// rdmatopo's pod keys and katalyst's numa_bind_result.
func (c *Choice) Annotations(f *topology.Fabric) map[string]string {
	a := c.Assignment
	out := ledger.Reservation{Node: a.Node, Zones: a.Zones, Containers: a.Containers}.Annotations(f)
	out[rdmatopology.AnnotationNUMABindResult] = out[ledger.AnnotationNUMA]
	return out
}
