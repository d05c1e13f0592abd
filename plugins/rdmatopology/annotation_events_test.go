package rdmatopology

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/record"

	"github.com/rdmatopo/rdmatopo/core/ledger"
	"github.com/rdmatopo/rdmatopo/core/topology"
	"github.com/rdmatopo/rdmatopo/internal/testing/builders"
)

// podEvent is an Event as the tests compare it.
type podEvent struct {
	Kind, Namespace, Name, UID, Type, Reason string
}

// capturingRecorder keeps every Event with the object it is on.
type capturingRecorder struct {
	record.FakeRecorder
	events []podEvent
	msgs   []string
}

func (r *capturingRecorder) Event(obj runtime.Object, eventtype, reason, message string) {
	ref, _ := obj.(*corev1.ObjectReference)
	if ref == nil {
		ref = &corev1.ObjectReference{}
	}
	r.events = append(r.events, podEvent{Kind: ref.Kind, Namespace: ref.Namespace, Name: ref.Name, UID: string(ref.UID), Type: eventtype, Reason: reason})
	r.msgs = append(r.msgs, message)
}

func TestReportRebuildErrors(t *testing.T) {
	unreadable := func(name string) *corev1.Pod {
		return builders.MakePod("ns", name).UID("uid-"+name).Node("n1").Req(builders.RDMAResource, "2").
			Annotation(ledger.AnnotationNICs, "mlx5_0,mlx5_0").Annotation(ledger.AnnotationNUMA, "zero").Obj()
	}
	warning := func(name string) podEvent {
		return podEvent{Kind: "Pod", Namespace: "ns", Name: name, UID: "uid-" + name, Type: corev1.EventTypeWarning, Reason: ReasonUnreadableNICAnnotation}
	}
	cases := map[string]struct {
		// rounds are the pods of successive sessions' rebuilds.
		rounds [][]*corev1.Pod
		want   []podEvent
	}{
		"one event per pod": {
			rounds: [][]*corev1.Pod{{unreadable("a")}},
			want:   []podEvent{warning("a")},
		},
		"later sessions do not repeat it": {
			rounds: [][]*corev1.Pod{{unreadable("b")}, {unreadable("b")}, {unreadable("b"), unreadable("c")}},
			want:   []podEvent{warning("b"), warning("c")},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			rec := &capturingRecorder{}
			rt := NewRuntime(topology.Config{}, WithRecorder(rec))
			for _, pods := range tc.rounds {
				_, errs := ledger.Rebuild(topology.Config{}, pods, nil)
				rt.reportRebuildErrors(append(errs, errors.New("an error naming no pod")))
			}
			if diff := cmp.Diff(tc.want, rec.events); diff != "" {
				t.Errorf("events (-want +got):\n%s", diff)
			}
			for _, msg := range rec.msgs {
				// One event joins the pod's problems: each annotation at fault is named.
				for _, key := range []string{ledger.AnnotationNICs + ": malformed", ledger.AnnotationNUMA + ": malformed"} {
					if !strings.Contains(msg, "annotation "+key) {
						t.Errorf("event message %q does not name %s", msg, key)
					}
				}
			}
		})
	}
	// A nil recorder only logs.
	_, errs := ledger.Rebuild(topology.Config{}, []*corev1.Pod{unreadable("d")}, nil)
	NewRuntime(topology.Config{}).reportRebuildErrors(errs)
}
