package rdmatopology

import (
	v1 "k8s.io/api/core/v1"
	"volcano.sh/volcano/pkg/scheduler/api"

	"github.com/rdmatopo/rdmatopo/framework/placement"
)

// LimitNodes bounds the planner's state by a session's nodes: each node
// can give at most its idle GPUs, NICs and CPU, and a node is unusable
// when the session does not have it (Volcano's cache leaves out nodes
// whose Ready condition is not True, and nodes it has no Node object
// for) or when it is cordoned. Taints, selectors and affinity are the
// predicates' to judge, per pod; a Node with no Ready condition at all is
// usable, as it is to Volcano.
//
// It is the one reading of node usability the scheduler's session and
// `kubectl rdmatopo explain` share: explain builds the NodeInfos the way
// Volcano's cache does and calls it too.
func LimitNodes(st *placement.State, nodes map[string]*api.NodeInfo, gpu, rdma v1.ResourceName) {
	for name, ni := range nodes {
		st.SetCap(name, NodeCap(ni, gpu, rdma))
		if ni.Node == nil || ni.Node.Spec.Unschedulable {
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

// ShapeOf is a pod's per-pod need from its Volcano resource request
// (TaskInfo.InitResreq).
func ShapeOf(r *api.Resource, gpu, rdma v1.ResourceName) placement.Shape {
	if r == nil {
		return placement.Shape{}
	}
	return placement.Shape{
		GPU:      int64(r.ScalarResources[gpu] / 1000),
		NICs:     int64(r.ScalarResources[rdma] / 1000),
		CPUMilli: int64(r.MilliCPU),
	}
}
