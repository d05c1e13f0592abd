package builders

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// GroupNameAnnotation names a pod's PodGroup (Volcano's key).
const GroupNameAnnotation = "scheduling.k8s.io/group-name"

// PodWrapper builds a corev1.Pod with one container.
type PodWrapper struct {
	pod corev1.Pod
	meta[*PodWrapper]
}

// MakePod starts a pending Pod with one container "main" and no requests.
// Its UID defaults to "uid-<namespace>-<name>".
func MakePod(namespace, name string) *PodWrapper {
	w := &PodWrapper{pod: corev1.Pod{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{
			Namespace: namespace,
			Name:      name,
			UID:       types.UID("uid-" + namespace + "-" + name),
		},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{
			Name:      "main",
			Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{}, Limits: corev1.ResourceList{}},
		}}},
		Status: corev1.PodStatus{Phase: corev1.PodPending},
	}}
	w.meta = meta[*PodWrapper]{obj: &w.pod.ObjectMeta, self: w}
	return w
}

// Node binds the pod (spec.nodeName) and marks it Running.
func (w *PodWrapper) Node(name string) *PodWrapper {
	w.pod.Spec.NodeName = name
	w.pod.Status.Phase = corev1.PodRunning
	return w
}

// Tolerate adds a toleration of every taint with key (operator Exists).
func (w *PodWrapper) Tolerate(key string) *PodWrapper {
	w.pod.Spec.Tolerations = append(w.pod.Spec.Tolerations, corev1.Toleration{Key: key, Operator: corev1.TolerationOpExists})
	return w
}

// Phase sets status.phase.
func (w *PodWrapper) Phase(p corev1.PodPhase) *PodWrapper {
	w.pod.Status.Phase = p
	return w
}

// Req sets a request (and, for extended resources, the equal limit) on the
// pod's container.
func (w *PodWrapper) Req(name corev1.ResourceName, qty string) *PodWrapper {
	q := resource.MustParse(qty)
	c := &w.pod.Spec.Containers[0]
	c.Resources.Requests[name] = q
	if name != corev1.ResourceCPU && name != corev1.ResourceMemory {
		c.Resources.Limits[name] = q
	}
	return w
}

// Container adds another container with the given requests.
func (w *PodWrapper) Container(name string, req corev1.ResourceList) *PodWrapper {
	w.pod.Spec.Containers = append(w.pod.Spec.Containers, corev1.Container{
		Name:      name,
		Resources: corev1.ResourceRequirements{Requests: req.DeepCopy()},
	})
	return w
}

// InitContainer adds an init container with the given requests.
func (w *PodWrapper) InitContainer(name string, req corev1.ResourceList) *PodWrapper {
	w.pod.Spec.InitContainers = append(w.pod.Spec.InitContainers, corev1.Container{
		Name:      name,
		Resources: corev1.ResourceRequirements{Requests: req.DeepCopy()},
	})
	return w
}

// Sidecar adds a sidecar: an init container with restartPolicy Always,
// which runs beside the pod's containers.
func (w *PodWrapper) Sidecar(name string, req corev1.ResourceList) *PodWrapper {
	always := corev1.ContainerRestartPolicyAlways
	w.InitContainer(name, req)
	w.pod.Spec.InitContainers[len(w.pod.Spec.InitContainers)-1].RestartPolicy = &always
	return w
}

// Group puts the pod in a PodGroup of its namespace.
func (w *PodWrapper) Group(podGroup string) *PodWrapper {
	return w.Annotation(GroupNameAnnotation, podGroup)
}

// SchedulerName sets spec.schedulerName.
func (w *PodWrapper) SchedulerName(name string) *PodWrapper {
	w.pod.Spec.SchedulerName = name
	return w
}

// Terminating sets metadata.deletionTimestamp.
func (w *PodWrapper) Terminating(t time.Time) *PodWrapper {
	ts := metav1.NewTime(t)
	w.pod.DeletionTimestamp = &ts
	return w
}

// Obj returns a copy of the Pod built so far.
func (w *PodWrapper) Obj() *corev1.Pod {
	return w.pod.DeepCopy()
}
