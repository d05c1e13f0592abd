package workload

import (
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	batchv1alpha1 "volcano.sh/apis/pkg/apis/batch/v1alpha1"
	schedulingv1beta1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"
)

// PyTorchJob is the part of the kubeflow.org/v1 PyTorchJob (training
// operator v1.8) that decides scheduling. Fields the scheduler never sees
// (elasticPolicy, status) are accepted as opaque JSON, so valid manifests
// decode strictly.
type PyTorchJob struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              PyTorchJobSpec  `json:"spec,omitempty"`
	Status            json.RawMessage `json:"status,omitempty"`
}

// PyTorchJobSpec holds the replica specs and run policy.
type PyTorchJobSpec struct {
	RunPolicy           RunPolicy               `json:"runPolicy"`
	ElasticPolicy       json.RawMessage         `json:"elasticPolicy,omitempty"`
	PyTorchReplicaSpecs map[string]*ReplicaSpec `json:"pytorchReplicaSpecs"`
	NprocPerNode        *string                 `json:"nprocPerNode,omitempty"`
}

// ReplicaSpec describes one replica type (Master, Worker).
type ReplicaSpec struct {
	Replicas      *int32                 `json:"replicas,omitempty"`
	Template      corev1.PodTemplateSpec `json:"template,omitempty"`
	RestartPolicy string                 `json:"restartPolicy,omitempty"`
}

// RunPolicy holds the job's scheduling policy among other run settings.
type RunPolicy struct {
	CleanPodPolicy          *string           `json:"cleanPodPolicy,omitempty"`
	TTLSecondsAfterFinished *int32            `json:"ttlSecondsAfterFinished,omitempty"`
	ActiveDeadlineSeconds   *int64            `json:"activeDeadlineSeconds,omitempty"`
	BackoffLimit            *int32            `json:"backoffLimit,omitempty"`
	SchedulingPolicy        *SchedulingPolicy `json:"schedulingPolicy,omitempty"`
	Suspend                 *bool             `json:"suspend,omitempty"`
	ManagedBy               *string           `json:"managedBy,omitempty"`
}

// SchedulingPolicy is the gang-scheduling part of a RunPolicy.
type SchedulingPolicy struct {
	MinAvailable           *int32                                     `json:"minAvailable,omitempty"`
	Queue                  string                                     `json:"queue,omitempty"`
	MinResources           *map[corev1.ResourceName]resource.Quantity `json:"minResources,omitempty"`
	PriorityClass          string                                     `json:"priorityClass,omitempty"`
	ScheduleTimeoutSeconds *int32                                     `json:"scheduleTimeoutSeconds,omitempty"`
}

// Labels the training operator puts on its pods.
const (
	kubeflowGroupLabel        = "training.kubeflow.org/operator-name"
	kubeflowJobNameLabel      = "training.kubeflow.org/job-name"
	kubeflowReplicaTypeLabel  = "training.kubeflow.org/replica-type"
	kubeflowReplicaIndexLabel = "training.kubeflow.org/replica-index"
	kubeflowJobRoleLabel      = "training.kubeflow.org/job-role"
	pytorchOperatorName       = "pytorchjob-controller"
	pytorchMaster             = "Master"
	pytorchWorker             = "Worker"
)

// pytorchGVK is the PyTorchJob's group, version and kind.
var pytorchGVK = schema.GroupVersionKind{Group: "kubeflow.org", Version: "v1", Kind: KindPyTorchJob}

// PyTorchPodName is the name of replica index of a replica type, as the
// training operator names it: job, lower-cased type and index.
func PyTorchPodName(jobName, replicaType string, index int) string {
	return strings.ReplaceAll(jobName+"-"+strings.ToLower(replicaType)+"-"+strconv.Itoa(index), "/", "-")
}

