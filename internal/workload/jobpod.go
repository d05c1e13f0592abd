package workload

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	schedulingv1beta1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"
)

// controllerPod is a pod a job's controller creates: its name and
// namespace, a stable UID, the given labels, annotations and spec, and the
// controller's object as owner. The caller stamps its creation time.
func controllerPod(namespace, name string, labels, ann map[string]string, owner metav1.OwnerReference, spec corev1.PodSpec) *corev1.Pod {
	return &corev1.Pod{
		TypeMeta: metav1.TypeMeta{APIVersion: APIVersionCore, Kind: KindPod},
		ObjectMeta: metav1.ObjectMeta{
			Name:            name,
			Namespace:       namespace,
			UID:             StableUID(KindPod, namespace, name),
			Labels:          labels,
			Annotations:     ann,
			OwnerReferences: []metav1.OwnerReference{owner},
		},
		Spec: spec,
	}
}

// controllerPodGroup is the PodGroup a job's controller creates for the
// job's gang: its name in the job's namespace, a stable UID, the given
// labels, annotations and spec, the controller's object as owner, phase
// Pending, and the job's creation time (else the next tick of clk).
func controllerPodGroup(job metav1.Object, name string, labels, ann map[string]string, owner metav1.OwnerReference, spec schedulingv1beta1.PodGroupSpec, clk *clock) *schedulingv1beta1.PodGroup {
	return &schedulingv1beta1.PodGroup{
		TypeMeta: metav1.TypeMeta{APIVersion: APIVersionScheduling, Kind: KindPodGroup},
		ObjectMeta: metav1.ObjectMeta{
			Name:              name,
			Namespace:         job.GetNamespace(),
			UID:               StableUID(KindPodGroup, job.GetNamespace(), name),
			Labels:            labels,
			Annotations:       ann,
			OwnerReferences:   []metav1.OwnerReference{owner},
			CreationTimestamp: timeOr(job.GetCreationTimestamp(), clk),
		},
		Spec:   spec,
		Status: schedulingv1beta1.PodGroupStatus{Phase: schedulingv1beta1.PodGroupPending},
	}
}
