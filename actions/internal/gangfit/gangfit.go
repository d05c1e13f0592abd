// Package gangfit tells the topology actions what Kubernetes will admit for
// the pods of a gang: on which nodes each pod may go, by Volcano's own
// predicate chain (taints and tolerations, node selectors and affinity,
// host ports, pod (anti-)affinity, topology spread, the node's pod limit,
// volumes), and how many of the gang's pods one node takes, by every
// resource the pods request and the conflicts among the gang's own pods
// (host ports, required anti-affinity). topology-allocate and
// topology-preempt both plan through it, so neither keeps a filter of its
// own.
//
// Node sets are computed per group of pods the predicates cannot tell
// apart (same namespace, selector, affinity, tolerations, ports, volumes,
// spread constraints; and labels, when a pod of the session has required
// anti-affinity that could match them), once per session, by walking the
// chain for one pod of the group over every node of the fabric, with the
// rdma-topology plugin's own NIC check left to the planner and its hold
// check to the admission (plugin.Topology.WithoutNICCheck). Pods that
// differ only by their host ports derive their set from that of the same
// pods without them (ports.go).
//
// Beside the node sets, the package holds what else both actions do alike
// with a gang: its planner request (Nodes.Request), the claims that keep it
// out of rooms (ClaimedAgainst) and the end of a statement (Settle).
package gangfit

import (
	"crypto/sha256"
	"encoding/json"

	v1 "k8s.io/api/core/v1"
	"volcano.sh/volcano/pkg/scheduler/api"
	"volcano.sh/volcano/pkg/scheduler/framework"

	"github.com/rdmatopo/rdmatopo/actions/internal/plugin"
	"github.com/rdmatopo/rdmatopo/core/placement"
	"github.com/rdmatopo/rdmatopo/core/preemption"
)

// Mode says which of Volcano's readings of a predicate failure applies.
type Mode int

const (
	// ForAllocate refuses a node on any failure
	// (SessionState.PredicateForAllocateAction): the gang goes on what is free.
	ForAllocate Mode = iota
	// ForPreempt refuses a node only on failures evictions cannot resolve
	// (SessionState.PredicateForPreemptAction): taints, selectors, affinity.
	ForPreempt
)

// Nodes answers, for one session and one action, which nodes the pods of
// gangs may use. It is not safe for concurrent use.
type Nodes struct {
	ssn  *framework.Session
	topo plugin.Topology
	mode Mode
	// fabric lists the session's nodes the fabric knows, sorted: the only
	// nodes a gang's RDMA pods are planned on.
	fabric []string
	// usable counts the fabric nodes in the session that are schedulable.
	usable int
	// labelsMatter is set when a pod of the session has required pod
	// anti-affinity: pods' own labels then decide where they may go.
	labelsMatter bool
	groups       map[[32]byte]int
	sets         []*group
	// heldOn says what other gangs' preemption holds keep on a node
	// (preemption.Access.KeptOn); nil: nothing.
	heldOn func(job, node string) ([]preemption.HoldTask, string)
	// roomOn says what the room kept for other gangs' lost pods keeps on
	// a node (plugin.Topology.RoomKeptOn); nil: nothing.
	roomOn func(job api.JobID, node string) (*api.Resource, string)
	// touched logs, in order, the node of every task allocated, pipelined,
	// evicted or taken back in the session since New (the session's event
	// handlers), and anyNode where such a task has required pod
	// anti-affinity, whose terms reach other nodes. A stale group
	// re-walks only the nodes logged since it was computed.
	touched []string
	// carry holds the node sets kept across sessions (carry.go); nil when
	// they cannot be carried in this session.
	carry *Carry
	// ports indexes the host ports of the pods on each node as the session
	// opened, for groups derived from a base (ports.go); nil until one is
	// computed. portsSeen holds those of the nodes whose pods changed in
	// the session, read at touched's length portsAt.
	ports     *portIndex
	portsSeen map[string][]int32
	portsAt   int
}

// anyNode in Nodes.touched stands for a change that may reach every node.
const anyNode = "\x00any"

// group is one set of pods the predicates treat alike.
type group struct {
	rep *api.TaskInfo
	// allowed is nil until computed.
	allowed map[string]bool
	// refused holds each refused node's predicate error, for reasons.
	refused map[string]error
	// all is set when every usable fabric node admits the group.
	all bool
	// stale is set when pods placed since the group was computed may
	// change what its pods may use (Changed); at is the length of
	// Nodes.touched when it was computed, preRefused whether the
	// pre-predicates refused every node then.
	stale      bool
	at         int
	preRefused bool
	// carried is where the set is kept for the next sessions (nil: not
	// carried); fromCarry is set while the set taken over from there has
	// not been brought up to date, redo lists the nodes that must be
	// walked for it.
	carried   *carriedSet
	fromCarry bool
	redo      []string
	// base, for pods with host ports, is the group of the same pods
	// without them, which the set is derived from (ports.go); baseAt is
	// the base's at when the set was.
	base   *group
	baseAt int
}

