package gangfit

import (
	"maps"
	"slices"

	v1 "k8s.io/api/core/v1"
	"volcano.sh/volcano/pkg/scheduler/api"
)

// Groups of pods with host ports.
//
// Host ports are often the one thing that sets a gang's pods apart from
// other gangs' (a rendezvous port per job), so a group keyed by them is new
// for every such gang and would walk the predicate chain over every fabric
// node. Instead such a group is derived from its base: the group of the
// same pods without their host ports, walked (and carried across sessions)
// like any other. Of the chain, only the node-ports check reads a pod's
// host ports, and it refuses a node only when a pod there uses one of the
// same port numbers; so the group's set is the base's, with the chain
// walked again, for the pod with its ports, on the nodes where a pod
// declares one of them.

// bareSuffix ends the name of a pod's copy without host ports; '#' is in
// no Kubernetes object name.
const bareSuffix = "#without-host-ports"

// portedBase returns the base of a group of pods with host ports: the
// group of task's pod without them (Group). ok is false for a pod without
// host ports, or one whose verdict depends on other pods' placement (its
// group is its job's own; it is walked whole).
func (n *Nodes) portedBase(task *api.TaskInfo) (base *group, ok bool) {
	if task.Pod == nil || !hasHostPort(task.Pod) || dependsOnPods(task.Pod) {
		return nil, false
	}
	pod := task.Pod.DeepCopy()
	for i := range pod.Spec.Containers {
		for j := range pod.Spec.Containers[i].Ports {
			pod.Spec.Containers[i].Ports[j].HostPort = 0
		}
	}
	// A name no pod can have: Volcano's predicates plugin remembers, by
	// namespace and name, the pods whose pre-predicates skip a check (the
	// port check, for a pod without host ports) for the whole session, so
	// under the pod's own name the copy would switch the pod's port check
	// off.
	pod.Name += bareSuffix
	bare := *task
	bare.Pod, bare.Name = pod, pod.Name
	return n.sets[n.Group(&bare)], true
}

// computePorted brings a ported group's set up to date from its base.
func (n *Nodes) computePorted(s *group) *group {
	b := n.compute(s.base)
	if s.allowed != nil && !s.stale && s.baseAt == b.at {
		return s
	}
	s.allowed, s.refused = maps.Clone(b.allowed), maps.Clone(b.refused)
	s.stale, s.at, s.baseAt, s.preRefused = false, len(n.touched), b.at, b.preRefused
	if !b.preRefused {
		// The nodes the base admits where a pod holds one of the ports:
		// there the pod's own port check may refuse.
		n.walk(s, func() []string {
			var out []string
			for name := range n.portUsers(hostPorts(s.rep.Pod)) {
				if s.allowed[name] {
					out = append(out, name)
				}
			}
			slices.Sort(out)
			return out
		})
	}
	s.all = len(s.allowed) >= n.usable
	return s
}

// portUsers returns the fabric nodes where a pod declares one of the host
// port numbers (any protocol or address), from the session's pods as they
// are now: the index the carry keeps (or one built for this session when
// nothing is carried), with the nodes whose pods changed in this session
// read again.
func (n *Nodes) portUsers(ports []int32) map[string]bool {
	ix := n.portIndex()
	if n.portsAt < len(n.touched) {
		for _, name := range n.touched[n.portsAt:] {
			if name == anyNode {
				// The change's node is not logged: read every node again,
				// for this session only.
				n.ports, n.portsSeen, n.portsAt = newPortIndex(n), nil, len(n.touched)
				return n.portUsers(ports)
			}
			if n.portsSeen == nil {
				n.portsSeen = map[string][]int32{}
			}
			n.portsSeen[name] = nodePorts(n.ssn.Nodes[name])
		}
		n.portsAt = len(n.touched)
	}
	out := map[string]bool{}
	for _, p := range ports {
		for name := range ix.byPort[p] {
			if _, changed := n.portsSeen[name]; !changed {
				out[name] = true
			}
		}
		for name, held := range n.portsSeen {
			if slices.Contains(held, p) {
				out[name] = true
			}
		}
	}
	return out
}

// portIndex returns the index of the host ports on the fabric's nodes:
// the carry's, kept up to date by openCarry (as the session opened), else
// one of this session's own. The index is only read in a session; what the
// session changes is read apart (portUsers).
func (n *Nodes) portIndex() *portIndex {
	if n.ports == nil {
		switch {
		case n.carry != nil && n.carry.ports != nil:
			n.ports = n.carry.ports
		case n.carry != nil && len(n.touched) == 0:
			// Read before the session changed a pod: what the next
			// openCarry compares its nodes' pods with.
			n.carry.ports = newPortIndex(n)
			n.ports = n.carry.ports
		default:
			n.ports = newPortIndex(n)
		}
	}
	return n.ports
}

// newPortIndex reads the host ports of the pods on every fabric node.
func newPortIndex(n *Nodes) *portIndex {
	ix := &portIndex{byNode: map[string][]int32{}, byPort: map[int32]map[string]bool{}}
	for _, name := range n.fabric {
		ix.set(name, n.ssn.Nodes[name])
	}
	return ix
}

// portIndex says which nodes' pods declare which host ports.
type portIndex struct {
	byNode map[string][]int32
	byPort map[int32]map[string]bool
}

// set reads the host ports of the pods on a node afresh (nil: the node is
// gone).
func (ix *portIndex) set(name string, ni *api.NodeInfo) {
	for _, p := range ix.byNode[name] {
		delete(ix.byPort[p], name)
	}
	delete(ix.byNode, name)
	ports := nodePorts(ni)
	if len(ports) == 0 {
		return
	}
	ix.byNode[name] = ports
	for _, p := range ports {
		if ix.byPort[p] == nil {
			ix.byPort[p] = map[string]bool{}
		}
		ix.byPort[p][name] = true
	}
}

// nodePorts lists the host ports the pods on a node declare (never nil).
func nodePorts(ni *api.NodeInfo) []int32 {
	out := []int32{}
	if ni == nil {
		return out
	}
	for _, t := range ni.Tasks {
		if t.Pod != nil {
			out = append(out, hostPorts(t.Pod)...)
		}
	}
	return out
}

// hostPorts lists the host ports a pod's containers and init containers
// declare.
func hostPorts(pod *v1.Pod) []int32 {
	var out []int32
	for _, cs := range [][]v1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for _, c := range cs {
			for _, p := range c.Ports {
				if p.HostPort > 0 {
					out = append(out, p.HostPort)
				}
			}
		}
	}
	return out
}
