package workload

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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
