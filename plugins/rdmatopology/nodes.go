package rdmatopology

import (
	"slices"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
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

// ShapeOf is a pod's need: the whole pod's from its Volcano resource
// request (TaskInfo.InitResreq: the larger of the containers' sum and each
// init container, plus the pod overhead, as Kubernetes counts it), split
// into its containers' needs (placement.SplitShape) for nodes that bind
// each container to one NUMA zone. The parts are the regular and sidecar
// (restartable init) containers, which run side by side. The pod is not
// split when an init container exceeds every regular container (in GPUs,
// NICs or CPU): it runs before them, beside the sidecars, and needs one
// zone with room for all it asks, which only planning the pod in one zone
// guarantees. pod may be nil (no split).
func ShapeOf(pod *v1.Pod, r *api.Resource, gpu, rdma v1.ResourceName) placement.Shape {
	if r == nil {
		return placement.Shape{}
	}
	sh := placement.Shape{
		GPU:      int64(r.ScalarResources[gpu] / 1000),
		NICs:     int64(r.ScalarResources[rdma] / 1000),
		CPUMilli: int64(r.MilliCPU),
	}
	if pod == nil || len(pod.Spec.Containers)+len(pod.Spec.InitContainers) < 2 {
		return sh
	}
	need := func(c *v1.Container) placement.Part {
		q := c.Resources.Requests
		return placement.Part{Names: []string{c.Name}, GPU: units(q[gpu]), NICs: units(q[rdma]), CPUMilli: max(q.Cpu().MilliValue(), 0)}
	}
	var parts, regular []placement.Part
	for i := range pod.Spec.InitContainers {
		if c := &pod.Spec.InitContainers[i]; isSidecar(c) {
			parts = append(parts, need(c))
		}
	}
	for i := range pod.Spec.Containers {
		regular = append(regular, need(&pod.Spec.Containers[i]))
	}
	parts = append(parts, regular...)
	for i := range pod.Spec.InitContainers {
		c := &pod.Spec.InitContainers[i]
		if isSidecar(c) {
			continue
		}
		// It runs before the regular containers start, beside the
		// sidecars: it fits in the zone of a regular container it does
		// not exceed.
		in := need(c)
		if !slices.ContainsFunc(regular, func(p placement.Part) bool {
			return in.GPU <= p.GPU && in.NICs <= p.NICs && in.CPUMilli <= p.CPUMilli
		}) {
			return sh
		}
	}
	return placement.SplitShape(sh, parts)
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
