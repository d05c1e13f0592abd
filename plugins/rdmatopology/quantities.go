package rdmatopology

import (
	"fmt"
	"sync"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	"volcano.sh/volcano/pkg/scheduler/api"

	"github.com/rdmatopo/rdmatopo/core/placement"
)

// ReasonUncountableQuantity is the Event reason on a pod with a resource
// quantity the scheduler cannot count (placement.QuantityProblem).
const ReasonUncountableQuantity = "UncountableQuantity"

// ErrReasonUncountable starts the predicate's reason for such a pod.
const ErrReasonUncountable = "resource quantity the scheduler cannot count"

// findUncountable returns the session's pending tasks with a resource
// quantity the scheduler cannot count ("9e18" CPUs wrap to 0 millicores in
// Volcano's counters), by task. It is built once when the session opens and
// only read after, by the predicate on every node: such a pod fits no node
// and stays pending with the field named, whatever its job. Each pod gets
// one Warning Event per runtime.
func (s *SessionState) findUncountable() map[api.TaskID]*placement.QuantityIssue {
	var out map[api.TaskID]*placement.QuantityIssue
	seen := map[types.UID]bool{}
	for _, job := range s.ssn.Jobs {
		for _, t := range job.TaskStatusIndex[api.Pending] {
			if t.Pod == nil {
				continue
			}
			q := placement.QuantityProblem(&t.Pod.Spec)
			if q == nil {
				continue
			}
			if out == nil {
				out = map[api.TaskID]*placement.QuantityIssue{}
			}
			out[t.UID] = q
			seen[t.Pod.UID] = true
			if s.rt.quantityWarnings.first(t.Pod.UID) {
				klog.InfoS("Pod not placed: a resource quantity the scheduler cannot count", "pod", klog.KObj(t.Pod), "field", q.Field(), "problem", q.Message)
				if s.rt.recorder != nil {
					ref := &v1.ObjectReference{Kind: "Pod", APIVersion: "v1", Namespace: t.Pod.Namespace, Name: t.Pod.Name, UID: t.Pod.UID}
					s.rt.recorder.Event(ref, v1.EventTypeWarning, ReasonUncountableQuantity, fmt.Sprintf("%s: %s; the pod is not placed", q.Field(), q.Message))
				}
			}
		}
	}
	s.rt.quantityWarnings.keep(seen)
	return out
}

// quantityWarnings remembers the pods warned about, so each gets one
// Event however many sessions see it pending; pods no longer pending are
// forgotten.
type quantityWarnings struct {
	mu     sync.Mutex
	warned map[types.UID]bool
}

// first reports whether uid is warned about for the first time, and marks it.
func (w *quantityWarnings) first(uid types.UID) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.warned[uid] {
		return false
	}
	if w.warned == nil {
		w.warned = map[types.UID]bool{}
	}
	w.warned[uid] = true
	return true
}

// keep forgets every pod not in pending.
func (w *quantityWarnings) keep(pending map[types.UID]bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for uid := range w.warned {
		if !pending[uid] {
			delete(w.warned, uid)
		}
	}
}
