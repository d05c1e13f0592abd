package workload

import (
	"encoding/json"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	resourcehelper "k8s.io/kubernetes/pkg/api/v1/resource"
	schedulingv1beta1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"

	"github.com/rdmatopo/rdmatopo/core/placement"
)

// trainJobGVK is the TrainJob's group, version and kind.
var trainJobGVK = schema.GroupVersionKind{Group: trainerGroup, Version: "v1alpha1", Kind: KindTrainJob}

// runtimeKey names a training runtime: its kind, namespace ("" for a
// ClusterTrainingRuntime) and name.
type runtimeKey struct {
	kind, namespace, name string
}

// runtimeEntry is a training runtime of the workload and where it came
// from, to name it in errors.
type runtimeEntry struct {
	rt  *TrainingRuntime
	src origin
}

// podSet is one replicated job as Trainer counts it: how many pods each of
// its Jobs runs and what one pod requests (for the PodGroup's
// minResources).
type podSet struct {
	count    int32
	requests corev1.ResourceList
}

// expandTrainJob builds the PodGroup and Pods of a TrainJob as Trainer
// v2.1.0 (runtime, ML policy and Volcano plugins), JobSet v0.10.1 and the
// Job controller create them: the runtime's replicated jobs patched by the
// TrainJob's pod template overrides, the trainer job's pod count from
// numNodes, the TrainJob's trainer settings on its "node" container, and
// one PodGroup named like the TrainJob that carries no annotations of the
// job (the contract is then read from the pods).
func expandTrainJob(r *rawObject, job *TrainJob, runtimes map[runtimeKey]runtimeEntry, clk *clock, room int64) (*schedulingv1beta1.PodGroup, []*corev1.Pod, *placement.NativeTopology, *InputError) {
	if ierr := identifyJob(r, KindTrainJob, &job.ObjectMeta); ierr != nil {
		return nil, nil, nil, ierr
	}
	entry, ierr := trainJobRuntime(r, job, runtimes)
	if ierr != nil {
		return nil, nil, nil, ierr
	}
	native, ierr := trainerNative(entry)
	if ierr != nil {
		return nil, nil, nil, ierr
	}
	pg, pods, ierr := expandTrainJobPods(r, job, entry, clk, room)
	return pg, pods, native, ierr
}

// trainerNative is the spec.networkTopology Trainer v2.1.0's Volcano
// plugin writes on the PodGroup from the runtime's
// podGroupPolicy.volcano.networkTopology: its mode and highestTierAllowed.
// A highestTierName there is not copied (and Trainer needs
// highestTierAllowed): an input error, never dropped silently.
func trainerNative(entry runtimeEntry) (*placement.NativeTopology, *InputError) {
	pol := entry.rt.Spec.PodGroupPolicy
	if pol == nil || pol.Volcano == nil || len(pol.Volcano.NetworkTopology) == 0 || string(pol.Volcano.NetworkTopology) == "null" {
		return nil, nil
	}
	const field = "spec.podGroupPolicy.volcano.networkTopology"
	src := &rawObject{origin: entry.src, kind: entry.rt.Kind, namespace: entry.rt.Namespace, name: entry.rt.Name}
	src.data = []byte(`{"spec":{"podGroupPolicy":{"volcano":{"networkTopology":` + string(pol.Volcano.NetworkTopology) + `}}}}`)
	var typed struct {
		Spec struct {
			PodGroupPolicy struct {
				Volcano struct {
					NetworkTopology placement.NetworkTopology `json:"networkTopology"`
				} `json:"volcano"`
			} `json:"podGroupPolicy"`
		} `json:"spec"`
	}
	if ierr := decodeStrict(src, &typed); ierr != nil {
		return nil, ierr
	}
	nt := typed.Spec.PodGroupPolicy.Volcano.NetworkTopology
	if nt.HighestTierName != "" {
		return nil, src.errorf(field+".highestTierName", "Trainer v2.1.0 does not copy highestTierName to the PodGroup; use highestTierAllowed")
	}
	if nt.HighestTierAllowed == nil {
		return nil, src.errorf(field+".highestTierAllowed", "required: Trainer v2.1.0 copies the network topology only with highestTierAllowed")
	}
	return &placement.NativeTopology{NetworkTopology: &placement.NetworkTopology{Mode: nt.Mode, HighestTierAllowed: nt.HighestTierAllowed}}, nil
}

