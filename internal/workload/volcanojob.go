package workload

import (
	"fmt"
	"sort"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	batchv1alpha1 "volcano.sh/apis/pkg/apis/batch/v1alpha1"
	schedulingv1beta1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"
	controllerutil "volcano.sh/volcano/pkg/controllers/util"
)

// Annotation and label keys Volcano's job controller (v1.10) puts on the
// pods it creates, beyond those of the batch API package.
const (
	// numaPolicyKey carries a task's topologyPolicy.
	numaPolicyKey = "volcano.sh/numa-topology-policy"
	// jobAnnotationsToPods are the job annotations the controller copies
	// onto its pods; every other job annotation lands on the PodGroup only.
	podPreemptableKey = "volcano.sh/preemptable"
	cooldownTimeKey   = "volcano.sh/cooldown-time"
	revocableZoneKey  = "volcano.sh/revocable-zone"
	jdbMinAvailable   = "volcano.sh/jdb-min-available"
	jdbMaxUnavailable = "volcano.sh/jdb-max-unavailable"
)

// VolcanoPodGroupName is the name Volcano v1.10's job controller gives the
// PodGroup of a Job: the job's name and UID joined by a dash.
func VolcanoPodGroupName(jobName string, uid string) string {
	return jobName + "-" + uid
}

// VolcanoPodName is the name of replica index of a Volcano Job's task.
func VolcanoPodName(jobName, taskName string, index int) string {
	return fmt.Sprintf("%s-%s-%d", jobName, taskName, index)
}

// identifyJob checks a job's name, defaults its namespace and UID (stable
// across runs), and names it in the errors of r.
func identifyJob(r *rawObject, kind string, meta *metav1.ObjectMeta) *InputError {
	if meta.Name == "" {
		return r.errorf("metadata.name", "required")
	}
	if meta.Namespace == "" {
		meta.Namespace = DefaultNamespace
	}
	r.name, r.namespace = meta.Name, meta.Namespace
	if meta.UID == "" {
		meta.UID = StableUID(kind, meta.Namespace, meta.Name)
	}
	return nil
}

// expandVolcanoJob applies the admission webhook's defaults and checks to a
// batch.volcano.sh/v1alpha1 Job, then builds the PodGroup and Pods its
// controller would create.
func expandVolcanoJob(r *rawObject, job *batchv1alpha1.Job, classes map[string]int32, clk *clock, room int64) (*schedulingv1beta1.PodGroup, []*corev1.Pod, *InputError) {
	if ierr := identifyJob(r, KindVolcanoJob, &job.ObjectMeta); ierr != nil {
		return nil, nil, ierr
	}
	if ierr := defaultVolcanoJob(r, job, room); ierr != nil {
		return nil, nil, ierr
	}

	pgName := VolcanoPodGroupName(job.Name, string(job.UID))
	owner := metav1.NewControllerRef(job, batchv1alpha1.SchemeGroupVersion.WithKind(KindVolcanoJob))
	minTask := make(map[string]int32, len(job.Spec.Tasks))
	for _, t := range job.Spec.Tasks {
		minTask[t.Name] = *t.MinAvailable
	}
	minRes := volcanoMinResources(job, classes)
	pg := controllerPodGroup(job, pgName, copyMap(job.Labels), copyMap(job.Annotations), *owner, schedulingv1beta1.PodGroupSpec{
		MinMember:         job.Spec.MinAvailable,
		MinTaskMember:     minTask,
		Queue:             job.Spec.Queue,
		PriorityClassName: job.Spec.PriorityClassName,
		MinResources:      &minRes,
	}, clk)

	var pods []*corev1.Pod
	for ti := range job.Spec.Tasks {
		task := &job.Spec.Tasks[ti]
		for i := 0; i < int(task.Replicas); i++ {
			pods = append(pods, volcanoPod(job, task, i, pgName, owner, clk))
		}
	}
	return pg, pods, nil
}

