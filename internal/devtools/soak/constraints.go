package soak

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/rdmatopo/rdmatopo/internal/testing/builders"
)

// With Config.Constraints the soak's cluster and gangs carry what real
// ones do: a third of the nodes the GPU operator's taint, every eighth node
// in pool=head (the others pool=gpu), every fifth node 96Gi of memory; soft
// gangs that do not all tolerate the taint, put a master of another shape
// on pool=head and their workers on pool=gpu, request 64Gi per pod or
// declare a host port. Hard gangs tolerate the taint and carry nothing
// else, so each still fits the idle cluster (a gang that does not is
// reported stuck).

const (
	tolerateShare = 0.85
	mixedShare    = 0.20
	poolsShare    = 0.50
	memoryShare   = 0.10
	hostPortShare = 0.05
	gangMemoryGi  = 64
	hostPort      = 29500
)

// shapeGPUOnly is a pod of 4 GPUs without RDMA beside a gang's RDMA pods.
var shapeGPUOnly = podShape{gpu: 4}

// gangConstraints are what Config.Constraints adds to a gang.
type gangConstraints struct {
	// master, when set, is pod 0's shape.
	master    *podShape
	tolerates bool
	// pools puts the master on pool=head and the workers on pool=gpu.
	pools    bool
	memoryGi int64
	hostPort int32
}

// constrainNodes taints, labels and sizes the cluster's nodes.
func constrainNodes(nodes []*corev1.Node) { builders.GeneratedNodeConstraints.Apply(nodes) }

// constrain draws gang g's constraints (see the top of this file).
func (r *runner) constrain(g gangSpec) gangSpec {
	g.cons.tolerates = true
	if g.contract.mode == "hard" {
		return g
	}
	g.cons.tolerates = r.rng.Float64() < tolerateShare
	if g.pods >= 2 && r.rng.Float64() < mixedShare {
		var others []podShape
		for _, s := range []podShape{shapeOne, shapeTwo, shapeHalf, shapeGPUOnly} {
			if s != g.shape {
				others = append(others, s)
			}
		}
		m := others[r.rng.Intn(len(others))]
		g.cons.master = &m
		g.cons.pools = r.rng.Float64() < poolsShare
	}
	if r.rng.Float64() < memoryShare {
		g.cons.memoryGi = gangMemoryGi
	}
	if r.rng.Float64() < hostPortShare {
		g.cons.hostPort = hostPort
	}
	return g
}

// shapeOf is the shape of pod i of gang g.
func (g gangSpec) shapeOf(i int) podShape {
	if i == 0 && g.cons.master != nil {
		return *g.cons.master
	}
	return g.shape
}

// constrainPod writes gang g's constraints on its pod i.
func constrainPod(p *corev1.Pod, g gangSpec, i int) {
	c := g.cons
	builders.GangPodConstraints(i, c.tolerates, c.pools, c.hostPort).Apply(p)
	if c.memoryGi > 0 {
		p.Spec.Containers[0].Resources.Requests[corev1.ResourceMemory] = *resource.NewQuantity(c.memoryGi<<30, resource.BinarySI)
	}
}