// expandTrainJobPods builds the PodGroup and Pods of a TrainJob whose
// runtime is entry (see expandTrainJob).
func expandTrainJobPods(r *rawObject, job *TrainJob, entry runtimeEntry, clk *clock, room int64) (*schedulingv1beta1.PodGroup, []*corev1.Pod, *InputError) {
	if job.Spec.Suspend != nil && *job.Spec.Suspend {
		return nil, nil, r.errorf("spec.suspend", "a suspended TrainJob runs no pods; leave it out of the workload or set false")
	}
	if tr := job.Spec.Trainer; tr != nil && tr.NumNodes != nil && *tr.NumNodes < 1 {
		return nil, nil, r.errorf("spec.trainer.numNodes", "must be >= 1, got %d", *tr.NumNodes)
	}
	rt := entry.rt
	rtName := fmt.Sprintf("%s %q", rt.Kind, rt.Name)
	if rt.Spec.PodGroupPolicy == nil || rt.Spec.PodGroupPolicy.Volcano == nil {
		return nil, nil, r.errorf("spec.runtimeRef.name", "%s has no spec.podGroupPolicy.volcano: Trainer creates no Volcano PodGroup for its pods", rtName)
	}
	rjobs := make([]ReplicatedJob, len(rt.Spec.Template.Spec.ReplicatedJobs))
	for i := range rjobs {
		rjobs[i] = rt.Spec.Template.Spec.ReplicatedJobs[i]
		rjobs[i].Template = *rjobs[i].Template.DeepCopy()
	}
	if ierr := applyPodTemplateOverrides(r, job, rjobs); ierr != nil {
		return nil, nil, ierr
	}
	sets := trainerPodSets(job, rt, rjobs)
	applyTrainerSettings(job, rt, rjobs)

	gang, ierr := trainerGang(r, entry, rjobs, sets, room)
	if ierr != nil {
		return nil, nil, ierr
	}
	queue, ierr := trainerQueue(r, job, rt)
	if ierr != nil {
		return nil, nil, ierr
	}

	owner := metav1.NewControllerRef(job, trainJobGVK)
	pg := controllerPodGroup(job, job.Name, nil, nil, *owner, schedulingv1beta1.PodGroupSpec{
		MinMember:         gang.minMember,
		Queue:             queue,
		PriorityClassName: gang.priorityClass,
		MinResources:      &gang.minResources,
	}, clk)
	return pg, jobSetPods(job, rt, rjobs, sets, clk), nil
}

// trainerGangSpec is what Trainer's Volcano plugin writes into the
// PodGroup from the replicated jobs.
type trainerGangSpec struct {
	minMember     int32
	minResources  corev1.ResourceList
	priorityClass string
}

// trainerGang sums the replicated jobs' pods as Trainer's Volcano plugin
// does, refusing more pods than room and pods that do not name the
// default scheduler.
func trainerGang(r *rawObject, entry runtimeEntry, rjobs []ReplicatedJob, sets []podSet, room int64) (trainerGangSpec, *InputError) {
	rt := entry.rt
	g := trainerGangSpec{minResources: corev1.ResourceList{}}
	var total int64 // pods
	for i := range rjobs {
		rj := &rjobs[i]
		total += int64(sets[i].count) * int64(*rj.Replicas)
		if total > room {
			return g, r.errorf("spec.trainer.numNodes", "%d pods would bring the workload past %d pods, the most a workload file holds", total, maxWorkloadPods)
		}
		// Trainer sums the counts and count × one pod's requests per pod
		// set (not per replica of the set), from the runtime's template
		// after the overrides: resourcesPerNode is not in it.
		g.minMember += sets[i].count
		addList(g.minResources, scaled(sets[i].requests, sets[i].count))
		if p := rj.Template.Spec.Template.Spec.PriorityClassName; p != "" {
			g.priorityClass = p // the last replicated job naming one wins
		}
		field := fmt.Sprintf("spec.template.spec.replicatedJobs[%d].template.spec.template.spec.schedulerName", i)
		if s := rj.Template.Spec.Template.Spec.SchedulerName; s != DefaultSchedulerName {
			return g, entry.src.errorf(rt.Kind, rt.Namespace, rt.Name, field,
				"%q: Trainer's Volcano plugin does not set the scheduler; the runtime's pods must name %q to be gang scheduled", s, DefaultSchedulerName)
		}
	}
	return g, nil
}

