// The pods JobSet makes of a TrainJob's replicated jobs, named and labelled
// as JobSet names and labels them.

package workload

import (
	"crypto/sha1"
	"encoding/hex"
	"fmt"
	"slices"
	"strconv"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	schedulingv1beta1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"
)

// JobSetPodName is the name simulate gives pod index of Job jobIndex of a
// JobSet's replicated job: the Job's name (<jobset>-<replicatedJob>-<job
// index>, as JobSet names it) and the completion index. The Job
// controller adds five random characters after it (generateName); the
// simulation leaves them out to stay deterministic.
func JobSetPodName(jobSet, replicatedJob string, jobIndex, podIndex int) string {
	return fmt.Sprintf("%s-%s-%d-%d", jobSet, replicatedJob, jobIndex, podIndex)
}

// jobSetPods builds the pods of the JobSet's Jobs, replicated job by
// replicated job, Job by Job, completion index by completion index, with
// JobSet's labels and annotations (the same keys on both), the Job
// controller's, and the PodGroup annotation Trainer's Volcano plugin adds.
func jobSetPods(job *TrainJob, rt *TrainingRuntime, rjobs []ReplicatedJob, sets []podSet, clk *clock) []*corev1.Pod {
	jsUID := string(StableUID(jobsetKind, job.Namespace, job.Name))
	var globalReplicas int32
	groupReplicas := map[string]int32{}
	for i := range rjobs {
		globalReplicas += *rjobs[i].Replicas
		groupReplicas[groupOf(&rjobs[i])] += *rjobs[i].Replicas
	}
	subdomain := job.Name
	net := rt.Spec.Template.Spec.Network
	if net != nil && net.Subdomain != "" {
		subdomain = net.Subdomain
	}
	dns := net == nil || net.EnableDNSHostnames == nil || *net.EnableDNSHostnames

	var pods []*corev1.Pod
	var globalIndex int32
	groupIndex := map[string]int32{}
	for i := range rjobs {
		rj := &rjobs[i]
		group := groupOf(rj)
		indexed := rj.Template.Spec.CompletionMode == nil || *rj.Template.Spec.CompletionMode == batchv1.IndexedCompletion
		for j := int32(0); j < *rj.Replicas; j++ {
			jobName := fmt.Sprintf("%s-%s-%d", job.Name, rj.Name, j)
			set := map[string]string{
				jobsetNameKey:           job.Name,
				jobsetUIDKey:            jsUID,
				jobsetReplicatedJobKey:  rj.Name,
				jobsetRestartsKey:       "0",
				jobsetReplicasKey:       strconv.Itoa(int(*rj.Replicas)),
				jobsetGlobalReplicasKey: strconv.Itoa(int(globalReplicas)),
				jobsetJobIndexKey:       strconv.Itoa(int(j)),
				jobsetJobKey:            sha1Hex(job.Namespace + "/" + jobName),
				jobsetJobGlobalIndexKey: strconv.Itoa(int(globalIndex)),
				jobsetGroupNameKey:      group,
				jobsetGroupReplicasKey:  strconv.Itoa(int(groupReplicas[group])),
				jobsetJobGroupIndexKey:  strconv.Itoa(int(groupIndex[group])),
			}
			globalIndex++
			groupIndex[group]++
			for k := 0; k < int(sets[i].count); k++ {
				name := JobSetPodName(job.Name, rj.Name, int(j), k)
				pods = append(pods, jobSetPod(job, rj, jobName, name, set, k, indexed, dns, subdomain, clk))
			}
		}
	}
	return pods
}

// jobSetPod builds pod name, completion index k of Job jobName, with the
// JobSet's keys jobset.
func jobSetPod(job *TrainJob, rj *ReplicatedJob, jobName, name string, jobset map[string]string, k int, indexed, dns bool, subdomain string, clk *clock) *corev1.Pod {
	jobUID := StableUID("Job", job.Namespace, jobName)
	tpl := rj.Template.Spec.Template.DeepCopy()
	labels := copyMap(tpl.Labels)
	if labels == nil {
		labels = map[string]string{}
	}
	ann := copyMap(tpl.Annotations)
	if ann == nil {
		ann = map[string]string{}
	}
	for key, v := range jobset {
		labels[key] = v
		ann[key] = v
	}
	labels[batchv1.ControllerUidLabel] = string(jobUID)
	labels[legacyControllerUIDLabel] = string(jobUID)
	labels[batchv1.JobNameLabel] = jobName
	labels[legacyJobNameLabel] = jobName
	ann[schedulingv1beta1.KubeGroupNameAnnotationKey] = job.Name
	if indexed {
		labels[batchv1.JobCompletionIndexAnnotation] = strconv.Itoa(k)
		ann[batchv1.JobCompletionIndexAnnotation] = strconv.Itoa(k)
		if dns {
			tpl.Spec.Hostname = name
			tpl.Spec.Subdomain = subdomain
		}
	}
	if tpl.Spec.RestartPolicy == "" {
		tpl.Spec.RestartPolicy = corev1.RestartPolicyOnFailure
	}
	defaultRequests(&tpl.Spec)
	isController := true
	jobOwner := metav1.OwnerReference{APIVersion: "batch/v1", Kind: "Job", Name: jobName, UID: jobUID, Controller: &isController, BlockOwnerDeletion: &isController}
	pod := controllerPod(job.Namespace, name, labels, ann, jobOwner, tpl.Spec)
	pod.CreationTimestamp = metav1.NewTime(clk.tick())
	return pod
}

// groupOf is a replicated job's JobSet group ("default" when unset).
func groupOf(rj *ReplicatedJob) string {
	if rj.GroupName == "" {
		return jobsetDefaultGroup
	}
	return rj.GroupName
}

// sha1Hex is JobSet's job key: the hex SHA-1 of "namespace/job".
func sha1Hex(s string) string {
	h := sha1.Sum([]byte(s))
	return hex.EncodeToString(h[:])
}

// upsertEnv sets each of add in env, replacing a variable of the same name
// in place (Trainer's apply.UpsertEnvVars).
func upsertEnv(env, add []corev1.EnvVar) []corev1.EnvVar {
	for _, e := range add {
		if i := slices.IndexFunc(env, func(x corev1.EnvVar) bool { return x.Name == e.Name }); i >= 0 {
			env[i] = e
		} else {
			env = append(env, e)
		}
	}
	return env
}
