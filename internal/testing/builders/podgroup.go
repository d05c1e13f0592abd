package builders

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	schedulingv1beta1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"
)

// PodGroupWrapper builds a Volcano PodGroup (scheduling.volcano.sh/v1beta1).
type PodGroupWrapper struct {
	pg schedulingv1beta1.PodGroup
	meta[*PodGroupWrapper]
}

// MakePodGroup starts a PodGroup of minMember 1 in queue "default", phase
// Pending. Its UID defaults to "pg-<namespace>-<name>".
func MakePodGroup(namespace, name string) *PodGroupWrapper {
	w := &PodGroupWrapper{pg: schedulingv1beta1.PodGroup{
		TypeMeta: metav1.TypeMeta{APIVersion: schedulingv1beta1.SchemeGroupVersion.String(), Kind: "PodGroup"},
		ObjectMeta: metav1.ObjectMeta{
			Namespace: namespace,
			Name:      name,
			UID:       types.UID("pg-" + namespace + "-" + name),
		},
		Spec:   schedulingv1beta1.PodGroupSpec{MinMember: 1, Queue: "default"},
		Status: schedulingv1beta1.PodGroupStatus{Phase: schedulingv1beta1.PodGroupPending},
	}}
	w.meta = meta[*PodGroupWrapper]{obj: &w.pg.ObjectMeta, self: w}
	return w
}

// MinMember sets spec.minMember.
func (w *PodGroupWrapper) MinMember(n int32) *PodGroupWrapper {
	w.pg.Spec.MinMember = n
	return w
}

// Queue sets spec.queue.
func (w *PodGroupWrapper) Queue(name string) *PodGroupWrapper {
	w.pg.Spec.Queue = name
	return w
}

// PriorityClass sets spec.priorityClassName.
func (w *PodGroupWrapper) PriorityClass(name string) *PodGroupWrapper {
	w.pg.Spec.PriorityClassName = name
	return w
}

// MinResources sets spec.minResources, what the gang needs to start (the
// enqueue step weighs it against its queue's room).
func (w *PodGroupWrapper) MinResources(req corev1.ResourceList) *PodGroupWrapper {
	r := req.DeepCopy()
	w.pg.Spec.MinResources = &r
	return w
}

// Phase sets status.phase.
func (w *PodGroupWrapper) Phase(p schedulingv1beta1.PodGroupPhase) *PodGroupWrapper {
	w.pg.Status.Phase = p
	return w
}

// Obj returns a copy of the PodGroup.
func (w *PodGroupWrapper) Obj() *schedulingv1beta1.PodGroup {
	return w.pg.DeepCopy()
}
