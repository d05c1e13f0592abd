// What a node admits of a gang beside what the node sets say: idle resources
// (future idle and the victims' for preemption), pod limits, ports and
// anti-affinity among the gang's own pods, and what other gangs' holds keep.

package gangfit

import (
	v1 "k8s.io/api/core/v1"
	k8sframework "k8s.io/kubernetes/pkg/scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/nodeports"
	"volcano.sh/volcano/pkg/scheduler/api"

	"github.com/rdmatopo/rdmatopo/core/placement"
	"github.com/rdmatopo/rdmatopo/core/preemption"
)

// Admit returns the planner's per-node admission for the given tasks of
// one gang (placement.Gang.Admit): a node takes a pod when the resources
// the pod and the gang's pods already planned there request fit what the
// node has, the node's pod limit holds them, and no two of them claim one
// host port or are kept apart by required anti-affinity. What a node has
// is its idle resources for allocate; for preempt, its future idle
// resources plus those of the victims on it (victims, which may be nil).
func (n *Nodes) Admit(tasks, victims []*api.TaskInfo) func(node string, pod placement.Pod, on []placement.Pod) bool {
	a := &admission{n: n, byUID: make(map[string]*api.TaskInfo, len(tasks)),
		freed: map[string]*api.Resource{}, freedPods: map[string]int{},
		infos: map[string]*k8sframework.PodInfo{}, alone: map[string]*k8sframework.NodeInfo{}}
	for _, t := range tasks {
		a.byUID[string(t.UID)] = t
	}
	for _, v := range victims {
		if a.freed[v.NodeName] == nil {
			a.freed[v.NodeName] = api.EmptyResource()
		}
		a.freed[v.NodeName].Add(v.Resreq)
		a.freedPods[v.NodeName]++
	}
	return a.admit
}

// admission is one gang's admission (Nodes.Admit): its tasks, what its
// victims free on each node, and the per-pod caches of what Kubernetes'
// checks read.
type admission struct {
	n     *Nodes
	byUID map[string]*api.TaskInfo
	// freed and freedPods are the victims' resources and count per node.
	freed     map[string]*api.Resource
	freedPods map[string]int
	// infos are the pods' parsed terms; alone, a node holding one pod
	// of the gang alone, for Kubernetes' port check.
	infos map[string]*k8sframework.PodInfo
	alone map[string]*k8sframework.NodeInfo
	// The planner calls the admission for every candidate node of every
	// pod, one call at a time: the pods' requests, and the node's future
	// idle resources, are summed in resources reused from call to call,
	// not in fresh copies.
	sumBuf, roomBuf, limitBuf Scratch
}

func (a *admission) infoOf(t *api.TaskInfo) *k8sframework.PodInfo {
	if pi, ok := a.infos[string(t.UID)]; ok {
		return pi
	}
	pi, err := k8sframework.NewPodInfo(t.Pod)
	if err != nil {
		pi = nil
	}
	a.infos[string(t.UID)] = pi
	return pi
}

func (a *admission) aloneOf(t *api.TaskInfo) *k8sframework.NodeInfo {
	ni, ok := a.alone[string(t.UID)]
	if !ok {
		ni = k8sframework.NewNodeInfo(t.Pod)
		a.alone[string(t.UID)] = ni
	}
	return ni
}

// admit reports whether node takes pod beside the gang's pods on it.
func (a *admission) admit(node string, pod placement.Pod, on []placement.Pod) bool {
	n := a.n
	ni := n.ssn.Nodes[node]
	t := a.byUID[pod.UID]
	if ni == nil || t == nil || ni.Idle == nil || ni.Allocatable == nil {
		return false
	}
	room := ni.Idle
	if n.mode == ForPreempt {
		// The node's future idle resources (in a resource of the
		// admission's own, reused) and what its victims free.
		room = a.roomBuf.FutureIdle(ni)
		if f := a.freed[node]; f != nil {
			room.Add(f)
		}
	}
	// A node that declares no pod limit is not limited here (the
	// predicates plugin, when enabled, refuses every pod there).
	if limit := ni.Allocatable.MaxTaskNum; limit > 0 && len(ni.Tasks)-a.freedPods[node]+len(on)+1 > limit {
		return false
	}
	sum := a.sumBuf.Set(t.InitResreq)
	for _, o := range on {
		ot := a.byUID[o.UID]
		if ot == nil {
			continue
		}
		sum.Add(ot.InitResreq)
		if conflict(t, ot, a.infoOf, a.aloneOf) {
			return false
		}
	}
	if !sum.LessEqual(room, api.Zero) {
		return false
	}
	return a.besideKept(node, ni, t, sum, room)
}

