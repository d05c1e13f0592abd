package rdmatopology

import (
	"slices"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	resourcehelper "k8s.io/kubernetes/pkg/api/v1/resource"
	"volcano.sh/volcano/pkg/scheduler/api"

	"github.com/rdmatopo/rdmatopo/framework/placement"
)

// LimitNodes bounds the planner's state by a session's nodes: each node
// can give at most its idle GPUs, NICs and CPU, and a node is unusable
// when the session does not have it (Volcano's cache leaves out nodes
// whose Ready condition is not True, and nodes it has no Node object
// for), when it is cordoned, or when it carries a NoExecute taint (a node
// being emptied: docs/node-contract.md, "When hardware fails"; an RDMA pod
// that tolerates the taint is not placed there either). Other taints,
// selectors and affinity are the predicates' to judge, per pod; a Node
// with no Ready condition at all is usable, as it is to Volcano.
//
// It is the one reading of node usability the scheduler's session and
// `kubectl rdmatopo explain` share: explain builds the NodeInfos the way
// Volcano's cache does and calls it too.
func LimitNodes(st *placement.State, nodes map[string]*api.NodeInfo, gpu, rdma v1.ResourceName) {
	for name, ni := range nodes {
		st.SetCap(name, NodeCap(ni, gpu, rdma))
		if ni.Node == nil || ni.Node.Spec.Unschedulable || noExecuteTaint(ni.Node) != "" {
			st.SetUnusable(name)
		}
	}
	for _, name := range st.Fabric().NodeNames() {
		if _, ok := nodes[name]; !ok {
			st.SetUnusable(name)
		}
	}
}

// NodeCap is what a node can still give, from its idle resources.
func NodeCap(ni *api.NodeInfo, gpu, rdma v1.ResourceName) placement.Cap {
	if ni.Idle == nil {
		return placement.Cap{}
	}
	return placement.Cap{
		GPU:      int64(ni.Idle.ScalarResources[gpu] / 1000),
		NICs:     int64(ni.Idle.ScalarResources[rdma] / 1000),
		CPUMilli: int64(ni.Idle.MilliCPU),
	}
}

// ShapeOf is a pod's need. The whole pod's is what kubelet's topology
// manager aligns for it at pod scope: Kubernetes' effective request
// (resourcehelper.PodRequests: the larger of the running containers' sum,
// sidecars included, and each init container beside the sidecars declared
// before it) without the pod overhead. What the session counts beyond it
// (r, Volcano's TaskInfo.InitResreq: the overhead) is the shape's
// NodeExtra, which counts against the node only. For nodes that bind each
// container to one NUMA zone the need is split into its containers'
// (placement.SplitShape), as the topology manager aligns them at container
// scope: sidecars and regular containers, and init containers that ask for
// no NIC; an init container asking for NICs keeps the pod whole unless a
// regular container asks for at least as much of everything (it then runs
// in that container's zone, whose devices the container reuses). pod may
// be nil: r is then the whole need, unsplit.
func ShapeOf(pod *v1.Pod, r *api.Resource, gpu, rdma v1.ResourceName) placement.Shape {
	if r == nil {
		return placement.Shape{}
	}
	session := placement.Shape{
		GPU:      int64(r.ScalarResources[gpu] / 1000),
		NICs:     int64(r.ScalarResources[rdma] / 1000),
		CPUMilli: int64(r.MilliCPU),
	}
	if pod == nil {
		return session
	}
	aligned := resourcehelper.PodRequests(pod, resourcehelper.PodResourcesOptions{ExcludeOverhead: true})
	sh := placement.Shape{GPU: units(aligned[gpu]), NICs: units(aligned[rdma]), CPUMilli: milli(aligned[v1.ResourceCPU])}
	sh.NodeExtra = placement.Cap{
		GPU:      max(session.GPU-sh.GPU, 0),
		NICs:     max(session.NICs-sh.NICs, 0),
		CPUMilli: max(session.CPUMilli-sh.CPUMilli, 0),
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
		case isSidecar(c):
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

// isSidecar reports whether an init container keeps running beside the
// pod's containers (restartPolicy Always).
func isSidecar(c *v1.Container) bool {
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
