package builders

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// What generated clusters and gangs carry to look like real ones (the
// benchmark's and the soak's --constraints).

// GPUTaint is the taint the NVIDIA GPU operator puts on GPU nodes.
var GPUTaint = corev1.Taint{Key: "nvidia.com/gpu", Value: "present", Effect: corev1.TaintEffectNoSchedule}

// Node pools of generated clusters: PoolLabel=PoolHead or PoolGPU.
const (
	PoolLabel = "pool"
	PoolHead  = "head"
	PoolGPU   = "gpu"
)

// NodeConstraints taints, pools and sizes generated nodes by index: node i
// carries GPUTaint when i%TaintEvery == 0, is in PoolHead when
// i%HeadEvery == 1 (else PoolGPU), and has TightMemory of memory when
// i%TightEvery == 2. A zero period leaves that constraint out.
type NodeConstraints struct {
	TaintEvery, HeadEvery, TightEvery int
	TightMemory                       string
}

// GeneratedNodeConstraints are those of the benchmark's and the soak's
// generated clusters: a third of the nodes tainted, every eighth in
// PoolHead, every fifth with 96Gi of memory.
var GeneratedNodeConstraints = NodeConstraints{TaintEvery: 3, HeadEvery: 8, TightEvery: 5, TightMemory: "96Gi"}

// Apply writes the constraints on the nodes.
func (c NodeConstraints) Apply(nodes []*corev1.Node) {
	for i, n := range nodes {
		if c.TaintEvery > 0 && i%c.TaintEvery == 0 {
			n.Spec.Taints = append(n.Spec.Taints, GPUTaint)
		}
		if c.HeadEvery > 0 {
			if n.Labels == nil {
				n.Labels = map[string]string{}
			}
			n.Labels[PoolLabel] = PoolGPU
			if i%c.HeadEvery == 1 {
				n.Labels[PoolLabel] = PoolHead
			}
		}
		if c.TightEvery > 0 && i%c.TightEvery == 2 {
			q := resource.MustParse(c.TightMemory)
			n.Status.Allocatable[corev1.ResourceMemory] = q
			n.Status.Capacity[corev1.ResourceMemory] = q
		}
	}
}

// PodConstraints are what a generated gang's pod carries: a toleration of
// GPUTaint, a pool selector, a host port ("" and 0: none).
type PodConstraints struct {
	Tolerates bool
	Pool      string
	HostPort  int32
}

// GangPodConstraints are the constraints of pod i of a generated gang:
// the toleration and host port are the gang's; with pools, pod 0 (the
// head) selects the head pool and the others the GPU pool.
func GangPodConstraints(i int, tolerates, pools bool, hostPort int32) PodConstraints {
	c := PodConstraints{Tolerates: tolerates, HostPort: hostPort}
	if pools {
		c.Pool = PoolGPU
		if i == 0 {
			c.Pool = PoolHead
		}
	}
	return c
}

// Apply writes the constraints on the pod.
func (c PodConstraints) Apply(p *corev1.Pod) {
	if c.Tolerates {
		p.Spec.Tolerations = append(p.Spec.Tolerations, corev1.Toleration{
			Key: GPUTaint.Key, Operator: corev1.TolerationOpExists, Effect: GPUTaint.Effect})
	}
	if c.Pool != "" {
		p.Spec.NodeSelector = map[string]string{PoolLabel: c.Pool}
	}
	if c.HostPort != 0 {
		p.Spec.Containers[0].Ports = append(p.Spec.Containers[0].Ports,
			corev1.ContainerPort{Name: "rendezvous", ContainerPort: c.HostPort, HostPort: c.HostPort, Protocol: corev1.ProtocolTCP})
	}
}