// New returns the node sets of one session, read with mode, taking over
// the sets carry kept from the action's earlier sessions (nil: none are
// carried).
func New(ssn *framework.Session, topo plugin.Topology, mode Mode, carry *Carry) *Nodes {
	access := topo.Preemption()
	n := &Nodes{ssn: ssn, topo: topo, mode: mode, groups: map[[32]byte]int{}, heldOn: access.KeptOn,
		roomOn: topo.RoomKeptOn}
	// touch logs a task's node; with stale, every set is walked again
	// there before its next use.
	touch := func(e *framework.Event, stale bool) {
		if e.Task == nil {
			return
		}
		name := e.Task.NodeName
		if hasRequiredAntiAffinity(e.Task.Pod) {
			name = anyNode
		}
		n.touched = append(n.touched, name)
		if n.carry != nil {
			n.carry.touched[name] = true
		}
		if stale {
			for _, s := range n.sets {
				s.stale = true
			}
		}
	}
	ssn.AddEventHandler(&framework.EventHandler{
		// A placed pod with host ports or required anti-affinity changes
		// what other pods may use (Changed).
		AllocateFunc: func(e *framework.Event) {
			touch(e, e.Task != nil && e.Task.Pod != nil && (hasHostPort(e.Task.Pod) || hasRequiredAntiAffinity(e.Task.Pod)))
		},
		// A pod taken back (a discarded statement, an eviction) may free
		// what a set refused: its ports, its place under the node's pod
		// limit.
		DeallocateFunc: func(e *framework.Event) { touch(e, true) },
	})
	// NodeNames is sorted, and so is what is kept of it.
	for _, name := range access.Fabric().NodeNames() {
		ni, ok := ssn.Nodes[name]
		if !ok {
			continue
		}
		n.fabric = append(n.fabric, name)
		if ni.Node != nil && !ni.Node.Spec.Unschedulable {
			n.usable++
		}
	}
	for _, ni := range ssn.Nodes {
		for _, t := range ni.Tasks {
			if hasRequiredAntiAffinity(t.Pod) {
				n.labelsMatter = true
				break
			}
		}
		if n.labelsMatter {
			break
		}
	}
	n.carry = n.openCarry(carry)
	return n
}

// Group returns the node group of a task (placement.Pod.Group).
func (n *Nodes) Group(task *api.TaskInfo) int {
	key := n.keyOf(task)
	if g, ok := n.groups[key]; ok {
		return g
	}
	g := len(n.sets)
	n.groups[key] = g
	s := &group{rep: task}
	n.sets = append(n.sets, s)
	if base, ok := n.portedBase(task); ok {
		s.base = base
	} else {
		n.takeOver(key, s)
	}
	return g
}

// keyOf is what the predicates read of a pod, hashed.
func (n *Nodes) keyOf(task *api.TaskInfo) [32]byte {
	pod := task.Pod
	if pod == nil {
		pod = &v1.Pod{}
	}
	type portKey struct {
		IP       string
		Protocol v1.Protocol
		Port     int32
	}
	var ports []portKey
	for _, c := range pod.Spec.Containers {
		for _, p := range c.Ports {
			if p.HostPort > 0 {
				ports = append(ports, portKey{p.HostIP, p.Protocol, p.HostPort})
			}
		}
	}
	key := struct {
		Namespace string
		Selector  map[string]string
		Affinity  *v1.Affinity
		Tol       []v1.Toleration
		Ports     []portKey
		Volumes   []v1.Volume
		Spread    []v1.TopologySpreadConstraint
		Labels    map[string]string `json:",omitempty"`
		Job       api.JobID         `json:",omitempty"`
	}{pod.Namespace, pod.Spec.NodeSelector, pod.Spec.Affinity, pod.Spec.Tolerations, ports, pod.Spec.Volumes,
		pod.Spec.TopologySpreadConstraints, nil, ""}
	if n.labelsMatter {
		key.Labels = pod.Labels
	}
	if dependsOnPods(pod) {
		// Pod affinity and spread count the pods already placed, which
		// change as gangs are placed: such pods share sets within their
		// job only.
		key.Job = task.Job
		key.Labels = pod.Labels
	}
	data, _ := json.Marshal(key)
	return sha256.Sum256(data)
}