// besideKept reports whether sum, what the gang's pods take on the node,
// also fits beside what other gangs' preemption holds, and the room kept
// for their lost pods, keep there: that is not for this gang (the
// plugin's hold check, against future idle).
func (a *admission) besideKept(node string, ni *api.NodeInfo, t *api.TaskInfo, sum, room *api.Resource) bool {
	n := a.n
	var kept []preemption.HoldTask
	if n.heldOn != nil {
		kept, _ = n.heldOn(string(t.Job), node)
	}
	var lost *api.Resource
	if n.roomOn != nil {
		lost, _ = n.roomOn(t.Job, node)
	}
	if len(kept) == 0 && lost == nil {
		return true
	}
	if !preemption.HostPortsFree(t.Pod, kept) {
		return false
	}
	for _, k := range kept {
		addResources(sum, k.Resreq)
	}
	if lost != nil {
		sum.Add(lost)
	}
	limit := room
	if n.mode != ForPreempt {
		limit = a.limitBuf.FutureIdle(ni)
	}
	return sum.LessEqual(limit, api.Zero)
}

// addResources adds what a hold keeps for one task to r.
func addResources(r *api.Resource, k preemption.Resources) {
	r.MilliCPU += k.MilliCPU
	r.Memory += k.Memory
	for name, v := range k.Scalars {
		r.AddScalar(v1.ResourceName(name), v)
	}
}

// Scratch is an api.Resource reused from one computation to the
// next, its scalar map with it. It is not safe for concurrent use.
type Scratch struct {
	r api.Resource
	m map[v1.ResourceName]float64
}

// Set makes the scratch resource a copy of src (as src.Clone would: no
// scalar map when src has none) and returns it.
func (s *Scratch) Set(src *api.Resource) *api.Resource {
	if s.r.ScalarResources != nil {
		// Kept, or made by an Add since the last Set.
		s.m = s.r.ScalarResources
	}
	s.r = api.Resource{MilliCPU: src.MilliCPU, Memory: src.Memory, MaxTaskNum: src.MaxTaskNum}
	if src.ScalarResources != nil {
		if s.m == nil {
			s.m = make(map[v1.ResourceName]float64, len(src.ScalarResources))
		}
		clear(s.m)
		for k, v := range src.ScalarResources {
			s.m[k] = v
		}
		s.r.ScalarResources = s.m
	}
	return &s.r
}

// FutureIdle makes the scratch resource the node's future idle resources
// and returns it, summed as NodeInfo.FutureIdle sums them: idle, plus
// releasing, less pipelined (an overcommitted node is logged, as there).
func (s *Scratch) FutureIdle(n *api.NodeInfo) *api.Resource {
	return s.Set(n.Idle).Add(n.Releasing).SubWithoutAssert(n.Pipelined)
}

// conflict reports whether two pods of a gang may not share a node: they
// claim one host port, or the required anti-affinity of either matches the
// other (two pods on one node share every topology value of the node).
// infoOf and aloneOf are the gang's per-pod caches of what Kubernetes'
// checks read: the pod's parsed terms, a node holding the pod alone.
func conflict(a, b *api.TaskInfo, infoOf func(*api.TaskInfo) *k8sframework.PodInfo, aloneOf func(*api.TaskInfo) *k8sframework.NodeInfo) bool {
	if a.Pod == nil || b.Pod == nil {
		return false
	}
	// Kubernetes' own port check, against a node holding b alone.
	if hasHostPort(a.Pod) && hasHostPort(b.Pod) && !nodeports.Fits(a.Pod, aloneOf(b)) {
		return true
	}
	for _, pair := range [][2]*api.TaskInfo{{a, b}, {b, a}} {
		pi := infoOf(pair[0])
		if pi == nil {
			continue
		}
		for i := range pi.RequiredAntiAffinityTerms {
			if pi.RequiredAntiAffinityTerms[i].Matches(pair[1].Pod, nil) {
				return true
			}
		}
	}
	return false
}
