package workload

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// defaultRequests applies the API server's defaulting of container
// requests: a resource with a limit and no request requests its limit.
// Extended resources such as nvidia.com/gpu are usually written as limits
// only, so without this the scheduler would see pods requesting nothing.
func defaultRequests(spec *corev1.PodSpec) {
	fill := func(cs []corev1.Container) {
		for i := range cs {
			r := &cs[i].Resources
			for name, q := range r.Limits {
				if _, ok := r.Requests[name]; ok {
					continue
				}
				if r.Requests == nil {
					r.Requests = corev1.ResourceList{}
				}
				r.Requests[name] = q.DeepCopy()
			}
		}
	}
	fill(spec.InitContainers)
	fill(spec.Containers)
}

// PodRequests is what a pod asks of a node: the sum of its containers'
// requests, at least the largest init container's, plus the pod overhead.
func PodRequests(spec *corev1.PodSpec) corev1.ResourceList {
	total := corev1.ResourceList{}
	for _, c := range spec.Containers {
		addList(total, c.Resources.Requests)
	}
	for _, c := range spec.InitContainers {
		for name, q := range c.Resources.Requests {
			if cur, ok := total[name]; !ok || q.Cmp(cur) > 0 {
				total[name] = q.DeepCopy()
			}
		}
	}
	addList(total, spec.Overhead)
	return total
}

// addList adds b into a.
func addList(a, b corev1.ResourceList) {
	for name, q := range b {
		cur := a[name]
		cur.Add(q)
		a[name] = cur
	}
}

// scaled returns r times n.
func scaled(r corev1.ResourceList, n int32) corev1.ResourceList {
	out := corev1.ResourceList{}
	for name, q := range r {
		v := q.DeepCopy()
		v.Mul(int64(n))
		out[name] = v
	}
	return out
}

// timeOr returns t when set, else the next tick of c.
func timeOr(t metav1.Time, c *clock) metav1.Time {
	if !t.IsZero() {
		return t
	}
	return metav1.NewTime(c.tick())
}
