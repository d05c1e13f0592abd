package workload

import (
	"encoding/json"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// The Kubeflow Trainer v2.1.0 (trainer.kubeflow.org/v1alpha1) and JobSet
// v0.10.1 (jobset.sigs.k8s.io/v1alpha2) objects a workload file may hold,
// as local types: their Go modules require Kubernetes 1.34, which the
// Volcano v1.10 build cannot take. Each type keeps the fields that decide
// which pods exist and what they ask for; fields that change neither
// (initializer settings, torch elasticity, JobSet network and policies)
// are accepted as opaque JSON, so valid manifests decode strictly.

// TrainJob is a trainer.kubeflow.org/v1alpha1 TrainJob.
type TrainJob struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              TrainJobSpec    `json:"spec"`
	Status            json.RawMessage `json:"status,omitempty"`
}

// TrainJobSpec is what a TrainJob asks of its runtime.
type TrainJobSpec struct {
	RuntimeRef  RuntimeRef      `json:"runtimeRef"`
	Initializer json.RawMessage `json:"initializer,omitempty"`
	Trainer     *TrainJobNodes  `json:"trainer,omitempty"`
	// Labels and Annotations override the runtime template's metadata
	// on the JobSet (the queue annotation among them).
	Labels               map[string]string     `json:"labels,omitempty"`
	Annotations          map[string]string     `json:"annotations,omitempty"`
	PodTemplateOverrides []PodTemplateOverride `json:"podTemplateOverrides,omitempty"`
	Suspend              *bool                 `json:"suspend,omitempty"`
	ManagedBy            *string               `json:"managedBy,omitempty"`
}

// RuntimeRef names a ClusterTrainingRuntime (the default kind) or a
// TrainingRuntime of the TrainJob's namespace.
type RuntimeRef struct {
	Name     string  `json:"name"`
	APIGroup *string `json:"apiGroup,omitempty"`
	Kind     *string `json:"kind,omitempty"`
}

// TrainJobNodes is the TrainJob's spec.trainer: the trainer pods' count,
// resources and container settings.
type TrainJobNodes struct {
	Image            *string                      `json:"image,omitempty"`
	Command          []string                     `json:"command,omitempty"`
	Args             []string                     `json:"args,omitempty"`
	Env              []corev1.EnvVar              `json:"env,omitempty"`
	NumNodes         *int32                       `json:"numNodes,omitempty"`
	ResourcesPerNode *corev1.ResourceRequirements `json:"resourcesPerNode,omitempty"`
	NumProcPerNode   *intstr.IntOrString          `json:"numProcPerNode,omitempty"`
}

// PodTemplateOverride patches the pod templates of the named replicated
// jobs (a strategic merge patch, as Trainer applies it).
type PodTemplateOverride struct {
	TargetJobs []PodTemplateOverrideTarget `json:"targetJobs"`
	Metadata   *TemplateMeta               `json:"metadata,omitempty"`
	Spec       *PodTemplateSpecOverride    `json:"spec,omitempty"`
}

// PodTemplateOverrideTarget names a replicated job of the runtime.
type PodTemplateOverrideTarget struct {
	Name string `json:"name"`
}

// TemplateMeta is the metadata of a runtime's JobSet template or of a pod
// template override: Trainer reads its labels and annotations only.
type TemplateMeta struct {
	Labels      map[string]string `json:"labels,omitempty"`
	Annotations map[string]string `json:"annotations,omitempty"`
}

// PodTemplateSpecOverride is the part of a pod spec an override may set.
type PodTemplateSpecOverride struct {
	ServiceAccountName *string                       `json:"serviceAccountName,omitempty"`
	NodeSelector       map[string]string             `json:"nodeSelector,omitempty"`
	Affinity           *corev1.Affinity              `json:"affinity,omitempty"`
	Tolerations        []corev1.Toleration           `json:"tolerations,omitempty"`
	Volumes            []corev1.Volume               `json:"volumes,omitempty"`
	InitContainers     []ContainerOverride           `json:"initContainers,omitempty"`
	Containers         []ContainerOverride           `json:"containers,omitempty"`
	SchedulingGates    []corev1.PodSchedulingGate    `json:"schedulingGates,omitempty"`
	ImagePullSecrets   []corev1.LocalObjectReference `json:"imagePullSecrets,omitempty"`
}

// ContainerOverride is what an override may set on a container, by name.
type ContainerOverride struct {
	Name         string               `json:"name"`
	Env          []corev1.EnvVar      `json:"env,omitempty"`
	VolumeMounts []corev1.VolumeMount `json:"volumeMounts,omitempty"`
}

// TrainingRuntime is a trainer.kubeflow.org/v1alpha1 TrainingRuntime or
// ClusterTrainingRuntime (the same spec; the cluster one has no
// namespace).
type TrainingRuntime struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              TrainingRuntimeSpec `json:"spec"`
}

// TrainingRuntimeSpec holds the ML policy, the PodGroup policy and the
// JobSet template.
type TrainingRuntimeSpec struct {
	MLPolicy       *MLPolicy          `json:"mlPolicy,omitempty"`
	PodGroupPolicy *PodGroupPolicy    `json:"podGroupPolicy,omitempty"`
	Template       JobSetTemplateSpec `json:"template"`
}

