package explain

import (
	corev1 "k8s.io/api/core/v1"
	v1helper "k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
	"volcano.sh/volcano/pkg/scheduler/api"

	"github.com/rdmatopo/rdmatopo/internal/workload"
)

// sessionNodes builds the nodes a scheduling session over the cluster
// would have, the way Volcano's cache does: a NodeInfo per Node with the
// unfinished pods on it added as tasks (their requests taken from idle),
// and only the nodes whose NodeInfo is Ready (Volcano leaves a node out
// of the session when its Ready condition is present and not True; a Node
// without one stays in).
func sessionNodes(c *workload.Cluster) map[string]*api.NodeInfo {
	all := make(map[string]*api.NodeInfo, len(c.Nodes))
	for _, n := range c.Nodes {
		all[n.Name] = api.NewNodeInfo(n)
	}
	for _, p := range c.Pods {
		ni, ok := all[p.Spec.NodeName]
		if !ok {
			continue
		}
		t := api.NewTaskInfo(p)
		if t.Status == api.Succeeded || t.Status == api.Failed {
			continue
		}
		// An error means the pod is on the node already (a duplicate in
		// the input): it is counted once, as in the cache.
		_ = ni.AddTask(t)
	}
	out := make(map[string]*api.NodeInfo, len(all))
	for name, ni := range all {
		if ni.Ready() {
			out[name] = ni
		}
	}
	return out
}

// admits reports whether Kubernetes admits the pod on the node by the
// node's own terms: NoSchedule and NoExecute taints the pod does not
// tolerate, and its node selector and required node affinity (the
// TaintToleration and NodeAffinity filters, through the helpers they use).
// The scheduler asks its whole predicate chain; explain, without a
// session, asks these.
func admits(pod *corev1.Pod, node *corev1.Node) bool {
	if node == nil {
		return false
	}
	if _, bad := v1helper.FindMatchingUntoleratedTaint(node.Spec.Taints, pod.Spec.Tolerations, func(t *corev1.Taint) bool {
		return t.Effect == corev1.TaintEffectNoSchedule || t.Effect == corev1.TaintEffectNoExecute
	}); bad {
		return false
	}
	ok, err := nodeaffinity.GetRequiredNodeAffinity(pod).Match(node)
	return err == nil && ok
}
