package gangfit

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"volcano.sh/volcano/pkg/scheduler/api"
	"volcano.sh/volcano/pkg/scheduler/framework"
)

// Node sets carried from one session to the next.
//
// A group's node set is what Volcano's predicate chain answers for its pod
// on every fabric node. Between two sessions that answer changes only on
// nodes whose inputs changed: the Node object (labels, taints,
// unschedulable, allocatable; the informer hands over a new object on
// every change) or the pods on the node (host ports, pod count, idle
// resources for the proportional check). carry keeps, per mode, the sets
// of the groups recently used and, per node, those inputs as the last
// New saw them; a set taken over walks the chain again only on the nodes
// changed since it was last brought up to date (and on nodes it never
// saw), so a session costs a walk over what changed instead of one over
// every node per group.
//
// What the chain reads beyond a node and its pods keeps sets from being
// carried: pods with required anti-affinity anywhere in the session (their
// terms reach other nodes; Nodes.labelsMatter), pods whose verdict depends
// on other pods' placement (dependsOnPods), pods with volumes whose
// checks read PersistentVolumes (claims, ephemeral and CSI volumes), and
// plugins carryPlugin does not accept with predicates enabled in the conf
// (a plugin's predicate may read anything, a clock included).
//
// The action that plans through New owns its Carry: it outlives the
// sessions as the action does. The conf's tiers are part of what the chain
// reads (which plugins, their predicates and arguments): a Carry is
// emptied when they change.
type Carry struct {
	// conf is the tiers' reading (confKey) the sets were walked under.
	conf string
	// seq counts the New calls that used the carry; inputsAt[node] is the
	// seq at which the node's inputs were last seen to change.
	seq      int
	inputs   map[string]nodeInputs
	inputsAt map[string]int
	// sets are the groups recently used, by key.
	sets map[[32]byte]*carriedSet
	// ports indexes the host ports of the pods on each node as the last
	// New saw them (nil until a group with host ports asked).
	ports *portIndex
	// touched holds the nodes of the tasks allocated, pipelined, evicted
	// or taken back since the last New (the session's events; anyNode for
	// one that may reach every node): what changed on them and changed
	// back within a session is not seen by comparing inputs.
	touched map[string]bool
}

// carriedSet is a group's node set as a session left it.
type carriedSet struct {
	allowed map[string]bool
	refused map[string]error
	// seq is the carry's seq of the New whose Nodes last walked the set;
	// used that of the last New whose Nodes asked for it.
	seq, used int
}

// carryKeep is how many New calls an unused set is kept for: a session
// runs topology-allocate, then topology-preempt and topology-reclaim, each
// with a Nodes of its own.
const carryKeep = 4

// carryPlugin reports whether the plugin's predicates (if any) read only
// the pod, the node and the pods on it, or none at all.
func carryPlugin(name string) bool {
	switch name {
	case "priority", "gang", "conformance", "drf", "proportion",
		"nodeorder", "binpack", "predicates", "rdma-topology":
		return true
	}
	return false
}

// confKey reads what the conf's tiers tell the predicate chain: each
// plugin's name, whether its predicates are enabled and its arguments
// (fmt prints maps sorted by key).
func confKey(ssn *framework.Session) string {
	var b strings.Builder
	for _, tier := range ssn.Tiers {
		for _, p := range tier.Plugins {
			fmt.Fprintf(&b, "%s %v %v;", p.Name, p.EnabledPredicate != nil && *p.EnabledPredicate, p.Arguments)
		}
		b.WriteString("|")
	}
	return b.String()
}

// carryAllowed reports whether the session's conf lets node sets be carried.
func carryAllowed(ssn *framework.Session) bool {
	for _, tier := range ssn.Tiers {
		for _, p := range tier.Plugins {
			// Volcano calls a plugin's predicates only when the conf
			// enables them (defaults fill in true when it is loaded).
			if p.EnabledPredicate != nil && *p.EnabledPredicate && !carryPlugin(p.Name) {
				return false
			}
		}
	}
	return true
}

// version names one version of an object: its UID and the
// resourceVersion the API server gave it, which changes with every write.
// An object no API server stored (no resourceVersion: a simulator's, a
// test's) is named by its address instead, which the informers replace on
// every change.
type version struct {
	uid types.UID
	rv  string
	obj any
}

// versionOf names the version of o.
func versionOf(o metav1.Object) version {
	if o.GetResourceVersion() == "" {
		return version{uid: o.GetUID(), obj: o}
	}
	return version{uid: o.GetUID(), rv: o.GetResourceVersion()}
}

// podRef is one pod on a node as the predicates see it: the pod's version
// and its status in the session (Volcano's status changes without a write,
// when a session allocates or pipelines it).
type podRef struct {
	pod    version
	status api.TaskStatus
	// namespace and name order pods of one UID (pods no API server
	// stored may have none).
	namespace, name string
}

