package main

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"
	batchv1alpha1 "volcano.sh/apis/pkg/apis/batch/v1alpha1"

	"github.com/rdmatopo/rdmatopo/core/ledger"
	"github.com/rdmatopo/rdmatopo/internal/devtools/bench/grade"
	"github.com/rdmatopo/rdmatopo/internal/devtools/bench/trace"
	"github.com/rdmatopo/rdmatopo/internal/workload"
)

// Job objects of the trace.
const (
	jobNamespace  = "default"
	schedulerName = "volcano"
	podImage      = "registry.k8s.io/pause:3.9"
	// cpuPerGPU and cpuOnlyCores are the CPU requests of the trace's pods,
	// as in rdmatopo-dev bench.
	cpuPerGPU    = 4
	cpuOnlyCores = 2
)

// gangLabel names a trace pod's gang (VolcanoJob or PodGroup name).
const gangLabel = "bench-e2e.rdmatopo.io/gang"

// gang follows one trace gang through a run.
type gang struct {
	spec      trace.GangSpec
	uid       string
	submitted time.Time
	bound     map[string]time.Time // pod name -> first seen bound
	// uids are the pods seen before the gang was deleted; created is when
	// the last of its pods first appeared (the job controller's share of
	// the latency).
	uids    map[string]bool
	created time.Time
	placed  time.Time // all pods bound
	deleted bool
}

// tracker watches the trace's pods: bind times, the agent, deletions.
type tracker struct {
	mu    sync.Mutex
	gangs map[string]*gang // by job name
	order []*gang
	// placedCh receives each gang once all its pods are bound.
	placedCh chan *gang
	ag       *agent
	// stray counts pods of an already deleted job seen again (a controller
	// recreated them); they are deleted.
	stray   int
	strayCh chan *corev1.Pod
}

func (t *tracker) onPod(p *corev1.Pod) {
	t.ag.observe(p)
	job := p.Labels[gangLabel]
	if p.Namespace != jobNamespace || job == "" {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	g := t.gangs[job]
	if g == nil {
		return
	}
	uid := string(p.UID)
	if g.deleted {
		if !g.uids[uid] && p.DeletionTimestamp == nil {
			// Created again by the job controller after the job was
			// deleted: remove it.
			g.uids[uid] = true
			t.stray++
			select {
			case t.strayCh <- p:
			default:
			}
		}
		return
	}
	if !g.uids[uid] {
		g.uids[uid] = true
		if len(g.uids) == g.spec.Pods {
			g.created = time.Now()
		}
	}
	if p.Spec.NodeName == "" {
		return
	}
	if _, ok := g.bound[p.Name]; ok {
		return
	}
	g.bound[p.Name] = time.Now()
	if len(g.bound) == g.spec.Pods {
		g.placed = time.Now()
		t.placedCh <- g
	}
}

// volcanoJob is the trace gang as a VolcanoJob: one task of spec.Pods
// replicas, minAvailable all of them, the rdmatopo contract annotations.
func volcanoJob(g trace.GangSpec) *batchv1alpha1.Job {
	sh := g.Kind.Shape()
	req := corev1.ResourceList{}
	lim := corev1.ResourceList{}
	if sh.GPU > 0 {
		req[corev1.ResourceCPU] = *resource.NewQuantity(sh.GPU*cpuPerGPU, resource.DecimalSI)
		for name, n := range map[corev1.ResourceName]int64{gpuResource: sh.GPU, rdmaResource: sh.NICs} {
			req[name] = *resource.NewQuantity(n, resource.DecimalSI)
			lim[name] = *resource.NewQuantity(n, resource.DecimalSI)
		}
	} else {
		req[corev1.ResourceCPU] = *resource.NewQuantity(cpuOnlyCores, resource.DecimalSI)
	}
	return &batchv1alpha1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: g.Name, Namespace: jobNamespace, Annotations: map[string]string{
			ledger.AnnotationMode:        g.Mode.String(),
			ledger.AnnotationHighestTier: g.HighestTier.String(),
		}},
		Spec: batchv1alpha1.JobSpec{
			SchedulerName: schedulerName,
			Queue:         "default",
			MinAvailable:  int32(g.Pods),
			Tasks: []batchv1alpha1.TaskSpec{{
				Name:     "worker",
				Replicas: int32(g.Pods),
				Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{gangLabel: g.Name}}, Spec: corev1.PodSpec{
					SchedulerName: schedulerName,
					RestartPolicy: corev1.RestartPolicyNever,
					Containers: []corev1.Container{{Name: "train", Image: podImage,
						Resources: corev1.ResourceRequirements{Requests: req, Limits: lim}}},
				}},
			}},
		},
	}
}

