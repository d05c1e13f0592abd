// Package kube reads Kubernetes objects in the planner's terms: a pod's
// shape (what kubelet's topology manager aligns for it) and its rank in
// its gang, and how a node bounds the planner's state. The scheduler's
// plugin calls it with what Volcano's session counts; tools without a
// session (kubectl rdmatopo explain) with what they read from the cluster.
// Pure Go over the Kubernetes API types: no Volcano scheduler import.
package kube

import (
	"slices"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	resourcehelper "k8s.io/kubernetes/pkg/api/v1/resource"
	batchv1alpha1 "volcano.sh/apis/pkg/apis/batch/v1alpha1"

	"github.com/rdmatopo/rdmatopo/core/placement"
)

// LimitNode bounds the planner's state by one node of a session: it can
// give at most free (its idle GPUs, NICs and CPU), and it is unusable when
// the session has no Node object for it, when it is cordoned, or when it
// carries a NoExecute taint (a node being emptied: docs/node-contract.md,
// "When hardware fails"; an RDMA pod that tolerates the taint is not
// placed there either). Other taints, selectors and affinity are the
// predicates' to judge, per pod.
func LimitNode(st *placement.State, name string, node *v1.Node, free placement.Cap) {
	st.SetCap(name, free)
	if node == nil || node.Spec.Unschedulable || NoExecuteTaint(node) != "" {
		st.SetUnusable(name)
	}
}

// LimitMissing marks unusable every node of the fabric the session does
// not have (in reports whether it has it): Volcano's cache leaves out the
// nodes whose Ready condition is not True and the nodes it has no Node
// object for.
func LimitMissing(st *placement.State, in func(node string) bool) {
	for _, name := range st.Fabric().NodeNames() {
		if !in(name) {
			st.SetUnusable(name)
		}
	}
}

// NoExecuteTaint returns the key of the node's first NoExecute taint (""
// if none).
func NoExecuteTaint(n *v1.Node) string {
	for _, t := range n.Spec.Taints {
		if t.Effect == v1.TaintEffectNoExecute {
			return t.Key
		}
	}
	return ""
}

// ShapeOf is a pod's need. The whole pod's is what kubelet's topology
// manager aligns for it at pod scope: Kubernetes' effective request
// (resourcehelper.PodRequests: the larger of the running containers' sum,
// sidecars included, and each init container beside the sidecars declared
// before it) without the pod overhead. What the session counts beyond it
// (session, the GPUs, NICs and CPU the scheduler's session charges the
// node for the pod: the overhead) is the shape's NodeExtra, which counts
// against the node only. For nodes that bind each container to one NUMA
// zone the need is split into its containers' (placement.SplitShape), as
// the topology manager aligns them at container scope: sidecars and
// regular containers, and init containers that ask for no NIC; an init
// container asking for NICs keeps the pod whole unless a regular container
// asks for at least as much of everything (it then runs in that
// container's zone, whose devices the container reuses). pod may be nil:
// session is then the whole need, unsplit.
func ShapeOf(pod *v1.Pod, session placement.Cap, gpu, rdma v1.ResourceName) placement.Shape {
	whole := placement.Shape{GPU: session.GPU, NICs: session.NICs, CPUMilli: session.CPUMilli}
	if pod == nil {
		return whole
	}
	aligned := resourcehelper.PodRequests(pod, resourcehelper.PodResourcesOptions{ExcludeOverhead: true})
	sh := placement.Shape{GPU: units(aligned[gpu]), NICs: units(aligned[rdma]), CPUMilli: milli(aligned[v1.ResourceCPU])}
	sh.NodeExtra = placement.Cap{
		GPU:      max(whole.GPU-sh.GPU, 0),
		NICs:     max(whole.NICs-sh.NICs, 0),
		CPUMilli: max(whole.CPUMilli-sh.CPUMilli, 0),
	}
	if len(pod.Spec.Containers)+len(pod.Spec.InitContainers) < 2 {
		return sh
	}
	need := func(c *v1.Container, order int) placement.Part {
		q := c.Resources.Requests
		return placement.Part{Names: []string{c.Name}, GPU: units(q[gpu]), NICs: units(q[rdma]), CPUMilli: milli(q[v1.ResourceCPU]), Order: order}
	}
	var parts, regular []placement.Part
	for i := range pod.Spec.Containers {
		regular = append(regular, need(&pod.Spec.Containers[i], len(pod.Spec.InitContainers)+i))
	}
	for i := range pod.Spec.InitContainers {
		c := &pod.Spec.InitContainers[i]
		p := need(c, i)
		switch {
		case IsSidecar(c):
		case p.NICs == 0:
			p.Init = true
		case slices.ContainsFunc(regular, func(r placement.Part) bool {
			return p.GPU <= r.GPU && p.NICs <= r.NICs && p.CPUMilli <= r.CPUMilli
		}):
			continue
		default:
			return sh
		}
		parts = append(parts, p)
	}
	return placement.SplitShape(sh, append(parts, regular...))
}

// IsSidecar reports whether an init container keeps running beside the
// pod's containers (restartPolicy Always).
func IsSidecar(c *v1.Container) bool {
	return c.RestartPolicy != nil && *c.RestartPolicy == v1.ContainerRestartPolicyAlways
}

// units is a count resource's request (GPUs, RDMA units); negative is 0.
func units(q resource.Quantity) int64 {
	return max(q.Value(), 0)
}

// milli is a CPU request in millicores; negative is 0.
func milli(q resource.Quantity) int64 {
	return max(q.MilliValue(), 0)
}

// RanksOf returns the rank of each pod of one gang: placement.Ranks over
// their labels and annotations, a Volcano Job's tasks in the order tasks
// gives (tasks(namespace, job) lists the names of the Job's spec.tasks in
// order, nil when the Job is unknown; a nil tasks knows no Job). An
// invalid rdmatopo.io/rank is an error wrapping
// placement.ErrInvalidContract.
func RanksOf(pods []*v1.Pod, tasks func(namespace, job string) []string) ([]int, error) {
	src := make([]placement.RankSource, len(pods))
	var order func(string) (int, bool)
	for i, p := range pods {
		src[i] = placement.RankSource{Name: p.Namespace + "/" + p.Name, Labels: p.Labels, Annotations: p.Annotations}
		if job := p.Annotations[batchv1alpha1.JobNameKey]; order == nil && job != "" && tasks != nil {
			order = orderOf(tasks(p.Namespace, job))
		}
	}
	return placement.Ranks(src, order)
}

// orderOf is the position of each task name in a Job's spec.tasks (nil
// when the Job is unknown).
func orderOf(tasks []string) func(task string) (int, bool) {
	if tasks == nil {
		return nil
	}
	return func(task string) (int, bool) {
		if i := slices.Index(tasks, task); i >= 0 {
			return i, true
		}
		return 0, false
	}
}
