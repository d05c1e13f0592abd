package workload

import (
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	batchv1alpha1 "volcano.sh/apis/pkg/apis/batch/v1alpha1"
	schedulingv1beta1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"

	"github.com/rdmatopo/rdmatopo/core/placement"
)

// Set is a workload: the objects submitted for scheduling, with Volcano
// Jobs and PyTorchJobs already expanded into PodGroups and Pods. Slices keep
// input order (a job's pods in the order its controller creates them).
type Set struct {
	Queues          []*schedulingv1beta1.Queue
	PriorityClasses []*schedulingv1.PriorityClass
	PodGroups       []*schedulingv1beta1.PodGroup
	// Pods are pending (spec.nodeName empty) or running: bound to a node of
	// the cluster, phase Running (see CheckRunning).
	Pods []*corev1.Pod
	// VolcanoJobTasks maps each Volcano Job ("namespace/name") to its task
	// names in spec.tasks order, which its pods' ranks follow and which no
	// pod or PodGroup carries.
	VolcanoJobTasks map[string][]string
	// Warnings are what the file asks that a cluster would do otherwise
	// than the simulation, one line each naming the object and the field
	// (a plain pod that names no scheduler: the default scheduler would
	// take it, the simulation gives it to Volcano).
	Warnings []string
	// Native maps PodGroups ("namespace/name") to their Volcano ≥ 1.12
	// spec.networkTopology and spec.subGroupPolicy, which the PodGroup
	// type (volcano.sh/apis v1.10) does not carry: as written on a
	// PodGroup, or as Volcano v1.14's job controller writes them from a
	// Job's spec.networkTopology and tasks' partitionPolicy.
	Native map[string]*placement.NativeTopology

	// running records where each running pod ("namespace/name") came from.
	running map[string]origin
}

// maxWorkloadPods is the most pods a workload file may hold, counting the
// pods its jobs expand into: a simulation of more is not something the
// scheduler's session loop does in reasonable time, and a typo in replicas
// must not exhaust memory.
const maxWorkloadPods = 20000

// groupAnnotationField is the field path of a pod's PodGroup annotation.
var groupAnnotationField = fmt.Sprintf("metadata.annotations[%q]", schedulingv1beta1.KubeGroupNameAnnotationKey)

// pgSource remembers where a PodGroup came from, to name it in errors.
type pgSource struct {
	origin
	kind, namespace, name string
	// queueField is the field naming the queue in the source object.
	queueField string
}

// podSource remembers where a Pod came from.
type podSource struct {
	origin
	kind, namespace, name string
	// prefix turns a pod field into the source object's field (for pods
	// expanded from a job template).
	prefix string
}

// LoadWorkload reads a workload file: multi-document YAML or JSON holding
// Queues, PodGroups and Pods (scheduling.k8s.io/group-name annotation
// required), Volcano Jobs, PyTorchJobs, Kubeflow Trainer TrainJobs with
// their (Cluster)TrainingRuntimes, and PriorityClasses. A "default" Queue
// is added unless the file defines Queues.
func LoadWorkload(file string, data []byte) (*Set, error) {
	objs, err := readObjects(file, data)
	if err != nil {
		return nil, err
	}
	for _, r := range objs {
		if ierr := workloadKinds.check(r); ierr != nil {
			return nil, ierr
		}
	}
	b := &setBuilder{set: &Set{}, reg: registry{}, classes: map[string]int32{}, runtimes: map[runtimeKey]runtimeEntry{}}
	// Priority classes and training runtimes first: jobs anywhere in the
	// file may name them.
	for _, r := range objs {
		var ierr *InputError
		switch r.kind {
		case KindPriorityClass:
			ierr = b.addPriorityClass(r)
		case KindTrainingRuntime, KindClusterTrainingRuntime:
			ierr = b.addRuntime(r)
		}
		if ierr != nil {
			return nil, ierr
		}
	}
	for _, r := range objs {
		if ierr := b.add(r); ierr != nil {
			return nil, ierr
		}
	}
	if ierr := b.finish(); ierr != nil {
		return nil, ierr
	}
	return b.set, nil
}

// setBuilder accumulates a Set and what cross-object checks need.
type setBuilder struct {
	set     *Set
	reg     registry
	clk     clock
	classes map[string]int32
	// runtimes are the file's Kubeflow Trainer runtimes.
	runtimes map[runtimeKey]runtimeEntry
	pgs      map[string]pgSource // by namespace/name
	pods     []podSource         // parallel to set.Pods
	// ranks maps each gang ("namespace/podgroup") to its pods' rdmatopo.io/rank
	// values, to the pod ("namespace/name") that carries each.
	ranks map[string]map[int]string
}

