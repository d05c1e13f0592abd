package topologyallocate

import (
	"crypto/sha256"
	"encoding/json"

	v1 "k8s.io/api/core/v1"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
	"volcano.sh/volcano/pkg/scheduler/framework"
)

// nodeFilter is the planner's cheap view of which nodes a pod may use: the
// node is in the session (ready), schedulable, matches the pod's node
// selector and required node affinity, and its NoSchedule / NoExecute taints
// are tolerated. Pods with the same constraints share a group, and results
// are cached per (group, node). The session predicates still check every
// planned task before it is allocated.
type nodeFilter struct {
	ssn    *framework.Session
	groups map[[32]byte]int
	specs  []filterSpec
	cache  []map[string]bool
}

// filterSpec is one group's constraints.
type filterSpec struct {
	affinity    nodeaffinity.RequiredNodeAffinity
	tolerations []v1.Toleration
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
		Tol []v1.Toleration
	}{pod.Spec.NodeSelector, pod.Spec.Affinity, pod.Spec.Tolerations}
	data, _ := json.Marshal(key)
	sum := sha256.Sum256(data)
	if g, ok := f.groups[sum]; ok {
		return g
	}
	g := len(f.specs)
	f.groups[sum] = g
	f.specs = append(f.specs, filterSpec{affinity: nodeaffinity.GetRequiredNodeAffinity(pod), tolerations: pod.Spec.Tolerations})
	f.cache = append(f.cache, map[string]bool{})
	return g
}

// allowed reports whether pods of group may use node.
func (f *nodeFilter) allowed(node string, group int) bool {
	if group < 0 || group >= len(f.specs) {
		return false
	}
	if v, ok := f.cache[group][node]; ok {
		return v
	}
	ok := f.check(node, &f.specs[group])
	f.cache[group][node] = ok
	return ok
}

func (f *nodeFilter) check(name string, spec *filterSpec) bool {
	ni, ok := f.ssn.Nodes[name]
	if !ok || ni.Node == nil || ni.Node.Spec.Unschedulable {
		return false
	}
	if match, err := spec.affinity.Match(ni.Node); err != nil || !match {
		return false
	}
	_, untolerated := corev1helpers.FindMatchingUntoleratedTaint(ni.Node.Spec.Taints, spec.tolerations, func(t *v1.Taint) bool {
		return t.Effect == v1.TaintEffectNoSchedule || t.Effect == v1.TaintEffectNoExecute
	})
	return !untolerated
}
