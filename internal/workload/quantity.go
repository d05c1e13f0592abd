package workload

import (
	"fmt"
	"math"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/rdmatopo/rdmatopo/core/placement"
)

// checkQuantities rejects the pod resource quantities the API server's pod
// validation rejects, so that simulate never schedules a pod no cluster
// could hold: every request, limit and overhead must be non-negative; an
// extended resource (a name with a domain outside kubernetes.io, such as
// nvidia.com/gpu or vke.volcengine.com/rdma) must be a whole number that
// fits an int64, and a container requesting one must set an equal limit
// (extended resources cannot be overcommitted); and every quantity, and
// the pod's whole request, must be one the scheduler can count
// (placement.QuantityProblem: CPU, memory and the rest overflow its
// counters beyond a bound). It returns the first
// problem, in field order, as a field path relative to the pod and a
// message; "" when the pod is fine.
func checkQuantities(spec *corev1.PodSpec) (field, msg string) {
	for _, group := range []struct {
		path       string
		containers []corev1.Container
	}{{"spec.initContainers", spec.InitContainers}, {"spec.containers", spec.Containers}} {
		for i, c := range group.containers {
			base := fmt.Sprintf("%s[%d].resources", group.path, i)
			limits, requests := base+".limits", base+".requests"
			if f, m := checkList(limits, c.Resources.Limits); f != "" {
				return f, m
			}
			if f, m := checkList(requests, c.Resources.Requests); f != "" {
				return f, m
			}
			for _, name := range sortedNames(c.Resources.Requests) {
				if !isExtendedResource(name) {
					continue
				}
				req := c.Resources.Requests[name]
				limit, ok := c.Resources.Limits[name]
				if !ok {
					return joinPath(limits, string(name)), fmt.Sprintf("required: extended resource %s is requested (%s) without a limit; set the limit equal to the request", name, req.String())
				}
				if req.Cmp(limit) != 0 {
					return joinPath(requests, string(name)), fmt.Sprintf("%s: must equal the limit of %s (extended resources cannot be overcommitted)", req.String(), limit.String())
				}
			}
		}
	}
	if f, m := checkList("spec.overhead", spec.Overhead); f != "" {
		return f, m
	}
	if q := placement.QuantityProblem(spec); q != nil {
		return joinPath(q.Path, string(q.Resource)), q.Message
	}
	return "", ""
}

// maxWhole is the largest quantity an extended resource may hold.
var maxWhole = resource.NewQuantity(math.MaxInt64, resource.DecimalSI)

// checkList checks each quantity of a resource list, in name order.
func checkList(path string, list corev1.ResourceList) (field, msg string) {
	for _, name := range sortedNames(list) {
		q := list[name]
		f := joinPath(path, string(name))
		switch {
		case q.Sign() < 0:
			return f, fmt.Sprintf("%s: must be greater than or equal to 0", q.String())
		case !isExtendedResource(name):
		case q.Cmp(*maxWhole) > 0:
			return f, fmt.Sprintf("%s: too large for extended resource %s (at most %d)", q.String(), name, int64(math.MaxInt64))
		case resource.NewQuantity(q.Value(), resource.DecimalSI).Cmp(q) != 0:
			return f, fmt.Sprintf("%s: must be a whole number: extended resource %s is counted in units", q.String(), name)
		}
	}
	return "", ""
}

// isExtendedResource reports whether name is an extended resource as the
// API server reads it: it has a domain, that domain is not kubernetes.io
// (native resources), it is not a quota "requests." name, and the quota
// name built from it is a qualified name.
func isExtendedResource(name corev1.ResourceName) bool {
	s := string(name)
	if !strings.Contains(s, "/") || strings.Contains(s, corev1.ResourceDefaultNamespacePrefix) ||
		strings.HasPrefix(s, corev1.DefaultResourceRequestsPrefix) {
		return false
	}
	return len(validation.IsQualifiedName(corev1.DefaultResourceRequestsPrefix+s)) == 0
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