// createGang creates a gang's PodGroup and pods directly, as a job
// controller would, without waiting for Volcano's enqueue: every pod exists
// at once, so the scheduler can bind a whole arrival in one session.
func createGang(ctx context.Context, s *stack, spec trace.GangSpec) error {
	set := trace.GangSet(spec, time.Now())
	for _, pg := range set.PodGroups {
		pg = pg.DeepCopy()
		pg.UID, pg.CreationTimestamp = "", metav1.Time{}
		if _, err := s.Volcano.SchedulingV1beta1().PodGroups(jobNamespace).Create(ctx, pg, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("create PodGroup %s: %w", pg.Name, err)
		}
	}
	errs := parallel(ctx, len(set.Pods), 8, func(i int) error {
		p := set.Pods[i].DeepCopy()
		p.UID, p.ResourceVersion, p.CreationTimestamp = "", "", metav1.Time{}
		p.Status = corev1.PodStatus{}
		if p.Labels == nil {
			p.Labels = map[string]string{}
		}
		p.Labels[gangLabel] = spec.Name
		for j := range p.Spec.Containers {
			p.Spec.Containers[j].Image = podImage
		}
		_, err := s.Kube.CoreV1().Pods(jobNamespace).Create(ctx, p, metav1.CreateOptions{})
		return err
	})
	for _, err := range errs {
		if err != nil {
			return fmt.Errorf("create pods of %s: %w", spec.Name, err)
		}
	}
	return nil
}