// expandPyTorchJob builds the PodGroup (named like the job, minMember = all
// replicas unless schedulingPolicy.minAvailable says otherwise, the job's
// annotations copied) and the Pods the training operator creates with
// Volcano gang scheduling.
func expandPyTorchJob(r *rawObject, job *PyTorchJob, classes map[string]int32, clk *clock, room int64) (*schedulingv1beta1.PodGroup, []*corev1.Pod, *InputError) {
	if ierr := identifyJob(r, KindPyTorchJob, &job.ObjectMeta); ierr != nil {
		return nil, nil, ierr
	}
	types, ierr := pytorchReplicaTypes(r, job)
	if ierr != nil {
		return nil, nil, ierr
	}

	var total int32
	for _, rt := range types {
		n := *job.Spec.PyTorchReplicaSpecs[rt].Replicas
		if int64(total)+int64(n) > room {
			return nil, nil, r.errorf("spec.pytorchReplicaSpecs."+rt+".replicas", "%d replicas would bring the workload past %d pods, the most a workload file holds", n, maxWorkloadPods)
		}
		total += n
	}
	minMember, queue, prio := total, DefaultQueue, ""
	var minRes *corev1.ResourceList
	if sp := job.Spec.RunPolicy.SchedulingPolicy; sp != nil {
		if sp.MinAvailable != nil {
			if *sp.MinAvailable < 0 || *sp.MinAvailable > total {
				return nil, nil, r.errorf("spec.runPolicy.schedulingPolicy.minAvailable", "must be between 0 and the total replicas (%d), got %d", total, *sp.MinAvailable)
			}
			minMember = *sp.MinAvailable
		}
		if sp.Queue != "" {
			queue = sp.Queue
		}
		prio = sp.PriorityClass
		if sp.MinResources != nil {
			rl := corev1.ResourceList(*sp.MinResources)
			minRes = &rl
		}
	}
	if minRes == nil {
		rl := pytorchMinResources(job, types, minMember, classes)
		minRes = &rl
	}

	owner := metav1.NewControllerRef(job, pytorchGVK)
	pg := controllerPodGroup(job, job.Name, nil, copyMap(job.Annotations), *owner, schedulingv1beta1.PodGroupSpec{
		MinMember:         minMember,
		Queue:             queue,
		PriorityClassName: prio,
		MinResources:      minRes,
	}, clk)

	var pods []*corev1.Pod
	for _, rt := range types {
		spec := job.Spec.PyTorchReplicaSpecs[rt]
		for i := 0; i < int(*spec.Replicas); i++ {
			pods = append(pods, pytorchPod(job, rt, spec, i, owner, clk))
		}
	}
	return pg, pods, nil
}

// pytorchReplicaTypes applies the operator's defaulting (type names in
// CamelCase, one replica when unset) and returns the types, Master first.
func pytorchReplicaTypes(r *rawObject, job *PyTorchJob) ([]string, *InputError) {
	if len(job.Spec.PyTorchReplicaSpecs) == 0 {
		return nil, r.errorf("spec.pytorchReplicaSpecs", "required: at least one replica type (Master, Worker)")
	}
	specs := make(map[string]*ReplicaSpec, len(job.Spec.PyTorchReplicaSpecs))
	for name, spec := range job.Spec.PyTorchReplicaSpecs {
		field := fmt.Sprintf("spec.pytorchReplicaSpecs.%s", name)
		var rt string
		switch strings.ToLower(name) {
		case "master":
			rt = pytorchMaster
		case "worker":
			rt = pytorchWorker
		default:
			return nil, r.errorf(field, "unknown replica type %q (Master or Worker)", name)
		}
		if _, dup := specs[rt]; dup {
			return nil, r.errorf(field, "replica type %s given twice", rt)
		}
		if spec == nil {
			return nil, r.errorf(field, "must be an object")
		}
		if spec.Replicas == nil {
			one := int32(1)
			spec.Replicas = &one
		}
		if *spec.Replicas < 0 {
			return nil, r.errorf(field+".replicas", "must be >= 0, got %d", *spec.Replicas)
		}
		if rt == pytorchMaster && *spec.Replicas > 1 {
			return nil, r.errorf(field+".replicas", "a PyTorchJob has at most one Master, got %d", *spec.Replicas)
		}
		if len(spec.Template.Spec.Containers) == 0 {
			return nil, r.errorf(field+".template.spec.containers", "required: a pod needs at least one container")
		}
		if s := spec.Template.Spec.SchedulerName; s != "" && s != DefaultSchedulerName {
			return nil, r.errorf(field+".template.spec.schedulerName", "%q: only pods for the %q scheduler are simulated", s, DefaultSchedulerName)
		}
		defaultRequests(&spec.Template.Spec)
		specs[rt] = spec
	}
	job.Spec.PyTorchReplicaSpecs = specs
	types := make([]string, 0, len(specs))
	for _, rt := range []string{pytorchMaster, pytorchWorker} {
		if _, ok := specs[rt]; ok {
			types = append(types, rt)
		}
	}
	return types, nil
}