// Allowed reports whether pods of group may use node.
func (n *Nodes) Allowed(node string, g int) bool {
	if g < 0 || g >= len(n.sets) {
		return false
	}
	return n.compute(n.sets[g]).allowed[node]
}

// Filter returns the planner's node filter for a gang of the given pods
// (their Group from Group), limited to scope when it is not nil; nil when
// nothing limits the nodes (the planner then shares its per-leaf
// statistics).
func (n *Nodes) Filter(pods []placement.Pod, scope map[string]bool) func(node string, group int) bool {
	constrained := scope != nil
	for _, p := range pods {
		if g := p.Group; g < 0 || g >= len(n.sets) || !n.compute(n.sets[g]).all {
			constrained = true
		}
	}
	if !constrained {
		return nil
	}
	return func(node string, g int) bool {
		if scope != nil && !scope[node] {
			return false
		}
		return n.Allowed(node, g)
	}
}

// Request is the planner request of the job's pending RDMA tasks rdma
// (plugin.Topology.Gang: the pods in rank order, their shapes, the
// gang's contract and occupancy), with each pod's group, what the
// session's predicates admit (Allowed, Admit) and how many of the pods
// the gang needs beside its others pending tasks without RDMA (Need).
// Both actions plan a gang from it. The error is the job's invalid
// contract or rank annotation.
func (n *Nodes) Request(job *api.JobInfo, rdma []*api.TaskInfo, others int) (placement.Gang, error) {
	j, err := n.topo.Gang(job, rdma...)
	if err != nil {
		return j.Request, err
	}
	g := j.Request
	// Groups are numbered in task order, as the tasks were given.
	groups := make(map[string]int, len(rdma))
	for _, t := range rdma {
		groups[string(t.UID)] = n.Group(t)
	}
	for i := range g.Pods {
		g.Pods[i].Group = groups[g.Pods[i].UID]
	}
	g.Allowed = n.Filter(g.Pods, nil)
	g.Admit = n.Admit(rdma, nil)
	need := int(job.MinAvailable) - int(job.ReadyTaskNum()) - others
	g.Need = max(0, min(need, len(rdma)))
	g.Fewer = fewerPods(job, rdma, g)
	return g, nil
}

// Refused explains, for a group no node admits, why (Volcano's "0/N nodes
// are unavailable: ..." with counts per reason); "" when some node admits
// it.
func (n *Nodes) Refused(g int) string {
	if g < 0 || g >= len(n.sets) {
		return ""
	}
	s := n.compute(n.sets[g])
	if len(s.allowed) > 0 || len(s.refused) == 0 {
		return ""
	}
	errs := api.NewFitErrors()
	for _, name := range n.fabric {
		if err, ok := s.refused[name]; ok {
			errs.SetNodeError(name, err)
		}
	}
	return errs.Error()
}

// Refusals returns the fabric nodes the predicate chain refuses pods of
// group g on, with the chain's error, brought up to date now (which walks
// the chain, its pre-predicates included, for the group's pod). The map
// is the set's own: read it only, and only until the session's pods
// change. Nodes outside the fabric are not in it.
func (n *Nodes) Refusals(g int) map[string]error {
	if g < 0 || g >= len(n.sets) {
		return nil
	}
	return n.compute(n.sets[g]).refused
}

// Changed marks the node sets stale after tasks were placed whose
// presence changes what other pods may use (host ports, required
// anti-affinity): the next use walks the predicates again where pods
// changed since (compute). Pod counts and resources are read live by
// Admit.
func (n *Nodes) Changed(tasks []*api.TaskInfo) {
	if n == nil {
		return
	}
	for _, t := range tasks {
		if t.Pod != nil && (hasHostPort(t.Pod) || hasRequiredAntiAffinity(t.Pod)) {
			for _, s := range n.sets {
				s.stale = true
			}
			if hasRequiredAntiAffinity(t.Pod) && !n.labelsMatter {
				// Labels now decide: groups formed without them are
				// formed again, and none is carried.
				n.labelsMatter = true
				n.groups = map[[32]byte]int{}
				n.sets = nil
				if n.carry != nil {
					n.carry.touched[anyNode] = true
					n.carry = nil
				}
			}
			return
		}
	}
}