// add decodes one object and adds it (expanded) to the set.
func (b *setBuilder) add(r *rawObject) *InputError {
	switch r.kind {
	case KindQueue:
		q := &schedulingv1beta1.Queue{}
		if ierr := decodeStrict(r, q); ierr != nil {
			return ierr
		}
		return b.addQueue(r, q)
	case KindPodGroup:
		return b.addPodGroupObject(r)
	case KindPod:
		p := &corev1.Pod{}
		if ierr := decodeStrict(r, p); ierr != nil {
			return ierr
		}
		return b.addPod(r, p)
	case KindVolcanoJob:
		return b.addVolcanoJob(r)
	case KindPyTorchJob:
		return b.addPyTorchJob(r)
	case KindTrainJob:
		return b.addTrainJob(r)
	}
	return nil // PriorityClasses and runtimes were added first
}

// addPodGroupObject adds a PodGroup and its native topology fields.
func (b *setBuilder) addPodGroupObject(r *rawObject) *InputError {
	native, ierr := cutPodGroupNative(r)
	if ierr != nil {
		return ierr
	}
	pg := &schedulingv1beta1.PodGroup{}
	if ierr := decodeStrict(r, pg); ierr != nil {
		return ierr
	}
	if ierr := checkContract(r, pg.Namespace, pg.Name, pg.Annotations); ierr != nil {
		return ierr
	}
	if ierr := b.addPodGroup(r, pg); ierr != nil {
		return ierr
	}
	if native != nil {
		if ierr := checkNetworkTopology(r, "spec.networkTopology", native.NetworkTopology); ierr != nil {
			return ierr
		}
		b.setNative(pg, native)
	}
	return nil
}

// addVolcanoJob adds a Volcano Job's PodGroup and pods, its tasks' order
// and its native topology fields.
func (b *setBuilder) addVolcanoJob(r *rawObject) *InputError {
	native, ierr := cutJobNative(r)
	if ierr != nil {
		return ierr
	}
	job := &batchv1alpha1.Job{}
	if ierr := decodeStrict(r, job); ierr != nil {
		return ierr
	}
	if native.set() {
		r.name, r.namespace = job.Name, job.Namespace
		if ierr := defaultPartitions(r, job, native); ierr != nil {
			return ierr
		}
	}
	if ierr := b.addJob(r, KindVolcanoJob, job); ierr != nil {
		return ierr
	}
	pg, pods, ierr := expandVolcanoJob(r, job, b.classes, &b.clk, b.podRoom())
	if ierr != nil {
		return ierr
	}
	if b.set.VolcanoJobTasks == nil {
		b.set.VolcanoJobTasks = map[string][]string{}
	}
	for _, t := range job.Spec.Tasks {
		key := job.Namespace + "/" + job.Name
		b.set.VolcanoJobTasks[key] = append(b.set.VolcanoJobTasks[key], t.Name)
	}
	if native.set() {
		labelPartitions(job, native, pods)
	}
	if ierr := b.addExpanded(r, pg, pods, "spec.queue", "spec.tasks[].template."); ierr != nil {
		return ierr
	}
	if native.set() {
		b.setNative(pg, podGroupNative(job, native))
	}
	return nil
}

// addJob checks a job object's contract annotations and registers its
// kind and name: a second object of that kind and name is an input error.
func (b *setBuilder) addJob(r *rawObject, kind string, job metav1.Object) *InputError {
	if ierr := checkContract(r, job.GetNamespace(), job.GetName(), job.GetAnnotations()); ierr != nil {
		return ierr
	}
	return b.reg.add(r.origin, kind, job.GetNamespace(), job.GetName())
}

// addPyTorchJob adds a PyTorchJob's PodGroup and pods.
func (b *setBuilder) addPyTorchJob(r *rawObject) *InputError {
	job := &PyTorchJob{}
	if ierr := decodeStrict(r, job); ierr != nil {
		return ierr
	}
	if ierr := b.addJob(r, KindPyTorchJob, job); ierr != nil {
		return ierr
	}
	pg, pods, ierr := expandPyTorchJob(r, job, b.classes, &b.clk, b.podRoom())
	if ierr != nil {
		return ierr
	}
	return b.addExpanded(r, pg, pods, "spec.runPolicy.schedulingPolicy.queue", "spec.pytorchReplicaSpecs[].template.")
}

