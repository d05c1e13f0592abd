package rdmatopology

import (
	"errors"
	"strings"
	"sync"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	"github.com/rdmatopo/rdmatopo/core/ledger"
)

// ReasonUnreadableNICAnnotation is the Warning Event reason on a bound pod
// whose rdmatopo.io annotations cannot be fully read when its reservation is
// rebuilt. The pod keeps the NICs it names that are on its node.
const ReasonUnreadableNICAnnotation = "UnreadableNICAnnotation"

// maxWarnedPods bounds the pods remembered as warned; past it the memory
// starts over (a pod still unreadable is then warned once more).
const maxWarnedPods = 1 << 14

// annotationWarnings remembers the pods already warned about, for the
// runtime's life (rebuilds included), so each gets one Event however many
// sessions rebuild it.
type annotationWarnings struct {
	mu     sync.Mutex
	warned map[types.UID]bool
}

// reportRebuildErrors logs the errors of ledger.Rebuild and emits one Warning
// Event (ReasonUnreadableNICAnnotation) per pod per runtime, whose message
// joins that pod's problems. Errors that name no pod are only logged. A pod
// already warned about is logged at verbosity 4 only.
func (rt *Runtime) reportRebuildErrors(errs []error) {
	recorder := rt.recorder
	type podProblems struct {
		ref  *v1.ObjectReference
		msgs []string
	}
	var order []types.UID
	byPod := map[types.UID]*podProblems{}
	for _, err := range errs {
		var pe *ledger.PodError
		if !errors.As(err, &pe) {
			klog.ErrorS(err, "Rebuilding NIC reservations from pod annotations")
			continue
		}
		uid := types.UID(pe.UID)
		p, ok := byPod[uid]
		if !ok {
			p = &podProblems{ref: &v1.ObjectReference{Kind: "Pod", APIVersion: "v1", Namespace: pe.Namespace, Name: pe.Name, UID: uid}}
			byPod[uid] = p
			order = append(order, uid)
		}
		p.msgs = append(p.msgs, "annotation "+pe.Key+": "+pe.Err.Error())
	}

	w := &rt.warnings
	for _, uid := range order {
		p := byPod[uid]
		w.mu.Lock()
		done := w.warned[uid]
		if !done {
			if w.warned == nil || len(w.warned) >= maxWarnedPods {
				w.warned = map[types.UID]bool{}
			}
			w.warned[uid] = true
		}
		w.mu.Unlock()
		pod := klog.KRef(p.ref.Namespace, p.ref.Name)
		if done {
			klog.V(4).InfoS("NIC annotations of a bound pod cannot be fully read; keeping the NICs it names that are on its node",
				"pod", pod, "problems", p.msgs)
			continue
		}
		for _, msg := range p.msgs {
			klog.ErrorS(errors.New(msg), "NIC annotations of a bound pod cannot be fully read; keeping the NICs it names that are on its node", "pod", pod)
		}
		if recorder != nil {
			recorder.Event(p.ref, v1.EventTypeWarning, ReasonUnreadableNICAnnotation,
				"the scheduler's NIC annotations cannot be fully read: "+strings.Join(p.msgs, "; "))
		}
	}
}
