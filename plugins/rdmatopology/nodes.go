package rdmatopology

import (
	v1 "k8s.io/api/core/v1"
	"volcano.sh/volcano/pkg/scheduler/api"

	"github.com/rdmatopo/rdmatopo/core/kube"
	"github.com/rdmatopo/rdmatopo/core/placement"
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
// The reading of a node (kube.LimitNode) is the one the scheduler's
// session and `kubectl rdmatopo explain` share: explain reads the nodes'
// idle resources and readiness as Volcano's cache does and calls it too.
func LimitNodes(st *placement.State, nodes map[string]*api.NodeInfo, gpu, rdma v1.ResourceName) {
	for name, ni := range nodes {
		kube.LimitNode(st, name, ni.Node, NodeCap(ni, gpu, rdma))
	}
	kube.LimitMissing(st, func(name string) bool { _, ok := nodes[name]; return ok })
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

// ShapeOf is a pod's need (kube.ShapeOf) with r, what the session counts
// for it (Volcano's TaskInfo.InitResreq), as the GPUs, NICs and CPU
// charged to the node. pod may be nil: r is then the whole need, unsplit.
func ShapeOf(pod *v1.Pod, r *api.Resource, gpu, rdma v1.ResourceName) placement.Shape {
	if r == nil {
		return placement.Shape{}
	}
	return kube.ShapeOf(pod, placement.Cap{
		GPU:      int64(r.ScalarResources[gpu] / 1000),
		NICs:     int64(r.ScalarResources[rdma] / 1000),
		CPUMilli: int64(r.MilliCPU),
	}, gpu, rdma)
}