// addTrainJob adds a TrainJob's PodGroup and pods, as its runtime makes
// them, and the native topology fields the runtime writes.
func (b *setBuilder) addTrainJob(r *rawObject) *InputError {
	job := &TrainJob{}
	if ierr := decodeStrict(r, job); ierr != nil {
		return ierr
	}
	if ierr := b.reg.add(r.origin, KindTrainJob, job.Namespace, job.Name); ierr != nil {
		return ierr
	}
	pg, pods, native, ierr := expandTrainJob(r, job, b.runtimes, &b.clk, b.podRoom())
	if ierr != nil {
		return ierr
	}
	if ierr := b.addExpanded(r, pg, pods, fmt.Sprintf("spec.annotations[%q]", volcanoQueueAnnotation), "the runtime's spec.template.spec.replicatedJobs[].template.spec.template."); ierr != nil {
		return ierr
	}
	if native != nil {
		b.setNative(pg, native)
	}
	return nil
}

// setNative records a PodGroup's native topology fields.
func (b *setBuilder) setNative(pg *schedulingv1beta1.PodGroup, n *placement.NativeTopology) {
	if b.set.Native == nil {
		b.set.Native = map[string]*placement.NativeTopology{}
	}
	b.set.Native[pg.Namespace+"/"+pg.Name] = n
}

// addPriorityClass decodes a PriorityClass.
func (b *setBuilder) addPriorityClass(r *rawObject) *InputError {
	pc := &schedulingv1.PriorityClass{}
	if ierr := decodeStrict(r, pc); ierr != nil {
		return ierr
	}
	if pc.Name == "" {
		return r.errorf("metadata.name", "required")
	}
	r.name = pc.Name
	if ierr := b.reg.add(r.origin, KindPriorityClass, "", pc.Name); ierr != nil {
		return ierr
	}
	b.classes[pc.Name] = pc.Value
	b.set.PriorityClasses = append(b.set.PriorityClasses, pc)
	return nil
}

// addQueue validates a Queue and applies Volcano's defaults (weight 1,
// reclaimable, state Open).
func (b *setBuilder) addQueue(r *rawObject, q *schedulingv1beta1.Queue) *InputError {
	if q.Name == "" {
		return r.errorf("metadata.name", "required")
	}
	r.name = q.Name
	if ierr := b.reg.add(r.origin, KindQueue, "", q.Name); ierr != nil {
		return ierr
	}
	if q.Spec.Weight < 0 {
		return r.errorf("spec.weight", "must be >= 0, got %d", q.Spec.Weight)
	}
	if q.Spec.Weight == 0 {
		q.Spec.Weight = 1
	}
	if q.Spec.Reclaimable == nil {
		t := true
		q.Spec.Reclaimable = &t
	}
	if q.Status.State == "" {
		q.Status.State = schedulingv1beta1.QueueStateOpen
	}
	if q.UID == "" {
		q.UID = StableUID(KindQueue, "", q.Name)
	}
	q.CreationTimestamp = timeOr(q.CreationTimestamp, &b.clk)
	b.set.Queues = append(b.set.Queues, q)
	return nil
}

// addPodGroup validates a PodGroup of the file.
func (b *setBuilder) addPodGroup(r *rawObject, pg *schedulingv1beta1.PodGroup) *InputError {
	if pg.Name == "" {
		return r.errorf("metadata.name", "required")
	}
	if pg.Namespace == "" {
		pg.Namespace = DefaultNamespace
	}
	r.name, r.namespace = pg.Name, pg.Namespace
	if pg.Spec.MinMember < 0 {
		return r.errorf("spec.minMember", "must be >= 0, got %d", pg.Spec.MinMember)
	}
	if pg.UID == "" {
		pg.UID = StableUID(KindPodGroup, pg.Namespace, pg.Name)
	}
	pg.CreationTimestamp = timeOr(pg.CreationTimestamp, &b.clk)
	src := pgSource{origin: r.origin, kind: KindPodGroup, namespace: pg.Namespace, name: pg.Name, queueField: "spec.queue"}
	return b.putPodGroup(src, pg)
}