// replay submits the trace (gang i at (Arrive-1) × period after the start),
// deletes each placed gang Duration × period after its last bind, and
// returns when every gang was placed or the timeout passed.
// kueue submits each gang as a Kueue pod group and ends it by marking its
// pods Succeeded before deleting them.
func replay(ctx context.Context, s *stack, ag *agent, trace *trace.Trace, o options, kueue bool) (*tracker, time.Time, error) {
	t := &tracker{gangs: map[string]*gang{}, placedCh: make(chan *gang, len(trace.Gangs)), ag: ag, strayCh: make(chan *corev1.Pod, 1024)}
	for _, spec := range trace.Gangs {
		g := &gang{spec: spec, bound: map[string]time.Time{}, uids: map[string]bool{}}
		t.gangs[spec.Name] = g
		t.order = append(t.order, g)
	}

	factory := informers.NewSharedInformerFactory(s.Kube, 0)
	pods := factory.Core().V1().Pods().Informer()
	if _, err := pods.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj interface{}) { t.onPod(obj.(*corev1.Pod)) },
		UpdateFunc: func(_, obj interface{}) { t.onPod(obj.(*corev1.Pod)) },
		DeleteFunc: func(obj interface{}) {
			if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = d.Obj
			}
			if p, ok := obj.(*corev1.Pod); ok {
				ag.forget(p)
			}
		},
	}); err != nil {
		return nil, time.Time{}, err
	}
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	factory.Start(runCtx.Done())
	if !cache.WaitForCacheSync(runCtx.Done(), pods.HasSynced) {
		return nil, time.Time{}, fmt.Errorf("pod informer did not sync")
	}
	go ag.run(runCtx)

	deleteGang := func(g *gang) {
		if runCtx.Err() != nil {
			return // the run is over
		}
		dctx := context.Background()
		bg := metav1.DeletePropagationBackground
		report := func(what string, err error) {
			if err != nil && runCtx.Err() == nil {
				logf("delete %s of %s: %v", what, g.spec.Name, err)
			}
		}
		if kueue {
			report("pod status", finishKueueGang(dctx, s, g.spec.Name))
			zero := int64(0)
			sel := metav1.ListOptions{LabelSelector: gangLabel + "=" + g.spec.Name}
			report("pods", s.Kube.CoreV1().Pods(jobNamespace).DeleteCollection(dctx, metav1.DeleteOptions{GracePeriodSeconds: &zero}, sel))
			return
		}
		if !o.direct {
			report("VolcanoJob", s.Volcano.BatchV1alpha1().Jobs(jobNamespace).Delete(dctx, g.spec.Name, metav1.DeleteOptions{PropagationPolicy: &bg}))
		}
		// No garbage collector runs: the driver removes the job's pods
		// (as kubelet would once they stop, hence no grace period) and
		// its PodGroup itself.
		zero := int64(0)
		sel := metav1.ListOptions{LabelSelector: gangLabel + "=" + g.spec.Name}
		report("pods", s.Kube.CoreV1().Pods(jobNamespace).DeleteCollection(dctx, metav1.DeleteOptions{GracePeriodSeconds: &zero}, sel))
		pg := g.spec.Name + "-" + g.uid // the job controller's name
		if o.direct {
			pg = g.spec.Name
		}
		report("PodGroup", s.Volcano.SchedulingV1beta1().PodGroups(jobNamespace).Delete(dctx, pg, metav1.DeleteOptions{}))
	}
	go func() {
		for {
			select {
			case <-runCtx.Done():
				return
			case p := <-t.strayCh:
				zero := int64(0)
				_ = s.Kube.CoreV1().Pods(p.Namespace).Delete(context.Background(), p.Name, metav1.DeleteOptions{GracePeriodSeconds: &zero})
			}
		}
	}()

	start := time.Now()
	submitErr := make(chan error, 1)
	go func() {
		for _, g := range t.order {
			at := start.Add(time.Duration(g.spec.Arrive-1) * o.period)
			if o.burst {
				at = start
			}
			select {
			case <-runCtx.Done():
				submitErr <- runCtx.Err()
				return
			case <-time.After(time.Until(at)):
			}
			t.mu.Lock()
			g.submitted = time.Now()
			t.mu.Unlock()
			if kueue {
				if err := createKueueGang(runCtx, s, g.spec); err != nil {
					submitErr <- err
					return
				}
				continue
			}
			if o.direct {
				if err := createGang(runCtx, s, g.spec); err != nil {
					submitErr <- err
					return
				}
				continue
			}
			out, err := s.Volcano.BatchV1alpha1().Jobs(jobNamespace).Create(runCtx, volcanoJob(g.spec), metav1.CreateOptions{})
			if err != nil {
				submitErr <- fmt.Errorf("create VolcanoJob %s: %w", g.spec.Name, err)
				return
			}
			t.mu.Lock()
			g.uid = string(out.UID)
			t.mu.Unlock()
		}
		submitErr <- nil
	}()

	deadline := time.After(o.runTimeout)
	ticker := time.NewTicker(5 * time.Second)
	defer ticker.Stop()
	placed := 0
	for placed < len(t.order) {
		select {
		case err := <-submitErr:
			if err != nil {
				return t, start, err
			}
		case g := <-t.placedCh:
			placed++
			at := time.Duration(g.spec.Duration) * o.period
			time.AfterFunc(at, func() {
				t.mu.Lock()
				g.deleted = true
				t.mu.Unlock()
				deleteGang(g)
			})
		case <-ticker.C:
			if err := s.alive(); err != nil {
				return t, start, err
			}
			if placed == 0 && time.Since(start) > o.stallTimeout {
				return t, start, fmt.Errorf("no gang placed %s after the first submit", o.stallTimeout)
			}
			logf("%s: %d/%d gangs placed after %s", o.current, placed, len(t.order), time.Since(start).Round(time.Second))
		case <-deadline:
			logf("%s: timeout after %s with %d/%d gangs placed", o.current, o.runTimeout, placed, len(t.order))
			return t, start, nil
		case <-ctx.Done():
			return t, start, ctx.Err()
		}
	}
	// Let the agent list the last bound pods before the KCNRs are read.
	select {
	case <-time.After(o.lag + time.Second):
	case <-ctx.Done():
	}
	return t, start, nil
}

