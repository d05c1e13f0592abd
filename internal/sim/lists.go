package sim

import (
	corev1 "k8s.io/api/core/v1"

	"github.com/rdmatopo/rdmatopo/core/topology"
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
	pool *topology.ListPool
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

// share returns the kept list equal to rl (topology.ListPool.Share). Nil
// and empty lists are returned as they are.
func (l *podLists) share(rl corev1.ResourceList) corev1.ResourceList {
	if len(rl) == 0 {
		return rl
	}
	if l.pool == nil {
		l.pool = topology.NewListPool(maxPodLists)
	}
	return *l.pool.Share(&rl)
}