// putPodGroup defaults and records a PodGroup.
func (b *setBuilder) putPodGroup(src pgSource, pg *schedulingv1beta1.PodGroup) *InputError {
	if ierr := b.reg.add(src.origin, KindPodGroup, pg.Namespace, pg.Name); ierr != nil {
		ierr.Kind, ierr.Namespace, ierr.Name = src.kind, src.namespace, src.name
		ierr.Msg = fmt.Sprintf("PodGroup %s/%s is defined twice (%s)", pg.Namespace, pg.Name, ierr.Msg)
		return ierr
	}
	if pg.Spec.Queue == "" {
		pg.Spec.Queue = DefaultQueue
	}
	if pg.Status.Phase == "" {
		pg.Status.Phase = schedulingv1beta1.PodGroupPending
	}
	if b.pgs == nil {
		b.pgs = map[string]pgSource{}
	}
	b.pgs[pg.Namespace+"/"+pg.Name] = src
	b.set.PodGroups = append(b.set.PodGroups, pg)
	return nil
}

// addPod validates a Pod of the file: pending, or running (spec.nodeName
// set, phase Running; its rdmatopo.io annotations are checked as a cluster
// file's bound pods' are, by preparePod).
func (b *setBuilder) addPod(r *rawObject, p *corev1.Pod) *InputError {
	if ierr := preparePod(r, p, b.reg, &b.clk); ierr != nil {
		return ierr
	}
	src := podSource{origin: r.origin, kind: KindPod, namespace: p.Namespace, name: p.Name}
	if p.Spec.NodeName != "" {
		switch p.Status.Phase {
		case "", corev1.PodPending, corev1.PodRunning:
			p.Status.Phase = corev1.PodRunning
		default:
			return r.errorf("status.phase", "%q: a workload pod with spec.nodeName set is a running pod (phase Running); finished pods belong in the cluster file", p.Status.Phase)
		}
		if b.set.running == nil {
			b.set.running = map[string]origin{}
		}
		b.set.running[p.Namespace+"/"+p.Name] = r.origin
	}
	if p.Annotations[schedulingv1beta1.KubeGroupNameAnnotationKey] == "" {
		return r.errorf(groupAnnotationField, "required: every workload pod belongs to a PodGroup")
	}
	switch p.Spec.SchedulerName {
	case "":
		if p.Spec.NodeName == "" {
			b.set.Warnings = append(b.set.Warnings, r.errorf("spec.schedulerName",
				"unset: on a cluster the default scheduler takes this pod, not Volcano, and no controller sets the field for a plain PodGroup's pods; simulated as Volcano's (set spec.schedulerName: %s)",
				DefaultSchedulerName).Error())
		}
		p.Spec.SchedulerName = DefaultSchedulerName
	case DefaultSchedulerName:
	default:
		return r.errorf("spec.schedulerName", "%q: only pods for the %q scheduler are simulated", p.Spec.SchedulerName, DefaultSchedulerName)
	}
	return b.putPod(src, p)
}

// addExpanded records a job's PodGroup and pods.
func (b *setBuilder) addExpanded(r *rawObject, pg *schedulingv1beta1.PodGroup, pods []*corev1.Pod, queueField, podPrefix string) *InputError {
	src := pgSource{origin: r.origin, kind: r.kind, namespace: r.namespace, name: r.name, queueField: queueField}
	if ierr := b.putPodGroup(src, pg); ierr != nil {
		return ierr
	}
	for _, p := range pods {
		if ierr := b.reg.add(r.origin, KindPod, p.Namespace, p.Name); ierr != nil {
			ierr.Kind, ierr.Namespace, ierr.Name = r.kind, r.namespace, r.name
			ierr.Msg = fmt.Sprintf("generated pod %s/%s clashes with another pod (%s)", p.Namespace, p.Name, ierr.Msg)
			return ierr
		}
		psrc := podSource{origin: r.origin, kind: r.kind, namespace: r.namespace, name: r.name, prefix: podPrefix}
		if ierr := b.putPod(psrc, p); ierr != nil {
			return ierr
		}
	}
	return nil
}

// podRoom is how many more pods the file may hold.
func (b *setBuilder) podRoom() int64 { return int64(maxWorkloadPods - len(b.set.Pods)) }