// nodeInputs is what the predicate chain reads of one node: its Node
// object's version and its pods'.
type nodeInputs struct {
	node version
	pods []podRef
}

// inputsOf reads a node's inputs, pods in UID order (then namespace and
// name), into reuse's backing array.
func inputsOf(ni *api.NodeInfo, reuse []podRef) nodeInputs {
	in := nodeInputs{pods: reuse[:0]}
	if ni.Node != nil {
		in.node = versionOf(ni.Node)
	}
	for _, t := range ni.Tasks {
		r := podRef{status: t.Status}
		if t.Pod != nil {
			r.pod, r.namespace, r.name = versionOf(t.Pod), t.Pod.Namespace, t.Pod.Name
		}
		in.pods = append(in.pods, r)
	}
	slices.SortFunc(in.pods, func(a, b podRef) int {
		return cmp.Or(cmp.Compare(a.pod.uid, b.pod.uid), cmp.Compare(a.namespace, b.namespace),
			cmp.Compare(a.name, b.name))
	})
	return in
}

// equal reports whether two readings are of the same versions.
func (a nodeInputs) equal(b nodeInputs) bool {
	return a.node == b.node && slices.Equal(a.pods, b.pods)
}

// openCarry brings the action's carry up to date with the session's nodes
// and returns it; nil when sets cannot be carried in this session.
func (n *Nodes) openCarry(c *Carry) *Carry {
	if c == nil || n.labelsMatter || !carryAllowed(n.ssn) {
		return nil
	}
	if key := confKey(n.ssn); c.inputs == nil || c.conf != key {
		*c = Carry{conf: key, inputs: map[string]nodeInputs{}, inputsAt: map[string]int{}, sets: map[[32]byte]*carriedSet{},
			touched: map[string]bool{}}
	}
	c.seq++
	if c.touched[anyNode] {
		clear(c.sets)
	}
	for name := range c.touched {
		c.inputsAt[name] = c.seq
	}
	clear(c.touched)
	seen := make(map[string]bool, len(n.fabric))
	var buf []podRef
	for _, name := range n.fabric {
		seen[name] = true
		old, had := c.inputs[name]
		in := inputsOf(n.ssn.Nodes[name], buf)
		buf = in.pods
		if !had || !in.equal(old) {
			in.pods = slices.Clone(in.pods)
			c.inputs[name] = in
			c.inputsAt[name] = c.seq
			if c.ports != nil {
				c.ports.set(name, n.ssn.Nodes[name])
			}
		}
	}
	for name := range c.inputs {
		if !seen[name] {
			delete(c.inputs, name)
			delete(c.inputsAt, name)
			if c.ports != nil {
				c.ports.set(name, nil)
			}
		}
	}
	for key, s := range c.sets {
		if c.seq-s.used > carryKeep {
			delete(c.sets, key)
		}
	}
	return c
}

// carries reports whether a group's set may be carried.
func carries(pod *v1.Pod) bool {
	if pod == nil || dependsOnPods(pod) {
		return false
	}
	for i := range pod.Spec.Volumes {
		v := &pod.Spec.Volumes[i]
		if v.PersistentVolumeClaim != nil || v.Ephemeral != nil || v.CSI != nil {
			return false
		}
	}
	return true
}

// takeOver starts group s from its carried set, if there is one: the nodes
// changed since it was walked, and the session's nodes it never saw, are
// walked again (compute, through touched); nodes no longer in the session
// are dropped.
func (n *Nodes) takeOver(key [32]byte, s *group) {
	if n.carry == nil || !carries(s.rep.Pod) {
		return
	}
	c := n.carry
	cs, ok := c.sets[key]
	if !ok {
		cs = &carriedSet{}
		c.sets[key] = cs
	}
	cs.used = c.seq
	s.carried = cs
	if cs.allowed == nil {
		return
	}
	s.allowed, s.refused = cs.allowed, cs.refused
	in := make(map[string]bool, len(n.fabric))
	for _, name := range n.fabric {
		in[name] = true
		if c.inputsAt[name] > cs.seq || (!s.allowed[name] && s.refused[name] == nil) {
			s.redo = append(s.redo, name)
		}
	}
	for name := range s.allowed {
		if !in[name] {
			delete(s.allowed, name)
		}
	}
	for name := range s.refused {
		if !in[name] {
			delete(s.refused, name)
		}
	}
	s.stale, s.fromCarry = true, true
}

// keep records a walked group's set for the next sessions.
func (n *Nodes) keep(s *group) {
	if s.carried == nil || s.preRefused {
		if s.carried != nil {
			s.carried.allowed = nil
		}
		return
	}
	s.carried.allowed, s.carried.refused, s.carried.seq = s.allowed, s.refused, n.carry.seq
}
