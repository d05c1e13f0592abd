package soak

import (
	"fmt"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	schedulingv1beta1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"

	"github.com/rdmatopo/rdmatopo/actions/topologypreempt"
	"github.com/rdmatopo/rdmatopo/core/ledger"
	"github.com/rdmatopo/rdmatopo/internal/sim"
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
	// class indexes soakClasses (with Config.Priorities); maxWait is the
	// hard gang's max-wait in cycles (0: none).
	class   int
	maxWait int
	// cons are the gang's constraints (Config.Constraints).
	cons gangConstraints
}

// PriorityClasses of the soak with Config.Priorities, lowest first, and the
// share of generated gangs in each.
var soakClasses = []struct {
	name  string
	value int32
	share float64
}{{"soak-low", 10, 0.6}, {"soak-medium", 100, 0.3}, {"soak-high", 1000, 0.1}}

// Burst of high-priority hard gangs (Config.Priorities, every BurstEvery
// cycles), and the share of other hard gangs given a max-wait.
const (
	burstSize     = 3
	maxWaitShare  = 0.3
	maxWaitCycles = 8
)

// priorityClasses returns the soak's PriorityClasses.
func priorityClasses() []*schedulingv1.PriorityClass {
	out := make([]*schedulingv1.PriorityClass, len(soakClasses))
	for i, c := range soakClasses {
		out[i] = &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: c.name}, Value: c.value}
	}
	return out
}

// withPriority draws a priority class and, for a hard gang, maybe a
// max-wait of 2..maxWaitCycles cycles.
func (r *runner) withPriority(g gangSpec) gangSpec {
	x := r.rng.Float64()
	g.class = len(soakClasses) - 1
	for i, c := range soakClasses {
		if x < c.share {
			g.class = i
			break
		}
		x -= c.share
	}
	if g.contract.mode == "hard" && r.rng.Float64() < maxWaitShare {
		g.maxWait = 2 + r.rng.Intn(maxWaitCycles-1)
	}
	return g
}

// burstGang draws a high-priority hard s0 gang of half-node pods filling
// half an S0.
func (r *runner) burstGang() gangSpec {
	return gangSpec{shape: shapeHalf, pods: max(1, r.cfg.ZonesPerLeaf/2), contract: contract{"hard", "s0"}, class: len(soakClasses) - 1}
}

// nextGang draws a gang that fits the empty cluster: soft gangs of any
// shape; hard s0 gangs within one S0's NICs (2 per NUMA zone); hard node
// gangs within one NUMA zone's GPUs and NICs (a node's two zones hang off
// two S0s, and the node tier keeps a gang's NICs under one).
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
		return gangSpec{shape: s, pods: 1 + r.rng.Intn(min(4/s.gpu, 2/s.nics)), contract: contract{"hard", "node"}}
	}
}

// submit creates the next gang: a PodGroup (minMember = its pods) and its
// pending pods.
func (r *runner) submit() error {
	g := r.nextGang()
	if r.cfg.Constraints {
		g = r.constrain(g)
	}
	if r.cfg.Priorities {
		g = r.withPriority(g)
	}
	return r.submitSpec(g, "")
}

// submitSpec creates gang g under name, or, when name is empty, as the next
// of the Jobs (counted in submitted).
func (r *runner) submitSpec(g gangSpec, name string) error {
	counted := name == ""
	if counted {
		name = fmt.Sprintf("job-%05d", r.submitted)
	}
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
	if g.maxWait > 0 {
		pg.Annotations[ledger.AnnotationMaxWait] = (time.Duration(g.maxWait) * sim.DefaultPeriod).String()
	}
	var prio *int32
	if r.cfg.Priorities {
		v := soakClasses[g.class].value
		prio = &v
		pg.Spec.PriorityClassName = soakClasses[g.class].name
		r.priorities[Namespace+"/"+name] = v
	}
	nonPreemptable := false
	if r.cfg.Priorities {
		var queue string
		queue, nonPreemptable = r.marks.assign(Namespace+"/"+name, g.class, len(r.marks.queue), r.cfg.Queues)
		if queue != "" {
			pg.Spec.Queue = queue
		}
	}
	j := &job{name: name, minMember: g.pods, duration: 2 + r.rng.Intn(10), spec: g, submitted: r.sim.Cycle() + 1, maxWait: g.maxWait}
	for i := 0; i < g.pods; i++ {
		podName := name + "-" + strconv.Itoa(i)
		sh := g.shapeOf(i)
		w := builders.MakePod(Namespace, podName).
			UID("pod-"+podName).
			Group(name).
			Req(builders.GPUResource, strconv.Itoa(sh.gpu)).
			Req(corev1.ResourceCPU, strconv.Itoa(4*sh.gpu)).
			Created(created)
		if sh.nics > 0 {
			w.Req(builders.RDMAResource, strconv.Itoa(sh.nics))
		}
		p := w.Obj()
		p.Spec.SchedulerName = workload.DefaultSchedulerName
		constrainPod(p, g, i)
		if prio != nil {
			p.Spec.PriorityClassName = pg.Spec.PriorityClassName
			p.Spec.Priority = prio
		}
		if nonPreemptable {
			p.Annotations[schedulingv1beta1.PodPreemptable] = "false"
		}
		j.pods = append(j.pods, p)
	}
	set := &workload.Set{PodGroups: []*schedulingv1beta1.PodGroup{pg}, Pods: j.pods}
	if err := r.sim.Submit(set); err != nil {
		return fmt.Errorf("submit gang %s: %w", name, err)
	}
	r.live[name] = j
	if counted {
		r.submitted++
		r.res.Jobs = r.submitted
	}
	return nil
}

// evictionOf describes a pod the scheduler evicted.
func evictionOf(ps sim.PodState) Eviction {
	p := ps.Pod
	e := Eviction{Pod: p.Namespace + "/" + p.Name, Gang: p.Namespace + "/" + p.Annotations[ledger.GroupNameAnnotation], Reason: ps.Evicted}
	if p.Spec.Priority != nil {
		e.Priority = *p.Spec.Priority
	}
	e.Preemptor, _ = topologypreempt.PreemptorOf(ps.Evicted)
	e.Node = p.Spec.NodeName
	e.NICs, _ = ledger.ParseNICs(p.Annotations[ledger.AnnotationNICs])
	return e
}