// defaultVolcanoJob applies the mutating webhook's defaults and the
// validating webhook's checks that matter for scheduling. The job may
// expand into at most room pods.
func defaultVolcanoJob(r *rawObject, job *batchv1alpha1.Job, room int64) *InputError {
	if job.Spec.Queue == "" {
		job.Spec.Queue = DefaultQueue
	}
	if job.Spec.SchedulerName == "" {
		job.Spec.SchedulerName = DefaultSchedulerName
	}
	if len(job.Spec.Tasks) == 0 {
		return r.errorf("spec.tasks", "required: no task specified")
	}
	names := map[string]bool{}
	var total int64
	var sumMin int32
	for i := range job.Spec.Tasks {
		t := &job.Spec.Tasks[i]
		field := fmt.Sprintf("spec.tasks[%d]", i)
		if t.Name == "" {
			t.Name = batchv1alpha1.DefaultTaskSpec + strconv.Itoa(i)
		}
		if errs := validation.IsDNS1123Label(t.Name); len(errs) > 0 {
			return r.errorf(field+".name", "%q is not a valid task name: %s", t.Name, errs[0])
		}
		if names[t.Name] {
			return r.errorf(field+".name", "duplicate task name %q", t.Name)
		}
		names[t.Name] = true
		if t.Replicas < 0 {
			return r.errorf(field+".replicas", "must be >= 0, got %d", t.Replicas)
		}
		if total+int64(t.Replicas) > room {
			return r.errorf(field+".replicas", "%d replicas would bring the workload past %d pods, the most a workload file holds", t.Replicas, maxWorkloadPods)
		}
		if t.MinAvailable == nil {
			m := t.Replicas
			t.MinAvailable = &m
		}
		if *t.MinAvailable < 0 || *t.MinAvailable > t.Replicas {
			return r.errorf(field+".minAvailable", "must be between 0 and replicas (%d), got %d", t.Replicas, *t.MinAvailable)
		}
		if len(t.Template.Spec.Containers) == 0 {
			return r.errorf(field+".template.spec.containers", "required: a pod needs at least one container")
		}
		defaultRequests(&t.Template.Spec)
		total += int64(t.Replicas)
		sumMin += *t.MinAvailable
	}
	if job.Spec.MinAvailable < 0 {
		return r.errorf("spec.minAvailable", "must be >= 0, got %d", job.Spec.MinAvailable)
	}
	if job.Spec.MinAvailable == 0 {
		job.Spec.MinAvailable = sumMin
	}
	if int64(job.Spec.MinAvailable) > total {
		return r.errorf("spec.minAvailable", "%d is greater than the total replicas of the tasks (%d)", job.Spec.MinAvailable, total)
	}
	if job.Spec.SchedulerName != DefaultSchedulerName {
		return r.errorf("spec.schedulerName", "%q: only pods for the %q scheduler are simulated", job.Spec.SchedulerName, DefaultSchedulerName)
	}
	return nil
}