// putPod applies the priority admission and records a pod.
func (b *setBuilder) putPod(src podSource, p *corev1.Pod) *InputError {
	if b.podRoom() <= 0 {
		return src.origin.errorf(src.kind, src.namespace, src.name, "metadata.name", "a workload file holds at most %d pods", maxWorkloadPods)
	}
	if field, msg := checkQuantities(&p.Spec); field != "" {
		return src.origin.errorf(src.kind, src.namespace, src.name, src.prefix+field, "%s", msg)
	}
	if v, ok := p.Annotations[placement.AnnotationRank]; ok {
		field := fmt.Sprintf("%smetadata.annotations[%q]", src.prefix, placement.AnnotationRank)
		r, ok := placement.ParseRank(v)
		if !ok {
			return src.origin.errorf(src.kind, src.namespace, src.name, field, "%s", placement.RankProblem(v))
		}
		if group := p.Annotations[schedulingv1beta1.KubeGroupNameAnnotationKey]; group != "" {
			gang, pod := p.Namespace+"/"+group, p.Namespace+"/"+p.Name
			if b.ranks == nil {
				b.ranks = map[string]map[int]string{}
			}
			if b.ranks[gang] == nil {
				b.ranks[gang] = map[int]string{}
			}
			if other, dup := b.ranks[gang][r]; dup {
				return src.origin.errorf(src.kind, src.namespace, src.name, field, "%s", placement.DuplicateRankProblem(v, other))
			}
			b.ranks[gang][r] = pod
		}
	}
	if src.prefix != "" && p.Spec.NodeName != "" {
		return src.origin.errorf(src.kind, src.namespace, src.name, src.prefix+"spec.nodeName",
			"must be empty: a job's pods are created pending (running pods are plain Pods of the workload)")
	}
	if name := p.Spec.PriorityClassName; name != "" {
		v, ok := b.classes[name]
		if !ok && !strings.HasPrefix(name, "system-") {
			return src.origin.errorf(src.kind, src.namespace, src.name, src.prefix+"spec.priorityClassName", "no PriorityClass named %q in the workload", name)
		}
		p.Spec.Priority = &v
	}
	b.pods = append(b.pods, src)
	b.set.Pods = append(b.set.Pods, p)
	return nil
}

// finish adds the default queue and checks references between objects.
func (b *setBuilder) finish() *InputError {
	if len(b.set.Queues) == 0 {
		b.set.Queues = append(b.set.Queues, NewDefaultQueue())
	}
	queues := make(map[string]bool, len(b.set.Queues))
	for _, q := range b.set.Queues {
		queues[q.Name] = true
	}
	for _, pg := range b.set.PodGroups {
		if !queues[pg.Spec.Queue] {
			src := b.pgs[pg.Namespace+"/"+pg.Name]
			return src.origin.errorf(src.kind, src.namespace, src.name, src.queueField, "queue %q is not defined in the workload", pg.Spec.Queue)
		}
	}
	running := map[string]int32{}
	members := map[string]int{}
	for i, p := range b.set.Pods {
		group := p.Annotations[schedulingv1beta1.KubeGroupNameAnnotationKey]
		if _, ok := b.pgs[p.Namespace+"/"+group]; !ok {
			src := b.pods[i]
			return src.origin.errorf(src.kind, src.namespace, src.name, groupAnnotationField, "PodGroup %s/%s is not defined in the workload", p.Namespace, group)
		}
		members[p.Namespace+"/"+group]++
		if p.Spec.NodeName != "" {
			running[p.Namespace+"/"+group]++
		}
	}
	if ierr := b.checkPodContracts(); ierr != nil {
		return ierr
	}
	if ierr := b.checkSegments(members); ierr != nil {
		return ierr
	}
	// A PodGroup whose running pods meet its minMember runs, as Volcano
	// would have recorded it.
	for _, pg := range b.set.PodGroups {
		if n := running[pg.Namespace+"/"+pg.Name]; n > 0 && n >= pg.Spec.MinMember && pg.Status.Phase == schedulingv1beta1.PodGroupPending {
			pg.Status.Phase = schedulingv1beta1.PodGroupRunning
			pg.Status.Running = n
		}
	}
	return nil
}

// NewDefaultQueue returns the "default" Queue Volcano creates at start-up.
func NewDefaultQueue() *schedulingv1beta1.Queue {
	return NewQueue(DefaultQueue, 1, true)
}

// NewQueue returns an open Queue of the given weight, created before the
// workload's epoch, whose pods other queues may reclaim when reclaimable.
func NewQueue(name string, weight int32, reclaimable bool) *schedulingv1beta1.Queue {
	return &schedulingv1beta1.Queue{
		TypeMeta: metav1.TypeMeta{APIVersion: APIVersionScheduling, Kind: KindQueue},
		ObjectMeta: metav1.ObjectMeta{
			Name:              name,
			UID:               StableUID(KindQueue, "", name),
			CreationTimestamp: metav1.NewTime(Epoch.Add(-48 * time.Hour)),
		},
		Spec:   schedulingv1beta1.QueueSpec{Weight: weight, Reclaimable: &reclaimable},
		Status: schedulingv1beta1.QueueStatus{State: schedulingv1beta1.QueueStateOpen},
	}
}
