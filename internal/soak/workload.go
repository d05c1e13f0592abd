package soak

import (
	"fmt"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	schedulingv1beta1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"

	"github.com/rdmatopo/rdmatopo/framework/ledger"
	"github.com/rdmatopo/rdmatopo/internal/testing/builders"
	"github.com/rdmatopo/rdmatopo/internal/workload"
)

// podShape is what one pod of a gang requests.
type podShape struct {
	gpu, nics int
}

// Pod shapes of the generated gangs. A whole-node pod spans both NUMA zones
// and fits only nodes whose topology policy allows that.
var (
	shapeOne   = podShape{gpu: 1, nics: 1}
	shapeTwo   = podShape{gpu: 2, nics: 1}
	shapeHalf  = podShape{gpu: 4, nics: 2}
	shapeWhole = podShape{gpu: 8, nics: 4}
)

// contract is a gang's rdmatopo.io/mode and highest-tier ("" : unset).
type contract struct {
	mode, tier string
}

// gangSpec is a generated gang before it becomes objects.
type gangSpec struct {
	shape    podShape
	pods     int
	contract contract
}

// nextGang draws a gang that fits the empty cluster: soft gangs of any
// shape; hard s0 gangs within one S0's NICs (2 per NUMA zone); hard node
// gangs within one node.
func (r *runner) nextGang() gangSpec {
	leafNICs := 2 * r.cfg.ZonesPerLeaf
	pick := func(shapes ...podShape) podShape { return shapes[r.rng.Intn(len(shapes))] }
	x := r.rng.Float64()
	switch {
	case x < 0.05:
		return gangSpec{shape: shapeWhole, pods: 1 + r.rng.Intn(2)}
	case x < 0.55:
		return gangSpec{shape: pick(shapeOne, shapeTwo, shapeHalf), pods: 1 + r.rng.Intn(6)}
	case x < 0.85:
		s := pick(shapeOne, shapeTwo, shapeHalf)
		return gangSpec{shape: s, pods: 1 + r.rng.Intn(leafNICs/s.nics), contract: contract{"hard", "s0"}}
	default:
		s := pick(shapeOne, shapeTwo, shapeHalf)
		return gangSpec{shape: s, pods: 1 + r.rng.Intn(min(8/s.gpu, 4/s.nics)), contract: contract{"hard", "node"}}
	}
}

// submit creates the next gang: a PodGroup (minMember = its pods) and its
// pending pods.
func (r *runner) submit() error {
	g := r.nextGang()
	name := fmt.Sprintf("job-%05d", r.submitted)
	created := workload.Epoch.Add(time.Duration(r.sim.Cycle())*time.Minute + time.Duration(r.submitted)*time.Millisecond)
	pg := &schedulingv1beta1.PodGroup{
		TypeMeta: metav1.TypeMeta{APIVersion: workload.APIVersionScheduling, Kind: workload.KindPodGroup},
		ObjectMeta: metav1.ObjectMeta{
			Namespace:         Namespace,
			Name:              name,
			UID:               types.UID("pg-" + name),
			CreationTimestamp: metav1.NewTime(created),
		},
		Spec:   schedulingv1beta1.PodGroupSpec{MinMember: int32(g.pods), Queue: workload.DefaultQueue},
		Status: schedulingv1beta1.PodGroupStatus{Phase: schedulingv1beta1.PodGroupPending},
	}
	if g.contract.mode != "" {
		pg.Annotations = map[string]string{ledger.AnnotationMode: g.contract.mode, ledger.AnnotationHighestTier: g.contract.tier}
	}
	j := &job{name: name, minMember: g.pods, duration: 2 + r.rng.Intn(10)}
	for i := 0; i < g.pods; i++ {
		podName := name + "-" + strconv.Itoa(i)
		p := builders.MakePod(Namespace, podName).
			UID("pod-"+podName).
			Group(name).
			Req(builders.GPUResource, strconv.Itoa(g.shape.gpu)).
			Req(builders.RDMAResource, strconv.Itoa(g.shape.nics)).
			Req(corev1.ResourceCPU, strconv.Itoa(4*g.shape.gpu)).
			Created(created).
			Obj()
		p.Spec.SchedulerName = workload.DefaultSchedulerName
		j.pods = append(j.pods, p)
	}
	set := &workload.Set{PodGroups: []*schedulingv1beta1.PodGroup{pg}, Pods: j.pods}
	if err := r.sim.Submit(set); err != nil {
		return fmt.Errorf("submit gang %s: %w", name, err)
	}
	r.live[name] = j
	r.submitted++
	r.res.Jobs = r.submitted
	return nil
}