// volcanoPod builds replica index of a task as the job controller does.
func volcanoPod(job *batchv1alpha1.Job, task *batchv1alpha1.TaskSpec, index int, pgName string, owner *metav1.OwnerReference, clk *clock) *corev1.Pod {
	tpl := task.Template.DeepCopy()
	name := VolcanoPodName(job.Name, task.Name, index)
	pod := controllerPod(job.Namespace, name, tpl.Labels, tpl.Annotations, *owner, tpl.Spec)
	if pod.Spec.SchedulerName == "" {
		pod.Spec.SchedulerName = job.Spec.SchedulerName
	}
	if pod.Annotations == nil {
		pod.Annotations = map[string]string{}
	}
	idx := strconv.Itoa(index)
	pod.Annotations[batchv1alpha1.TaskIndex] = idx
	pod.Annotations[batchv1alpha1.TaskSpecKey] = task.Name
	pod.Annotations[schedulingv1beta1.KubeGroupNameAnnotationKey] = pgName
	pod.Annotations[batchv1alpha1.JobNameKey] = job.Name
	pod.Annotations[batchv1alpha1.QueueNameKey] = job.Spec.Queue
	pod.Annotations[batchv1alpha1.JobVersion] = "0"
	pod.Annotations[batchv1alpha1.PodTemplateKey] = job.Name + "-" + task.Name
	pod.Annotations[batchv1alpha1.JobRetryCountKey] = "0"
	if task.TopologyPolicy != "" {
		pod.Annotations[numaPolicyKey] = string(task.TopologyPolicy)
	}
	for _, k := range []string{podPreemptableKey, cooldownTimeKey, revocableZoneKey} {
		if v, ok := job.Annotations[k]; ok {
			pod.Annotations[k] = v
		}
	}
	if v, ok := job.Annotations[jdbMinAvailable]; ok {
		pod.Annotations[jdbMinAvailable] = v
	} else if v, ok := job.Annotations[jdbMaxUnavailable]; ok {
		pod.Annotations[jdbMaxUnavailable] = v
	}
	if pod.Labels == nil {
		pod.Labels = map[string]string{}
	}
	pod.Labels[batchv1alpha1.TaskIndex] = idx
	pod.Labels[batchv1alpha1.JobNameKey] = job.Name
	pod.Labels[batchv1alpha1.TaskSpecKey] = task.Name
	pod.Labels[batchv1alpha1.JobNamespaceKey] = job.Namespace
	pod.Labels[batchv1alpha1.QueueNameKey] = job.Spec.Queue
	for _, k := range []string{podPreemptableKey, cooldownTimeKey} {
		if v, ok := job.Labels[k]; ok {
			pod.Labels[k] = v
		}
	}
	pod.CreationTimestamp = metav1.NewTime(clk.tick())
	return pod
}

// volcanoMinResources is the PodGroup's minResources as the job controller
// computes it: tasks ordered by priority (highest first); when the job's
// minAvailable is below the sum of the tasks' minAvailable, the requests of
// the first minAvailable pods; otherwise each task's minAvailable pods, then
// further replicas until the job's minAvailable is reached. Pod usage is
// counted as Kubernetes resource quota counts it.
func volcanoMinResources(job *batchv1alpha1.Job, classes map[string]int32) corev1.ResourceList {
	type prioTask struct {
		prio int32
		task *batchv1alpha1.TaskSpec
	}
	tasks := make([]prioTask, 0, len(job.Spec.Tasks))
	var sumMin int32
	for i := range job.Spec.Tasks {
		t := &job.Spec.Tasks[i]
		tasks = append(tasks, prioTask{prio: classes[t.Template.Spec.PriorityClassName], task: t})
		sumMin += *t.MinAvailable
	}
	sort.SliceStable(tasks, func(i, j int) bool { return tasks[i].prio > tasks[j].prio })

	total := corev1.ResourceList{}
	add := func(t *batchv1alpha1.TaskSpec, n int32) {
		if n <= 0 {
			return
		}
		usage := controllerutil.GetPodQuotaUsage(&corev1.Pod{Spec: t.Template.Spec})
		addList(total, scaled(*usage, n))
	}
	want := job.Spec.MinAvailable
	if want < sumMin {
		for _, pt := range tasks {
			n := min(want, pt.task.Replicas)
			add(pt.task, n)
			want -= n
			if want <= 0 {
				break
			}
		}
		return total
	}
	var counted int32
	for _, pt := range tasks {
		n := min(*pt.task.MinAvailable, want-counted)
		add(pt.task, n)
		counted += n
		if counted >= want {
			return total
		}
	}
	left := want - counted
	for _, pt := range tasks {
		spare := pt.task.Replicas - *pt.task.MinAvailable
		n := min(spare, left)
		add(pt.task, n)
		left -= n
		if left <= 0 {
			break
		}
	}
	return total
}

// copyMap returns a copy of m (nil for an empty map).
func copyMap(m map[string]string) map[string]string {
	if len(m) == 0 {
		return nil
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}