// runResult is one scheduler's figures; JSON names are the report's.
type runResult struct {
	PodsPerSecond  float64 `json:"podsPerSecond"`
	GangP50Seconds float64 `json:"gangP50Seconds"`
	GangP99Seconds float64 `json:"gangP99Seconds"`
	RealizedMeanS0 float64 `json:"realizedMeanS0"`
	// FloorS0 is the mean, over the gangs realizedMeanS0 averages over, of
	// the fewest leaves each could have on the empty fabric (the benchmark
	// oracle's floor, as rdmatopo-dev bench's floorS0); S0BeyondFloor is
	// realizedMeanS0 less it: the leaves the scheduler spent beyond what
	// the fabric forces, per gang.
	FloorS0       float64 `json:"floorS0"`
	S0BeyondFloor float64 `json:"s0BeyondFloor"`
	// NUMAMisalignedPods are the RDMA pods the node agent had to spread
	// over NUMA zones, or overflow, for want of a usable numa_bind_result
	// (nodeagent.Outcome.Misaligned): pods a kubelet with the
	// single-numa-node policy would reject.
	NUMAMisalignedPods int `json:"numaMisalignedPods"`
	// BindWebhookP50Ms and BindWebhookP99Ms (companion runs) are the
	// quantiles of the time kube-apiserver waited for the companion's
	// pods/binding webhook, from the API server's own histogram
	// (details.bindWebhook says how).
	BindWebhookP50Ms *float64 `json:"bindWebhookP50Ms,omitempty"`
	BindWebhookP99Ms *float64 `json:"bindWebhookP99Ms,omitempty"`
	APIRequests      int      `json:"apiRequests"`
	Rejected429      int      `json:"rejected429"`
	CPUSeconds       float64  `json:"schedulerCPUSeconds"`
	PeakRSSBytes     int64    `json:"schedulerPeakRSSBytes"`
	// CPUSecondsPerPod and APIRequestsPerPod divide schedulerCPUSeconds and
	// apiRequests by the trace pods bound.
	CPUSecondsPerPod  float64 `json:"schedulerCPUSecondsPerPod"`
	APIRequestsPerPod float64 `json:"apiRequestsPerPod"`

	Details runDetails `json:"details"`
}

// runDetails are the figures behind the headline ones.
type runDetails struct {
	GangsPlaced int     `json:"gangsPlaced"`
	PodsBound   int     `json:"podsBound"`
	WallSeconds float64 `json:"wallSeconds"`
	// RDMAGangs is how many placed gangs of ≥ 2 RDMA pods realizedMeanS0
	// averages over.
	RDMAGangs int `json:"rdmaGangs"`
	// APIRequestsByKind counts the scheduler's requests by verb and
	// resource[/subresource] (from the audit log).
	APIRequestsByKind map[string]int `json:"apiRequestsByKind"`
	// SchedulerUserAgents are the user agents the counted requests came
	// with.
	SchedulerUserAgents []string `json:"schedulerUserAgents"`
	// SchedulerPeakInFlight is the most requests of the scheduler (watches
	// aside) the API server had open at once.
	SchedulerPeakInFlight int `json:"schedulerPeakInFlight"`
	// Schedulers are the CPU seconds and peak RSS of each process under
	// test (kueue: Kueue and kube-scheduler, summed in the headline).
	Schedulers map[string]componentUsage `json:"schedulers"`
	// APIServerRequests and APIServerRejected429 are apiserver_request_total
	// over every client (controllers, kwok, the agent and the driver too).
	APIServerRequests    int `json:"apiServerRequests"`
	APIServerRejected429 int `json:"apiServerRejected429"`
	// Agent figures: pods placed on their numa_bind_result zones, pods
	// without the hint, KCNR writes.
	PodsWithNUMAHint    int `json:"podsWithNUMAHint"`
	PodsWithoutNUMAHint int `json:"podsWithoutNUMAHint"`
	KCNRWrites          int `json:"kcnrWrites"`
	StrayPods           int `json:"strayPods"`
	// BindWebhook is kube-apiserver's account of the companion's webhook
	// (companion runs).
	BindWebhook *webhookFigures `json:"bindWebhook,omitempty"`
	// CompanionBinds is the companion's own count of the binds its
	// webhook answered, by result (rdmatopo_companion_binds_total:
	// assisted, annotated, nofit, error, refused); informative, not a
	// grade.
	CompanionBinds map[string]int `json:"companionBinds,omitempty"`
	// GangCreatedP50Seconds and GangCreatedP99Seconds: submit → every pod
	// of the gang created by the job controller (placed gangs); the rest of
	// the gang latency is the scheduler's.
	GangCreatedP50Seconds float64 `json:"gangCreatedP50Seconds"`
	GangCreatedP99Seconds float64 `json:"gangCreatedP99Seconds"`
}

