package explain

import (
	"strconv"

	corev1 "k8s.io/api/core/v1"
	v1helper "k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
	resourcehelper "k8s.io/kubernetes/pkg/api/v1/resource"
	schedutil "k8s.io/kubernetes/pkg/scheduler/util"

	"github.com/rdmatopo/rdmatopo/core/kube"
	"github.com/rdmatopo/rdmatopo/core/placement"
	"github.com/rdmatopo/rdmatopo/internal/workload"
)

// sessionNode is a node as a scheduling session over the cluster would
// have it: its Node and what it can still give (the planner's Cap).
type sessionNode struct {
	node *corev1.Node
	free placement.Cap
}

// oversubscriptionCPU is the Node annotation by which Volcano's cache adds
// millicores to a node's allocatable CPU (volcano.sh/oversubscription-cpu).
const oversubscriptionCPU = "volcano.sh/oversubscription-cpu"

// sessionNodes builds the nodes a scheduling session over the cluster
// would have, reading them as Volcano v1.10's cache does (NodeInfo): a
// node's idle GPUs, NICs and CPU are its allocatable (plus the CPU its
// oversubscription annotation adds) minus what every unfinished pod on it
// is charged (sessionRequests; a pod listed twice counts once, and idle
// may go below zero on an over-committed node), and only the nodes whose
// Ready condition is absent or True are in (Volcano leaves out the
// others). TestSessionNodesAgreeWithVolcano holds this reading to
// Volcano's own.
func sessionNodes(c *workload.Cluster, gpu, rdma corev1.ResourceName) map[string]sessionNode {
	type idle struct {
		node           *corev1.Node
		gpu, rdma, cpu float64 // milli-units
	}
	all := make(map[string]*idle, len(c.Nodes))
	for _, n := range c.Nodes {
		a := n.Status.Allocatable
		in := &idle{node: n, gpu: scalarMilli(a, gpu), rdma: scalarMilli(a, rdma), cpu: float64(a.Cpu().MilliValue())}
		if v, ok := n.Annotations[oversubscriptionCPU]; ok {
			extra, _ := strconv.ParseFloat(v, 64) // unreadable: 0, as in the cache
			in.cpu += extra
		}
		all[n.Name] = in
	}
	seen := map[string]bool{}
	for _, p := range c.Pods {
		in, ok := all[p.Spec.NodeName]
		key := p.Namespace + "/" + p.Name
		if !ok || seen[key] || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			continue
		}
		seen[key] = true
		r := sessionRequests(p)
		in.gpu -= scalarMilli(r, gpu)
		in.rdma -= scalarMilli(r, rdma)
		in.cpu -= float64(r.Cpu().MilliValue())
	}
	out := make(map[string]sessionNode, len(all))
	for name, in := range all {
		if !ready(in.node) {
			continue
		}
		out[name] = sessionNode{node: in.node, free: placement.Cap{
			GPU: int64(in.gpu / 1000), NICs: int64(in.rdma / 1000), CPUMilli: int64(in.cpu)}}
	}
	return out
}

// ready reports whether a Node is in a session: Volcano leaves out a node
// whose Ready condition is present and not True; a Node without one stays
// in.
func ready(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady && c.Status != corev1.ConditionTrue {
			return false
		}
	}
	return true
}

// sessionRequests is what Volcano v1.10's session charges a node for a pod
// (TaskInfo.Resreq and InitResreq, GetPodResourceRequest): the running
// containers and sidecars with the pod overhead, or each init container
// beside the sidecars declared before it when that is larger. Kubernetes'
// PodRequests adds the overhead after taking that larger value instead;
// the two differ only for a pod with an overhead whose init container
// asks for more than its running containers. Both parts come from
// Kubernetes' PodRequests.
func sessionRequests(p *corev1.Pod) corev1.ResourceList {
	noOverhead := resourcehelper.PodResourcesOptions{ExcludeOverhead: true}
	running := p
	var sidecars []corev1.Container
	for _, c := range p.Spec.InitContainers {
		if c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways {
			sidecars = append(sidecars, c)
		}
	}
	if len(sidecars) < len(p.Spec.InitContainers) {
		cp := *p
		cp.Spec.InitContainers = sidecars
		running = &cp
	}
	out := resourcehelper.PodRequests(running, noOverhead)
	for name, q := range p.Spec.Overhead {
		sum := out[name]
		sum.Add(q)
		out[name] = sum
	}
	for name, q := range resourcehelper.PodRequests(p, noOverhead) {
		if cur, ok := out[name]; !ok || q.Cmp(cur) > 0 {
			out[name] = q
		}
	}
	return out
}

// scalarMilli is a count resource of a list in milli-units, as Volcano's
// Resource holds it: 0 for a name Kubernetes' scheduler does not count as
// a scalar resource.
func scalarMilli(l corev1.ResourceList, name corev1.ResourceName) float64 {
	if !schedutil.IsScalarResourceName(name) {
		return 0
	}
	q, ok := l[name]
	if !ok {
		return 0
	}
	return float64(q.MilliValue())
}

// sessionShape is a pending pod's shape with what the session charges the
// node for it.
func sessionShape(p *corev1.Pod, gpu, rdma corev1.ResourceName) placement.Shape {
	r := sessionRequests(p)
	return kube.ShapeOf(p, placement.Cap{GPU: int64(scalarMilli(r, gpu) / 1000), NICs: int64(scalarMilli(r, rdma) / 1000),
		CPUMilli: int64(float64(r.Cpu().MilliValue()))}, gpu, rdma)
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