// trainerQueue is the PodGroup's queue: the Volcano queue annotation of
// the TrainJob's spec.annotations over the runtime's, else the default.
func trainerQueue(r *rawObject, job *TrainJob, rt *TrainingRuntime) (string, *InputError) {
	annotations := copyMap(rt.Spec.Template.Metadata.Annotations)
	if annotations == nil {
		annotations = map[string]string{}
	}
	for k, v := range job.Spec.Annotations {
		annotations[k] = v
	}
	q, ok := annotations[volcanoQueueAnnotation]
	if !ok {
		return DefaultQueue, nil
	}
	if q == "" {
		return "", r.errorf(fmt.Sprintf("spec.annotations[%q]", volcanoQueueAnnotation), "must not be empty")
	}
	return q, nil
}

// trainJobRuntime resolves spec.runtimeRef: a ClusterTrainingRuntime
// unless kind says TrainingRuntime (then one of the TrainJob's namespace),
// of API group trainer.kubeflow.org.
func trainJobRuntime(r *rawObject, job *TrainJob, runtimes map[runtimeKey]runtimeEntry) (runtimeEntry, *InputError) {
	ref := job.Spec.RuntimeRef
	if ref.Name == "" {
		return runtimeEntry{}, r.errorf("spec.runtimeRef.name", "required")
	}
	if ref.APIGroup != nil && *ref.APIGroup != trainerGroup {
		return runtimeEntry{}, r.errorf("spec.runtimeRef.apiGroup", "%q: runtimes are of API group %s", *ref.APIGroup, trainerGroup)
	}
	key := runtimeKey{kind: KindClusterTrainingRuntime, name: ref.Name}
	if ref.Kind != nil {
		switch *ref.Kind {
		case KindClusterTrainingRuntime:
		case KindTrainingRuntime:
			key = runtimeKey{kind: KindTrainingRuntime, namespace: job.Namespace, name: ref.Name}
		default:
			return runtimeEntry{}, r.errorf("spec.runtimeRef.kind", "%q: want %s or %s", *ref.Kind, KindClusterTrainingRuntime, KindTrainingRuntime)
		}
	}
	e, ok := runtimes[key]
	if !ok {
		where := ""
		if key.namespace != "" {
			where = " in namespace " + key.namespace
		}
		return runtimeEntry{}, r.errorf("spec.runtimeRef.name", "no %s named %q%s in the workload", key.kind, ref.Name, where)
	}
	return e, nil
}

// applyPodTemplateOverrides merges the TrainJob's pod template overrides
// into the replicated jobs they target, in order, as a strategic merge
// patch of the pod template (Trainer's way).
func applyPodTemplateOverrides(r *rawObject, job *TrainJob, rjobs []ReplicatedJob) *InputError {
	for i, o := range job.Spec.PodTemplateOverrides {
		patch := map[string]any{}
		if o.Metadata != nil {
			meta := map[string]any{}
			if o.Metadata.Labels != nil {
				meta["labels"] = o.Metadata.Labels
			}
			if o.Metadata.Annotations != nil {
				meta["annotations"] = o.Metadata.Annotations
			}
			if len(meta) > 0 {
				patch["metadata"] = meta
			}
		}
		if o.Spec != nil {
			patch["spec"] = o.Spec
		}
		patchJSON, err := json.Marshal(patch)
		if err != nil {
			return r.errorf(fmt.Sprintf("spec.podTemplateOverrides[%d]", i), "%v", err)
		}
		for j, t := range o.TargetJobs {
			k := replicatedJobIndex(rjobs, t.Name)
			field := fmt.Sprintf("spec.podTemplateOverrides[%d].targetJobs[%d].name", i, j)
			if k < 0 {
				return r.errorf(field, "the runtime has no replicated job %q", t.Name)
			}
			src, err := json.Marshal(rjobs[k].Template.Spec.Template)
			if err != nil {
				return r.errorf(field, "%v", err)
			}
			merged, err := strategicpatch.StrategicMergePatch(src, patchJSON, corev1.PodTemplateSpec{})
			if err != nil {
				return r.errorf(fmt.Sprintf("spec.podTemplateOverrides[%d]", i), "cannot be merged into replicated job %q: %v", t.Name, err)
			}
			tpl := corev1.PodTemplateSpec{}
			if err := json.Unmarshal(merged, &tpl); err != nil {
				return r.errorf(fmt.Sprintf("spec.podTemplateOverrides[%d]", i), "cannot be merged into replicated job %q: %v", t.Name, err)
			}
			rjobs[k].Template.Spec.Template = tpl
		}
	}
	return nil
}

