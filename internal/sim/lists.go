package sim

import (
	"slices"

	corev1 "k8s.io/api/core/v1"
)

// maxPodLists bounds the distinct resource lists a podLists keeps.
const maxPodLists = 4096

// podLists makes the pods the simulator stores and hands to Volcano's cache
// share their containers' equal resource lists (requests, limits): every
// pod of a shape has the same ones, and a decoded list costs several
// hundred bytes, held once by the store and once by the cache. Neither the
// simulator nor Volcano modifies a pod's resource lists (a change of a
// stored pod stores a modified copy, and Volcano reads requests only), so
// sharing is safe. It keeps at most maxPodLists distinct lists; lists
// beyond those are kept as they are. Not safe for concurrent use: the
// simulator calls it between sessions.
type podLists struct {
	lists map[string]corev1.ResourceList
	key   []byte
	names []string
}

// copyPod returns a deep copy of p whose containers' resource lists are the
// kept lists equal to them.
func (l *podLists) copyPod(p *corev1.Pod) *corev1.Pod {
	out := p.DeepCopy()
	for _, cs := range [][]corev1.Container{out.Spec.InitContainers, out.Spec.Containers} {
		for i := range cs {
			cs[i].Resources.Requests = l.share(cs[i].Resources.Requests)
			cs[i].Resources.Limits = l.share(cs[i].Resources.Limits)
		}
	}
	return out
}

// share returns the kept list equal to rl (the same names with the same
// quantity strings), keeping rl if none is. Nil and empty lists are
// returned as they are.
func (l *podLists) share(rl corev1.ResourceList) corev1.ResourceList {
	if len(rl) == 0 {
		return rl
	}
	l.names = l.names[:0]
	for name := range rl {
		l.names = append(l.names, string(name))
	}
	slices.Sort(l.names)
	l.key = l.key[:0]
	for _, name := range l.names {
		q := rl[corev1.ResourceName(name)]
		l.key = append(l.key, name...)
		l.key = append(l.key, '=')
		l.key = append(l.key, q.String()...)
		l.key = append(l.key, 0)
	}
	if kept, ok := l.lists[string(l.key)]; ok {
		return kept
	}
	if l.lists == nil {
		l.lists = map[string]corev1.ResourceList{}
	}
	if len(l.lists) < maxPodLists {
		l.lists[string(l.key)] = rl
	}
	return rl
}