// pytorchPod builds replica index of type rt as the training operator does
// with Volcano as gang scheduler.
func pytorchPod(job *PyTorchJob, rt string, spec *ReplicaSpec, index int, owner *metav1.OwnerReference, clk *clock) *corev1.Pod {
	tpl := spec.Template.DeepCopy()
	name := PyTorchPodName(job.Name, rt, index)
	lower := strings.ToLower(rt)
	labels := tpl.Labels
	if labels == nil {
		labels = map[string]string{}
	}
	labels[kubeflowGroupLabel] = pytorchOperatorName
	labels[kubeflowJobNameLabel] = strings.ReplaceAll(job.Name, "/", "-")
	labels[kubeflowReplicaTypeLabel] = lower
	labels[kubeflowReplicaIndexLabel] = strconv.Itoa(index)
	if rt == pytorchMaster {
		labels[kubeflowJobRoleLabel] = "master"
	}
	ann := tpl.Annotations
	if ann == nil {
		ann = map[string]string{}
	}
	ann[schedulingv1beta1.KubeGroupNameAnnotationKey] = job.Name
	ann[batchv1alpha1.TaskSpecKey] = lower
	pod := controllerPod(job.Namespace, name, labels, ann, *owner, tpl.Spec)
	if pod.Spec.SchedulerName == "" {
		pod.Spec.SchedulerName = DefaultSchedulerName
	}
	// The operator defaults the restart policy to OnFailure and runs
	// ExitCode pods with Never (it restarts them itself).
	switch spec.RestartPolicy {
	case "":
		pod.Spec.RestartPolicy = corev1.RestartPolicyOnFailure
	case "ExitCode":
		pod.Spec.RestartPolicy = corev1.RestartPolicyNever
	default:
		pod.Spec.RestartPolicy = corev1.RestartPolicy(spec.RestartPolicy)
	}
	pod.CreationTimestamp = metav1.NewTime(clk.tick())
	return pod
}

// pytorchMinResources sums the requests of the first minMember replicas,
// replica types ordered by priority (highest first), as the operator does.
func pytorchMinResources(job *PyTorchJob, types []string, minMember int32, classes map[string]int32) corev1.ResourceList {
	ordered := append([]string(nil), types...)
	prio := func(rt string) int32 {
		return classes[job.Spec.PyTorchReplicaSpecs[rt].Template.Spec.PriorityClassName]
	}
	sort.SliceStable(ordered, func(i, j int) bool { return prio(ordered[i]) > prio(ordered[j]) })
	total := corev1.ResourceList{}
	var counted int32
	for _, rt := range ordered {
		spec := job.Spec.PyTorchReplicaSpecs[rt]
		n := min(*spec.Replicas, minMember-counted)
		if n <= 0 {
			break
		}
		for _, c := range spec.Template.Spec.Containers {
			addList(total, scaled(c.Resources.Requests, n))
		}
		counted += n
	}
	return total
}