// replicatedJobIndex is the index of the replicated job named name, or -1.
func replicatedJobIndex(rjobs []ReplicatedJob, name string) int {
	for i := range rjobs {
		if rjobs[i].Name == name {
			return i
		}
	}
	return -1
}

// isTrainerJob reports whether a replicated job is the trainer step.
func isTrainerJob(rj *ReplicatedJob) bool {
	return rj.Template.Labels[trainerAncestorLabel] == trainerAncestorTrainer
}

// trainerPodSets counts the pods of each replicated job's Jobs as Trainer
// does: parallelism (1 when unset), the runtime's mlPolicy.numNodes for
// the trainer step, then the TrainJob's spec.trainer.numNodes for the
// trainer step (torch and plain runtimes) or for the "node" job (mpi, one
// fewer when the launcher runs as a node). Requests are one pod's, from
// the template.
func trainerPodSets(job *TrainJob, rt *TrainingRuntime, rjobs []ReplicatedJob) []podSet {
	ml := rt.Spec.MLPolicy
	sets := make([]podSet, len(rjobs))
	for i := range rjobs {
		rj := &rjobs[i]
		count := int32(1)
		if p := rj.Template.Spec.Parallelism; p != nil {
			count = *p
		}
		if isTrainerJob(rj) && ml != nil {
			count = 1
			if ml.NumNodes != nil {
				count = *ml.NumNodes
			}
		}
		pod := &corev1.Pod{Spec: rj.Template.Spec.Template.Spec}
		sets[i] = podSet{count: max(count, 1), requests: resourcehelper.PodRequests(pod, resourcehelper.PodResourcesOptions{})}
	}
	if job.Spec.Trainer == nil || job.Spec.Trainer.NumNodes == nil {
		return sets
	}
	n := *job.Spec.Trainer.NumNodes
	for i := range rjobs {
		switch {
		case ml != nil && ml.MPI != nil:
			if rjobs[i].Name == trainerNodeName {
				if ml.MPI.RunLauncherAsNode != nil && *ml.MPI.RunLauncherAsNode {
					sets[i].count = max(n-1, 1)
				} else {
					sets[i].count = n
				}
			}
		case isTrainerJob(&rjobs[i]):
			sets[i].count = n
		}
	}
	return sets
}

// applyTrainerSettings applies what Trainer's JobSet builder takes from
// the TrainJob: one replica of each trainer and initializer step; the
// trainer step's "node" container gets spec.trainer's image, command and
// args; resourcesPerNode and env go to the "node" container of the trainer
// step and, with an mpi runtime whose launcher runs as a node, of the
// "node" job.
func applyTrainerSettings(job *TrainJob, rt *TrainingRuntime, rjobs []ReplicatedJob) {
	launcherAsNode := rt.Spec.MLPolicy != nil && rt.Spec.MLPolicy.MPI != nil &&
		rt.Spec.MLPolicy.MPI.RunLauncherAsNode != nil && *rt.Spec.MLPolicy.MPI.RunLauncherAsNode
	one := int32(1)
	tr := job.Spec.Trainer
	for i := range rjobs {
		rj := &rjobs[i]
		if _, ok := rj.Template.Labels[trainerAncestorLabel]; ok {
			rj.Replicas = &one
		}
		if rj.Replicas == nil {
			rj.Replicas = &one
		}
		if tr == nil {
			continue
		}
		trainer := isTrainerJob(rj)
		for c := range rj.Template.Spec.Template.Spec.Containers {
			ctr := &rj.Template.Spec.Template.Spec.Containers[c]
			if ctr.Name != trainerNodeName {
				continue
			}
			if trainer {
				if tr.Image != nil {
					ctr.Image = *tr.Image
				}
				if tr.Command != nil {
					ctr.Command = tr.Command
				}
				if tr.Args != nil {
					ctr.Args = tr.Args
				}
			}
			if trainer || launcherAsNode && rj.Name == trainerNodeName {
				if rpn := tr.ResourcesPerNode; rpn != nil && (rpn.Limits != nil || rpn.Requests != nil) {
					ctr.Resources = *rpn.DeepCopy()
				}
				ctr.Env = upsertEnv(ctr.Env, tr.Env)
			}
		}
	}
}