// componentUsage is one scheduler process's CPU and memory.
type componentUsage struct {
	CPUSeconds   float64 `json:"cpuSeconds"`
	PeakRSSBytes int64   `json:"peakRSSBytes"`
}

// summarize computes the bind figures and the realized leaves; floors are
// the gangs' floors by name (gangFloors).
func summarize(t *tracker, start time.Time, floors map[string]int) runResult {
	t.mu.Lock()
	defer t.mu.Unlock()
	var r runResult
	var first, last time.Time
	var lat, created []float64
	s0Sum, floorSum := 0, 0
	for _, g := range t.order {
		if !g.submitted.IsZero() && (first.IsZero() || g.submitted.Before(first)) {
			first = g.submitted
		}
		for _, b := range g.bound {
			r.Details.PodsBound++
			if b.After(last) {
				last = b
			}
		}
		if g.placed.IsZero() {
			continue
		}
		r.Details.GangsPlaced++
		lat = append(lat, g.placed.Sub(g.submitted).Seconds())
		if !g.created.IsZero() {
			created = append(created, g.created.Sub(g.submitted).Seconds())
		}
		if g.spec.Kind.Shape().NICs == 0 || g.spec.Pods < 2 {
			continue
		}
		leaves := map[string]bool{}
		confirmed := true
		for pod := range g.bound {
			ls, ok := t.ag.leavesOf(jobNamespace, pod)
			if !ok {
				confirmed = false
				break
			}
			for _, l := range ls {
				leaves[l] = true
			}
		}
		if !confirmed {
			continue
		}
		r.Details.RDMAGangs++
		s0Sum += len(leaves)
		floorSum += floors[g.spec.Name]
	}
	if r.Details.RDMAGangs > 0 {
		r.RealizedMeanS0 = float64(s0Sum) / float64(r.Details.RDMAGangs)
		r.FloorS0 = float64(floorSum) / float64(r.Details.RDMAGangs)
		r.S0BeyondFloor = r.RealizedMeanS0 - r.FloorS0
	}
	if !first.IsZero() && last.After(first) {
		r.Details.WallSeconds = last.Sub(first).Seconds()
		r.PodsPerSecond = float64(r.Details.PodsBound) / r.Details.WallSeconds
	}
	sort.Float64s(lat)
	r.GangP50Seconds = quantile(lat, 0.50)
	r.GangP99Seconds = quantile(lat, 0.99)
	sort.Float64s(created)
	r.Details.GangCreatedP50Seconds = quantile(created, 0.50)
	r.Details.GangCreatedP99Seconds = quantile(created, 0.99)
	r.Details.StrayPods = t.stray
	return r
}

// gangFloors returns, by gang name, the fewest leaves each RDMA gang of
// two pods or more could have on the cluster's empty fabric (grade.FloorOf,
// the oracle rdmatopo-dev bench's floorS0 averages): the same for every
// run, whatever the scheduler. Gangs of one shape and size share a floor,
// found once.
func gangFloors(cluster *workload.Cluster, tc *trace.Trace) (map[string]int, error) {
	empty := grade.NewTracker(cluster.Nodes, cluster.CNRs).Empty()
	byKey := map[string]int{}
	out := map[string]int{}
	for _, g := range tc.Gangs {
		if g.Kind.Shape().NICs == 0 || g.Pods < 2 {
			continue
		}
		key := grade.FloorKey(g)
		n, ok := byKey[key]
		if !ok {
			f, err := grade.FloorOf(empty, g)
			if err != nil {
				return nil, fmt.Errorf("floor of gang %s: %w", g.Name, err)
			}
			n, byKey[key] = f.Leaves, f.Leaves
		}
		out[g.Name] = n
	}
	return out, nil
}

// perPod is v per bound pod (0 when none was bound).
func perPod(v float64, pods int) float64 {
	if pods == 0 {
		return 0
	}
	return v / float64(pods)
}

// quantile is the nearest-rank quantile of sorted values.
func quantile(sorted []float64, q float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	i := int(q*float64(len(sorted))+0.999999) - 1
	return sorted[min(max(i, 0), len(sorted)-1)]
}
