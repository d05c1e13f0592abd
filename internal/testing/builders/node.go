// Package builders makes Nodes, katalyst CustomNodeResources (KCNRs) and Pods
// for tests and benchmarks, plus fixture clusters in the shape the cloud
// provider documents.
//
// Identity goes in the Make* call; everything else is a chained setter, and
// Obj() returns a fresh deep copy, so a builder can be reused:
//
//	node := builders.MakeNode("n1").Shared().GPU(8).RDMA(4).S1("s1-0").Obj()
//
// The package deliberately does not import the framework packages, so tests
// inside those packages can use it without an import cycle; the label and
// resource names below mirror core/topology.
package builders

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Names shared with core/topology.
const (
	// RDMAResource is the RDMA NIC extended resource.
	RDMAResource corev1.ResourceName = "vke.volcengine.com/rdma"
	// GPUResource is the GPU extended resource.
	GPUResource corev1.ResourceName = "nvidia.com/gpu"
	// RDMAModeLabel with value "shared" marks topology-reporting nodes.
	RDMAModeLabel = "vke.node.rdma.mode"
	// KatalystDeployLabel marks nodes katalyst manages.
	KatalystDeployLabel = "vke.node.katalyst.deploy"
	// S1Label is the miniPod label the fixtures use (the scheduler reads the
	// label named by its s1NodeLabel argument).
	S1Label = "rdmatopo.io/minipod"
)

// NodeWrapper builds a corev1.Node.
type NodeWrapper struct {
	node corev1.Node
	meta[*NodeWrapper]
}

// MakeNode starts a Node named name with no labels and no resources.
func MakeNode(name string) *NodeWrapper {
	w := &NodeWrapper{node: corev1.Node{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Node"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{}},
		Status: corev1.NodeStatus{
			Capacity:    corev1.ResourceList{},
			Allocatable: corev1.ResourceList{},
		},
	}}
	w.meta = meta[*NodeWrapper]{obj: &w.node.ObjectMeta, self: w}
	return w
}

// Shared marks the node as reporting RDMA topology (vke.node.rdma.mode=shared,
// vke.node.katalyst.deploy=true).
func (w *NodeWrapper) Shared() *NodeWrapper {
	return w.Label(RDMAModeLabel, "shared").Label(KatalystDeployLabel, "true")
}

// S1 puts the node in a miniPod through the S1Label label.
func (w *NodeWrapper) S1(name string) *NodeWrapper {
	return w.Label(S1Label, name)
}

// Resource sets capacity and allocatable of a resource.
func (w *NodeWrapper) Resource(name corev1.ResourceName, qty string) *NodeWrapper {
	q := resource.MustParse(qty)
	w.node.Status.Capacity[name] = q
	w.node.Status.Allocatable[name] = q
	return w
}

// Allocatable sets only the allocatable amount of a resource.
func (w *NodeWrapper) Allocatable(name corev1.ResourceName, qty string) *NodeWrapper {
	w.node.Status.Allocatable[name] = resource.MustParse(qty)
	return w
}

// GPU sets the node's GPUs.
func (w *NodeWrapper) GPU(n int64) *NodeWrapper {
	return w.quantity(GPUResource, n)
}

// RDMA sets the node's RDMA NICs.
func (w *NodeWrapper) RDMA(n int64) *NodeWrapper {
	return w.quantity(RDMAResource, n)
}

// CPU sets the node's CPUs (a quantity such as "128" or "500m").
func (w *NodeWrapper) CPU(qty string) *NodeWrapper {
	return w.Resource(corev1.ResourceCPU, qty)
}

// Ready sets the node's Ready condition to status (True, False, Unknown).
// A Node built without it has no conditions at all.
func (w *NodeWrapper) Ready(status corev1.ConditionStatus) *NodeWrapper {
	for i := range w.node.Status.Conditions {
		if w.node.Status.Conditions[i].Type == corev1.NodeReady {
			w.node.Status.Conditions[i].Status = status
			return w
		}
	}
	w.node.Status.Conditions = append(w.node.Status.Conditions, corev1.NodeCondition{Type: corev1.NodeReady, Status: status})
	return w
}

// Cordon sets spec.unschedulable.
func (w *NodeWrapper) Cordon() *NodeWrapper {
	w.node.Spec.Unschedulable = true
	return w
}

// Taint adds a taint with an empty value.
func (w *NodeWrapper) Taint(key string, effect corev1.TaintEffect) *NodeWrapper {
	w.node.Spec.Taints = append(w.node.Spec.Taints, corev1.Taint{Key: key, Effect: effect})
	return w
}

// ResourceVersion sets metadata.resourceVersion.
func (w *NodeWrapper) ResourceVersion(rv string) *NodeWrapper {
	w.node.ResourceVersion = rv
	return w
}

func (w *NodeWrapper) quantity(name corev1.ResourceName, n int64) *NodeWrapper {
	q := *resource.NewQuantity(n, resource.DecimalSI)
	w.node.Status.Capacity[name] = q
	w.node.Status.Allocatable[name] = q
	return w
}

// Obj returns a copy of the Node built so far.
func (w *NodeWrapper) Obj() *corev1.Node {
	return w.node.DeepCopy()
}
