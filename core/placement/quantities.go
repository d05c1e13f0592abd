package placement

import (
	"fmt"
	"math"
	"sort"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	resourcehelper "k8s.io/kubernetes/pkg/api/v1/resource"
)

// The largest quantities the scheduler can count. Volcano's session counts
// memory and pods in units, and CPU, ephemeral storage and every other
// resource in thousandths, each through an int64 (a larger quantity wraps:
// "9e18" CPUs read as 0 millicores).
var (
	maxUnits = resource.NewQuantity(math.MaxInt64, resource.DecimalSI)
	maxMilli = resource.NewMilliQuantity(math.MaxInt64, resource.DecimalSI)
)

// countable reports whether the scheduler can count q of resource name,
// and if not, the largest it can.
func countable(name corev1.ResourceName, q resource.Quantity) (bool, *resource.Quantity) {
	limit := maxMilli
	if name == corev1.ResourceMemory || name == corev1.ResourcePods {
		limit = maxUnits
	}
	return q.Cmp(*limit) <= 0, limit
}

// QuantityIssue is a resource quantity of a pod the scheduler cannot
// count.
type QuantityIssue struct {
	// Path is the resource list's field, relative to the pod
	// ("spec.containers[0].resources.limits"); the pod's whole request is
	// "spec.containers[*].resources.requests".
	Path     string
	Resource corev1.ResourceName
	Message  string
}

// Field is the quantity's field, e.g.
// "spec.containers[0].resources.limits[cpu]".
func (q *QuantityIssue) Field() string {
	return fmt.Sprintf("%s[%s]", q.Path, q.Resource)
}

// QuantityProblem finds the first resource quantity of a pod that the
// scheduler cannot count (see countable): each init container's and
// container's limits and requests, the pod overhead, in field order, then
// the pod's whole request as Kubernetes adds it up
// (resourcehelper.PodRequests). nil when every quantity counts. Such a pod
// is never placed: its requests would be read as something else.
func QuantityProblem(spec *corev1.PodSpec) *QuantityIssue {
	for _, group := range []struct {
		path       string
		containers []corev1.Container
	}{{"spec.initContainers", spec.InitContainers}, {"spec.containers", spec.Containers}} {
		for i, c := range group.containers {
			base := fmt.Sprintf("%s[%d].resources", group.path, i)
			if q := listProblem(base+".limits", c.Resources.Limits); q != nil {
				return q
			}
			if q := listProblem(base+".requests", c.Resources.Requests); q != nil {
				return q
			}
		}
	}
	if q := listProblem("spec.overhead", spec.Overhead); q != nil {
		return q
	}
	total := resourcehelper.PodRequests(&corev1.Pod{Spec: *spec}, resourcehelper.PodResourcesOptions{})
	for _, name := range sortedNames(total) {
		if ok, limit := countable(name, total[name]); !ok {
			q := total[name]
			return &QuantityIssue{Path: "spec.containers[*].resources.requests", Resource: name,
				Message: fmt.Sprintf("the pod's requests of %s add up to %s, more than the scheduler can count (at most %s)", name, q.String(), limit.String())}
		}
	}
	return nil
}

// listProblem checks each quantity of a resource list, in name order.
func listProblem(path string, list corev1.ResourceList) *QuantityIssue {
	for _, name := range sortedNames(list) {
		q := list[name]
		if ok, limit := countable(name, q); !ok {
			return &QuantityIssue{Path: path, Resource: name,
				Message: fmt.Sprintf("%s: more %s than the scheduler can count (at most %s)", q.String(), name, limit.String())}
		}
	}
	return nil
}

// sortedNames returns the list's resource names in order.
func sortedNames(list corev1.ResourceList) []corev1.ResourceName {
	names := make([]corev1.ResourceName, 0, len(list))
	for name := range list {
		names = append(names, name)
	}
	sort.Slice(names, func(i, j int) bool { return names[i] < names[j] })
	return names
}
