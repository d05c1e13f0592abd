package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	batchv1alpha1 "volcano.sh/apis/pkg/apis/batch/v1alpha1"
	schedulingv1beta1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"

	"github.com/rdmatopo/rdmatopo/plugins/rdmatopology"
)

// The job contract (see docs/design.md): users set mode and highest tier on the
// job; the scheduler writes the rest.
const (
	annMode        = "rdmatopo.io/mode"
	annHighestTier = "rdmatopo.io/highest-tier"
	annNICs        = "rdmatopo.io/nics"
	annNUMA        = "rdmatopo.io/numa"
	annS0          = "rdmatopo.io/s0"
	annPlacement   = "rdmatopo.io/placement"

	// groupNameAnnotation names a pod's PodGroup.
	groupNameAnnotation = "scheduling.k8s.io/group-name"

	// schedulerName is the scheduler the jobs ask for.
	schedulerName = "volcano"
	// image is never pulled: there is no kubelet.
	image = "registry.invalid/rdmatopo/train:latest"
)

// placedCondition is the PodGroup condition rdma-topology maintains: True
// once a gang is placed, False with the reason while it waits.
const placedCondition = string(rdmatopology.ConditionType)

// Label keys the controllers put on the pods they create.
const (
	volcanoJobLabel = "volcano.sh/job-name"
	pytorchJobLabel = "training.kubeflow.org/job-name"
)

var pytorchJobGVR = schema.GroupVersionResource{Group: "kubeflow.org", Version: "v1", Resource: "pytorchjobs"}

// placementAnnotation is the PodGroup's rdmatopo.io/placement value.
type placementAnnotation struct {
	Tier string   `json:"tier"`
	S0   []string `json:"s0"`
	S1   []string `json:"s1"`
}

// podShape is what each pod of a test job requests.
type podShape struct {
	// GPUs and NICs per pod.
	GPUs, NICs int64
}

// trainer is the pod shape the tests use: half a node's GPUs and the NICs
// of one NUMA zone.
var trainer = podShape{GPUs: 4, NICs: 2}

// resources returns the container resources of the shape (extended
// resources need limit == request).
func (s podShape) resources() corev1.ResourceRequirements {
	req := corev1.ResourceList{
		corev1.ResourceCPU:    resource.MustParse("4"),
		corev1.ResourceMemory: resource.MustParse("8Gi"),
		gpuResource:           *resource.NewQuantity(s.GPUs, resource.DecimalSI),
		rdmaResource:          *resource.NewQuantity(s.NICs, resource.DecimalSI),
	}
	lim := corev1.ResourceList{
		gpuResource:  *resource.NewQuantity(s.GPUs, resource.DecimalSI),
		rdmaResource: *resource.NewQuantity(s.NICs, resource.DecimalSI),
	}
	return corev1.ResourceRequirements{Requests: req, Limits: lim}
}

// contract is a job's rdmatopo annotations.
type contract struct {
	Mode, HighestTier string
}

func (c contract) annotations() map[string]string {
	out := map[string]string{}
	if c.Mode != "" {
		out[annMode] = c.Mode
	}
	if c.HighestTier != "" {
		out[annHighestTier] = c.HighestTier
	}
	return out
}

// hardS0 is the contract of the tests: the whole gang under one S0 or
// nothing.
var hardS0 = contract{Mode: "hard", HighestTier: "s0"}

// newNamespace creates a namespace for the test. When the test ends, its
// jobs, pods and PodGroups are deleted (pods without grace: no kubelet will
// confirm them), so the next test's scheduler sees none of them.
func newNamespace(t *testing.T, e *Env) string {
	t.Helper()
	name := "it-" + strings.ToLower(strings.TrimPrefix(t.Name(), "Test"))
	ctx := context.Background()
	if _, err := e.Kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create Namespace %s: %v", name, err)
	}
	t.Cleanup(func() { cleanNamespace(t, e, name) })
	return name
}