// compute walks the predicate chain for the group's pod over the fabric's
// nodes, once; and again for a stale group, over the nodes whose pods
// changed since (every node when a changed pod has required anti-affinity,
// when the group's own pods depend on other pods' placement, or when the
// pre-predicates refused the group last time).
func (n *Nodes) compute(s *group) *group {
	if s.base != nil {
		return n.computePorted(s)
	}
	if s.allowed != nil && !s.stale {
		return s
	}
	var nodes []string
	switch {
	case s.fromCarry:
		// Taken over from the last sessions: the nodes changed since,
		// and those changed in this session before now.
		if since := n.touchedSince(0); since != nil {
			nodes = n.inFabricOrder(s.redo, since)
		}
		s.fromCarry, s.redo = false, nil
	case s.allowed != nil && !s.preRefused && (s.rep.Pod == nil || !dependsOnPods(s.rep.Pod)):
		nodes = n.touchedSince(s.at)
	}
	if nodes == nil {
		s.allowed, s.refused, nodes = map[string]bool{}, map[string]error{}, n.fabric
	}
	s.stale, s.at, s.preRefused = false, len(n.touched), false
	n.walk(s, func() []string { return nodes })
	s.all = len(s.allowed) >= n.usable
	n.keep(s)
	return s
}

// walk runs the pre-predicates of the group's pod, then the predicate
// chain on the nodes listed (asked for after the pre-predicates), with the
// plugin's own checks left out (WithoutNICCheck), and records each node's
// answer in the set. When the pre-predicates refuse the pod, every fabric
// node is refused with their error.
func (n *Nodes) walk(s *group, nodes func() []string) {
	task := s.rep
	n.topo.WithoutNICCheck(task, func() {
		// The pre-predicates fill the cycle state the predicates read
		// (ports, pod affinity, spread) for this pod.
		if err := n.ssn.PrePredicateFn(task); err != nil {
			s.allowed, s.refused, s.preRefused = map[string]bool{}, map[string]error{}, true
			for _, name := range n.fabric {
				s.refused[name] = err
			}
			return
		}
		for _, name := range nodes() {
			if err := n.predicate(task, n.ssn.Nodes[name]); err != nil {
				s.refused[name] = err
				delete(s.allowed, name)
				continue
			}
			s.allowed[name] = true
			delete(s.refused, name)
		}
	})
}

// predicate walks the session's predicate chain for task on node, read
// with the mode.
func (n *Nodes) predicate(task *api.TaskInfo, node *api.NodeInfo) error {
	if n.mode == ForPreempt {
		return n.ssn.PredicateForPreemptAction(task, node)
	}
	return n.ssn.PredicateForAllocateAction(task, node)
}

// inFabricOrder lists the fabric nodes named in a or b, in fabric order
// (never nil).
func (n *Nodes) inFabricOrder(a, b []string) []string {
	want := make(map[string]bool, len(a)+len(b))
	for _, name := range a {
		want[name] = true
	}
	for _, name := range b {
		want[name] = true
	}
	out := make([]string, 0, len(want))
	for _, name := range n.fabric {
		if want[name] {
			out = append(out, name)
		}
	}
	return out
}

// touchedSince lists the fabric nodes logged in touched from index at on,
// in fabric order; nil when a logged change may reach every node.
func (n *Nodes) touchedSince(at int) []string {
	seen := map[string]bool{}
	for _, name := range n.touched[at:] {
		if name == anyNode {
			return nil
		}
		seen[name] = true
	}
	out := []string{}
	for _, name := range n.fabric {
		if seen[name] {
			out = append(out, name)
		}
	}
	return out
}

// hasHostPort reports a container port bound on the host.
func hasHostPort(pod *v1.Pod) bool {
	for _, c := range pod.Spec.Containers {
		for _, p := range c.Ports {
			if p.HostPort > 0 {
				return true
			}
		}
	}
	return false
}

// hasRequiredAntiAffinity reports required pod anti-affinity terms.
func hasRequiredAntiAffinity(pod *v1.Pod) bool {
	return pod != nil && pod.Spec.Affinity != nil && pod.Spec.Affinity.PodAntiAffinity != nil &&
		len(pod.Spec.Affinity.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution) > 0
}

// dependsOnPods reports constraints whose verdict depends on the pods
// placed: required pod affinity or anti-affinity, topology spread.
func dependsOnPods(pod *v1.Pod) bool {
	if len(pod.Spec.TopologySpreadConstraints) > 0 || hasRequiredAntiAffinity(pod) {
		return true
	}
	a := pod.Spec.Affinity
	return a != nil && a.PodAffinity != nil && len(a.PodAffinity.RequiredDuringSchedulingIgnoredDuringExecution) > 0
}