// addRuntime decodes and checks a TrainingRuntime or ClusterTrainingRuntime
// and records it for the TrainJobs of the file.
func (b *setBuilder) addRuntime(r *rawObject) *InputError {
	rt := &TrainingRuntime{}
	if ierr := decodeStrict(r, rt); ierr != nil {
		return ierr
	}
	if rt.Name == "" {
		return r.errorf("metadata.name", "required")
	}
	key := runtimeKey{kind: r.kind, name: rt.Name}
	switch r.kind {
	case KindClusterTrainingRuntime:
		if rt.Namespace != "" {
			return r.errorf("metadata.namespace", "a ClusterTrainingRuntime is cluster-scoped, got %q", rt.Namespace)
		}
	default:
		if rt.Namespace == "" {
			rt.Namespace = DefaultNamespace
		}
		key.namespace = rt.Namespace
	}
	r.name, r.namespace = rt.Name, rt.Namespace
	if ierr := b.reg.add(r.origin, r.kind, rt.Namespace, rt.Name); ierr != nil {
		return ierr
	}
	if ierr := checkRuntime(r, rt); ierr != nil {
		return ierr
	}
	b.runtimes[key] = runtimeEntry{rt: rt, src: r.origin}
	return nil
}

// checkRuntime refuses a runtime whose JobSet template cannot be expanded:
// no replicated jobs, a job without a unique name or containers, negative
// counts, or dependsOn (its Jobs start only once others are ready or done,
// which the simulation does not model).
func checkRuntime(r *rawObject, rt *TrainingRuntime) *InputError {
	rjobs := rt.Spec.Template.Spec.ReplicatedJobs
	if len(rjobs) == 0 {
		return r.errorf("spec.template.spec.replicatedJobs", "required: at least one replicated job")
	}
	seen := map[string]bool{}
	for i := range rjobs {
		rj := &rjobs[i]
		field := fmt.Sprintf("spec.template.spec.replicatedJobs[%d]", i)
		switch {
		case rj.Name == "":
			return r.errorf(field+".name", "required")
		case seen[rj.Name]:
			return r.errorf(field+".name", "replicated job %q is given twice", rj.Name)
		case len(rj.DependsOn) > 0:
			return r.errorf(field+".dependsOn", "not simulated: its Jobs start only after the Jobs they depend on")
		case rj.Replicas != nil && *rj.Replicas < 0:
			return r.errorf(field+".replicas", "must be >= 0, got %d", *rj.Replicas)
		case rj.Template.Spec.Parallelism != nil && *rj.Template.Spec.Parallelism < 0:
			return r.errorf(field+".template.spec.parallelism", "must be >= 0, got %d", *rj.Template.Spec.Parallelism)
		case len(rj.Template.Spec.Template.Spec.Containers) == 0:
			return r.errorf(field+".template.spec.template.spec.containers", "required: a pod needs at least one container")
		}
		seen[rj.Name] = true
	}
	if ml := rt.Spec.MLPolicy; ml != nil && ml.NumNodes != nil && *ml.NumNodes < 1 {
		return r.errorf("spec.mlPolicy.numNodes", "must be >= 1, got %d", *ml.NumNodes)
	}
	return nil
}
