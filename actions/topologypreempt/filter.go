package topologypreempt

import (
	"crypto/sha256"
	"encoding/json"

	v1 "k8s.io/api/core/v1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
	"volcano.sh/volcano/pkg/scheduler/framework"
)

// nodeFilter is the planner's view of which nodes a preemptor's pod may
// use: in the session, schedulable, and matching the pod's node selector and
// required node affinity. Pods with the same constraints share a group.
// The session predicates still check every planned task before it is
// pipelined.
type nodeFilter struct {
	ssn    *framework.Session
	groups map[[32]byte]int
	specs  []nodeaffinity.RequiredNodeAffinity
	// constrained is true once a group has a selector or affinity.
	constrained bool
	cache       []map[string]bool
}

func newNodeFilter(ssn *framework.Session) *nodeFilter {
	return &nodeFilter{ssn: ssn, groups: map[[32]byte]int{}}
}

// group returns the constraint group of a pod.
func (f *nodeFilter) group(pod *v1.Pod) int {
	if pod == nil {
		pod = &v1.Pod{}
	}
	key := struct {
		Sel map[string]string
		Aff *v1.Affinity
	}{pod.Spec.NodeSelector, pod.Spec.Affinity}
	data, _ := json.Marshal(key)
	sum := sha256.Sum256(data)
	if g, ok := f.groups[sum]; ok {
		return g
	}
	if len(pod.Spec.NodeSelector) > 0 || (pod.Spec.Affinity != nil && pod.Spec.Affinity.NodeAffinity != nil) {
		f.constrained = true
	}
	g := len(f.specs)
	f.groups[sum] = g
	f.specs = append(f.specs, nodeaffinity.GetRequiredNodeAffinity(pod))
	f.cache = append(f.cache, map[string]bool{})
	return g
}

// allowed returns the planner's node filter for the groups seen so far,
// limited to scope when scope is not nil; nil when nothing limits the
// nodes (the planner's shared statistics then apply).
func (f *nodeFilter) allowed(scope map[string]bool) func(node string, group int) bool {
	if scope == nil && !f.constrained {
		return nil
	}
	return func(node string, group int) bool {
		if scope != nil && !scope[node] {
			return false
		}
		return !f.constrained || f.match(node, group)
	}
}

func (f *nodeFilter) match(name string, group int) bool {
	if group < 0 || group >= len(f.specs) {
		return false
	}
	if v, ok := f.cache[group][name]; ok {
		return v
	}
	ni, ok := f.ssn.Nodes[name]
	match := ok && ni.Node != nil && !ni.Node.Spec.Unschedulable
	if match {
		m, err := f.specs[group].Match(ni.Node)
		match = err == nil && m
	}
	f.cache[group][name] = match
	return match
}