func cleanNamespace(t *testing.T, e *Env, ns string) {
	ctx := context.Background()
	all := metav1.ListOptions{}
	if err := e.Volcano.BatchV1alpha1().Jobs(ns).DeleteCollection(ctx, metav1.DeleteOptions{}, all); err != nil {
		t.Errorf("delete VolcanoJobs in %s: %v", ns, err)
	}
	if err := e.Dynamic.Resource(pytorchJobGVR).Namespace(ns).DeleteCollection(ctx, metav1.DeleteOptions{}, all); err != nil {
		t.Errorf("delete PyTorchJobs in %s: %v", ns, err)
	}
	deletePods(t, e, ns, all)
	if err := e.Volcano.SchedulingV1beta1().PodGroups(ns).DeleteCollection(ctx, metav1.DeleteOptions{}, all); err != nil {
		t.Errorf("delete PodGroups in %s: %v", ns, err)
	}
}

// deletePods deletes pods at once (grace period 0).
func deletePods(t *testing.T, e *Env, ns string, sel metav1.ListOptions) {
	t.Helper()
	now := int64(0)
	if err := e.Kube.CoreV1().Pods(ns).DeleteCollection(context.Background(), metav1.DeleteOptions{GracePeriodSeconds: &now}, sel); err != nil {
		t.Errorf("delete pods in %s: %v", ns, err)
	}
}

// volcanoJob builds a VolcanoJob with a master and workers of one shape.
type volcanoJob struct {
	Name     string
	Workers  int32
	Shape    podShape
	Contract contract
}

// Create submits the job.
func (j volcanoJob) Create(t *testing.T, e *Env, ns string) {
	t.Helper()
	task := func(name string, replicas int32) batchv1alpha1.TaskSpec {
		return batchv1alpha1.TaskSpec{
			Name:     name,
			Replicas: replicas,
			Template: corev1.PodTemplateSpec{
				Spec: corev1.PodSpec{
					SchedulerName: schedulerName,
					RestartPolicy: corev1.RestartPolicyNever,
					Containers:    []corev1.Container{{Name: "train", Image: image, Resources: j.Shape.resources()}},
				},
			},
		}
	}
	job := &batchv1alpha1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: j.Name, Namespace: ns, Annotations: j.Contract.annotations()},
		Spec: batchv1alpha1.JobSpec{
			SchedulerName: schedulerName,
			Queue:         "default",
			MinAvailable:  1 + j.Workers,
			Tasks:         []batchv1alpha1.TaskSpec{task("master", 1)},
		},
	}
	if j.Workers > 0 {
		job.Spec.Tasks = append(job.Spec.Tasks, task("worker", j.Workers))
	}
	if _, err := e.Volcano.BatchV1alpha1().Jobs(ns).Create(context.Background(), job, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create VolcanoJob %s/%s: %v", ns, j.Name, err)
	}
}

// Selector selects the job's pods.
func (j volcanoJob) Selector() metav1.ListOptions {
	return metav1.ListOptions{LabelSelector: volcanoJobLabel + "=" + j.Name}
}

// Size is the number of pods.
func (j volcanoJob) Size() int { return int(1 + j.Workers) }

// pytorchJob builds a PyTorchJob with a master and workers of one shape.
type pytorchJob struct {
	Name     string
	Workers  int64
	Shape    podShape
	Contract contract
}