// MLPolicy is the runtime's node count and framework policy.
type MLPolicy struct {
	NumNodes *int32          `json:"numNodes,omitempty"`
	Torch    json.RawMessage `json:"torch,omitempty"`
	MPI      *MPIPolicy      `json:"mpi,omitempty"`
}

// MPIPolicy is the MPI policy; runLauncherAsNode decides the node count.
type MPIPolicy struct {
	NumProcPerNode    *int32  `json:"numProcPerNode,omitempty"`
	MPIImplementation *string `json:"mpiImplementation,omitempty"`
	SSHAuthMountPath  *string `json:"sshAuthMountPath,omitempty"`
	RunLauncherAsNode *bool   `json:"runLauncherAsNode,omitempty"`
}

// PodGroupPolicy says which gang scheduler's PodGroup Trainer creates.
type PodGroupPolicy struct {
	Coscheduling json.RawMessage `json:"coscheduling,omitempty"`
	Volcano      *VolcanoPolicy  `json:"volcano,omitempty"`
}

// VolcanoPolicy is Trainer's Volcano PodGroup policy. Trainer v2.1.0's
// Volcano plugin copies its networkTopology's mode and highestTierAllowed
// (only those, and it needs highestTierAllowed) to the PodGroup's
// spec.networkTopology, which rdmatopo reads raw (trainerNative).
type VolcanoPolicy struct {
	NetworkTopology json.RawMessage `json:"networkTopology,omitempty"`
}

// JobSetTemplateSpec is the runtime's JobSet template.
type JobSetTemplateSpec struct {
	Metadata TemplateMeta `json:"metadata,omitempty"`
	Spec     JobSetSpec   `json:"spec"`
}

// JobSetSpec is a JobSet's spec: its replicated jobs and opaque policies.
type JobSetSpec struct {
	ReplicatedJobs          []ReplicatedJob `json:"replicatedJobs"`
	Network                 *JobSetNetwork  `json:"network,omitempty"`
	SuccessPolicy           json.RawMessage `json:"successPolicy,omitempty"`
	FailurePolicy           json.RawMessage `json:"failurePolicy,omitempty"`
	StartupPolicy           json.RawMessage `json:"startupPolicy,omitempty"`
	Coordinator             json.RawMessage `json:"coordinator,omitempty"`
	ManagedBy               *string         `json:"managedBy,omitempty"`
	TTLSecondsAfterFinished *int32          `json:"ttlSecondsAfterFinished,omitempty"`
	Suspend                 *bool           `json:"suspend,omitempty"`
}

// JobSetNetwork is the JobSet's headless-service setting: pods get
// hostnames under the subdomain unless enableDNSHostnames is false.
type JobSetNetwork struct {
	EnableDNSHostnames       *bool  `json:"enableDNSHostnames,omitempty"`
	Subdomain                string `json:"subdomain,omitempty"`
	PublishNotReadyAddresses *bool  `json:"publishNotReadyAddresses,omitempty"`
}

// ReplicatedJob is one group of identical Jobs of a JobSet.
type ReplicatedJob struct {
	Name      string                  `json:"name"`
	GroupName string                  `json:"groupName,omitempty"`
	Template  batchv1.JobTemplateSpec `json:"template"`
	Replicas  *int32                  `json:"replicas,omitempty"`
	DependsOn json.RawMessage         `json:"dependsOn,omitempty"`
}

// Trainer v2.1.0 and JobSet v0.10.1 names.
const (
	trainerGroup            = "trainer.kubeflow.org"
	trainerAncestorLabel    = "trainer.kubeflow.org/trainjob-ancestor-step"
	trainerAncestorTrainer  = "trainer"
	trainerNodeName         = "node"
	volcanoQueueAnnotation  = "scheduling.volcano.sh/queue-name"
	jobsetNameKey           = "jobset.sigs.k8s.io/jobset-name"
	jobsetUIDKey            = "jobset.sigs.k8s.io/jobset-uid"
	jobsetReplicatedJobKey  = "jobset.sigs.k8s.io/replicatedjob-name"
	jobsetReplicasKey       = "jobset.sigs.k8s.io/replicatedjob-replicas"
	jobsetGlobalReplicasKey = "jobset.sigs.k8s.io/global-replicas"
	jobsetJobIndexKey       = "jobset.sigs.k8s.io/job-index"
	jobsetJobGlobalIndexKey = "jobset.sigs.k8s.io/job-global-index"
	jobsetJobKey            = "jobset.sigs.k8s.io/job-key"
	jobsetRestartsKey       = "jobset.sigs.k8s.io/restart-attempt"
	jobsetGroupNameKey      = "jobset.sigs.k8s.io/group-name"
	jobsetGroupReplicasKey  = "jobset.sigs.k8s.io/group-replicas"
	jobsetJobGroupIndexKey  = "jobset.sigs.k8s.io/job-group-index"
	jobsetDefaultGroup      = "default"
	// The Job API's selector labels without their batch.kubernetes.io/
	// prefix, which it adds beside the prefixed ones.
	legacyControllerUIDLabel = "controller-uid"
	legacyJobNameLabel       = "job-name"
	jobsetKind               = "JobSet"
)
