package workload

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/rdmatopo/rdmatopo/core/ledger"
)

// checkSchedulerAnnotations refuses a bound pod whose rdmatopo.io/nics,
// rdmatopo.io/numa or rdmatopo.io/s0 annotation cannot be fully read
// (ledger.CheckAnnotations): the scheduler would keep what it can of such a
// pod and warn, a simulation input must say what it means. The error names
// the first annotation at fault as metadata.annotations["KEY"].
func checkSchedulerAnnotations(r *rawObject, p *corev1.Pod) *InputError {
	if p.Spec.NodeName == "" {
		return nil
	}
	bad := ledger.CheckAnnotations(p.Annotations)
	if len(bad) == 0 {
		return nil
	}
	e := bad[0]
	msg := strings.TrimPrefix(e.Err.Error(), ledger.ErrBadAnnotation.Error()+": ")
	if v, ok := p.Annotations[e.Key]; ok {
		msg += fmt.Sprintf(" (value %q)", v)
	}
	return r.errorf(fmt.Sprintf("metadata.annotations[%q]", e.Key),
		"%s: a bound pod's rdmatopo.io annotations must be readable, as the scheduler writes them", msg)
}