// Create submits the job (as unstructured: rdmatopo does not depend on the
// training operator's Go types).
func (j pytorchJob) Create(t *testing.T, e *Env, ns string) {
	t.Helper()
	res := j.Shape.resources()
	resMap, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&res)
	if err != nil {
		t.Fatal(err)
	}
	replica := func(n int64) map[string]interface{} {
		return map[string]interface{}{
			"replicas":      n,
			"restartPolicy": "Never",
			"template": map[string]interface{}{
				"spec": map[string]interface{}{
					"containers": []interface{}{map[string]interface{}{
						"name":      "pytorch",
						"image":     image,
						"resources": resMap,
						"ports": []interface{}{map[string]interface{}{
							"name": "pytorchjob-port", "containerPort": int64(23456),
						}},
					}},
				},
			},
		}
	}
	annotations := map[string]interface{}{}
	for k, v := range j.Contract.annotations() {
		annotations[k] = v
	}
	obj := &unstructured.Unstructured{Object: map[string]interface{}{
		"apiVersion": "kubeflow.org/v1",
		"kind":       "PyTorchJob",
		"metadata":   map[string]interface{}{"name": j.Name, "namespace": ns, "annotations": annotations},
		"spec": map[string]interface{}{
			"runPolicy": map[string]interface{}{
				"schedulingPolicy": map[string]interface{}{"queue": "default", "minAvailable": 1 + j.Workers},
			},
			"pytorchReplicaSpecs": map[string]interface{}{
				"Master": replica(1),
				"Worker": replica(j.Workers),
			},
		},
	}}
	if _, err := e.Dynamic.Resource(pytorchJobGVR).Namespace(ns).Create(context.Background(), obj, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create PyTorchJob %s/%s: %v", ns, j.Name, err)
	}
}

// Selector selects the job's pods.
func (j pytorchJob) Selector() metav1.ListOptions {
	return metav1.ListOptions{LabelSelector: pytorchJobLabel + "=" + j.Name}
}

// Size is the number of pods.
func (j pytorchJob) Size() int { return int(1 + j.Workers) }

// rdmaPod builds a bare pod (Volcano's PodGroup controller gives it a
// PodGroup of one).
func rdmaPod(ns, name string, shape podShape, annotations map[string]string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Annotations: annotations},
		Spec: corev1.PodSpec{
			SchedulerName: schedulerName,
			RestartPolicy: corev1.RestartPolicyNever,
			Containers:    []corev1.Container{{Name: "train", Image: image, Resources: shape.resources()}},
		},
	}
}

// listPods lists pods, sorted by name.
func listPods(t *testing.T, e *Env, ns string, sel metav1.ListOptions) []corev1.Pod {
	t.Helper()
	l, err := e.Kube.CoreV1().Pods(ns).List(context.Background(), sel)
	if err != nil {
		t.Fatalf("list pods in %s (%s): %v", ns, sel.LabelSelector, err)
	}
	sort.Slice(l.Items, func(i, j int) bool { return l.Items[i].Name < l.Items[j].Name })
	return l.Items
}

// waitBound waits until n pods match sel and all are bound, and returns
// them.
func waitBound(t *testing.T, e *Env, ns string, sel metav1.ListOptions, n int, timeout time.Duration) []corev1.Pod {
	t.Helper()
	var pods []corev1.Pod
	eventually(t, timeout, func() (bool, string) {
		pods = listPods(t, e, ns, sel)
		bound := 0
		for _, p := range pods {
			if p.Spec.NodeName != "" {
				bound++
			}
		}
		return len(pods) == n && bound == n, fmt.Sprintf("%d/%d pods exist, %d bound (%s)", len(pods), n, bound, sel.LabelSelector)
	})
	return pods
}

// podGroupOf returns the PodGroup of a pod.
func podGroupOf(t *testing.T, e *Env, pod corev1.Pod) *schedulingv1beta1.PodGroup {
	t.Helper()
	name := pod.Annotations[groupNameAnnotation]
	if name == "" {
		t.Fatalf("pod %s/%s has no %s annotation", pod.Namespace, pod.Name, groupNameAnnotation)
	}
	pg, err := e.Volcano.SchedulingV1beta1().PodGroups(pod.Namespace).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("get PodGroup %s/%s: %v", pod.Namespace, name, err)
	}
	return pg
}

