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
	// blocking are the session's distinct NoSchedule/NoExecute taints,
	// computed on first use.
	blocking []v1.Taint
}

// filterSpec is one group's constraints.
type filterSpec struct {
	affinity    nodeaffinity.RequiredNodeAffinity
	tolerations []v1.Toleration
}

func newNodeFilter(ssn *framework.Session) *nodeFilter {
	return &nodeFilter{ssn: ssn, groups: map[[32]byte]int{}}
}

// constrained reports whether some group may not use every usable node the
// same way: it has a node selector or required node affinity, or tolerates
// a taint present on a session node. Unconstrained gangs are planned
// without a filter, on the state's usable nodes and shared statistics.
func (f *nodeFilter) constrained(pods []*v1.Pod) bool {
	for _, pod := range pods {
		if pod == nil {
			continue
		}
		if len(pod.Spec.NodeSelector) > 0 {
			return true
		}
		if a := pod.Spec.Affinity; a != nil && a.NodeAffinity != nil && a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution != nil {
			return true
		}
		for _, taint := range f.taints() {
			if corev1helpers.TolerationsTolerateTaint(pod.Spec.Tolerations, &taint) {
				return true
			}
		}
	}
	return false
}

// taints lists the distinct blocking taints of the session's nodes.
func (f *nodeFilter) taints() []v1.Taint {
	if f.blocking == nil {
		f.blocking = []v1.Taint{}
		seen := map[string]bool{}
		for _, ni := range f.ssn.Nodes {
			if ni.Node == nil {
				continue
			}
			for _, t := range ni.Node.Spec.Taints {
				key := t.Key + "=" + t.Value + ":" + string(t.Effect)
				if (t.Effect == v1.TaintEffectNoSchedule || t.Effect == v1.TaintEffectNoExecute) && !seen[key] {
					seen[key] = true
					f.blocking = append(f.blocking, t)
				}
			}
		}
	}
	return f.blocking
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