// podGroupOwnedBy returns the PodGroup whose controller owner has the given
// name, or nil.
func podGroupOwnedBy(t *testing.T, e *Env, ns, owner string) *schedulingv1beta1.PodGroup {
	t.Helper()
	l, err := e.Volcano.SchedulingV1beta1().PodGroups(ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatalf("list PodGroups in %s: %v", ns, err)
	}
	for i := range l.Items {
		for _, ref := range l.Items[i].OwnerReferences {
			if ref.Name == owner {
				return &l.Items[i]
			}
		}
	}
	return nil
}

// condition returns the PodGroup's condition of the given type, or nil.
func condition(pg *schedulingv1beta1.PodGroup, typ string) *schedulingv1beta1.PodGroupCondition {
	for i := range pg.Status.Conditions {
		if string(pg.Status.Conditions[i].Type) == typ {
			return &pg.Status.Conditions[i]
		}
	}
	return nil
}

// describePodGroup formats what a PodGroup says about scheduling, for
// failure messages.
func describePodGroup(pg *schedulingv1beta1.PodGroup) string {
	if pg == nil {
		return "no PodGroup"
	}
	var conds []string
	for _, c := range pg.Status.Conditions {
		conds = append(conds, fmt.Sprintf("%s=%s(%s: %s)", c.Type, c.Status, c.Reason, c.Message))
	}
	return fmt.Sprintf("PodGroup %s/%s phase %s, placement %q, conditions [%s]",
		pg.Namespace, pg.Name, pg.Status.Phase, pg.Annotations[annPlacement], strings.Join(conds, "; "))
}

// deleteVolcanoJob deletes a VolcanoJob and then its pods and PodGroup
// (there is no garbage collector in this control plane).
func deleteVolcanoJob(t *testing.T, e *Env, ns string, j volcanoJob) {
	t.Helper()
	ctx := context.Background()
	pg := podGroupOwnedBy(t, e, ns, j.Name)
	if err := e.Volcano.BatchV1alpha1().Jobs(ns).Delete(ctx, j.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatalf("delete VolcanoJob %s/%s: %v", ns, j.Name, err)
	}
	eventually(t, 30*time.Second, func() (bool, string) {
		_, err := e.Volcano.BatchV1alpha1().Jobs(ns).Get(ctx, j.Name, metav1.GetOptions{})
		return apierrors.IsNotFound(err), fmt.Sprintf("VolcanoJob %s/%s still exists (%v)", ns, j.Name, err)
	})
	deletePods(t, e, ns, j.Selector())
	eventually(t, 30*time.Second, func() (bool, string) {
		n := len(listPods(t, e, ns, j.Selector()))
		return n == 0, fmt.Sprintf("%d pods of %s/%s left", n, ns, j.Name)
	})
	if pg != nil {
		if err := e.Volcano.SchedulingV1beta1().PodGroups(ns).Delete(ctx, pg.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			t.Fatalf("delete PodGroup %s/%s: %v", ns, pg.Name, err)
		}
	}
}

// decodePlacement parses a PodGroup's placement annotation.
func decodePlacement(pg *schedulingv1beta1.PodGroup) (placementAnnotation, error) {
	var p placementAnnotation
	raw, ok := pg.Annotations[annPlacement]
	if !ok {
		return p, fmt.Errorf("PodGroup %s/%s has no %s annotation", pg.Namespace, pg.Name, annPlacement)
	}
	if err := json.Unmarshal([]byte(raw), &p); err != nil {
		return p, fmt.Errorf("PodGroup %s/%s annotation %s=%q: %w", pg.Namespace, pg.Name, annPlacement, raw, err)
	}
	return p, nil
}

// splitList splits a comma-separated annotation value.
func splitList(s string) []string {
	if s == "" {
		return nil
	}
	parts := strings.Split(s, ",")
	for i := range parts {
		parts[i] = strings.TrimSpace(parts[i])
	}
	return parts
}
