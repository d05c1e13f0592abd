package rdmatopology

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"volcano.sh/volcano/pkg/scheduler/api"
	"volcano.sh/volcano/pkg/scheduler/framework"

	"github.com/rdmatopo/rdmatopo/core/topology"
	"github.com/rdmatopo/rdmatopo/internal/testing/builders"
)

// TestFindUncountable: a pending pod with a quantity the scheduler cannot
// count is found, named by its field, and warned about once per runtime
// while it stays pending.
func TestFindUncountable(t *testing.T) {
	pod := func(name, cpu string) *corev1.Pod {
		p := builders.MakePod("ns", name).UID("uid-" + name).Group("g").Obj()
		p.Spec.Containers[0].Resources.Limits[corev1.ResourceCPU] = resource.MustParse(cpu)
		p.Spec.Containers[0].Resources.Requests[corev1.ResourceCPU] = resource.MustParse(cpu)
		return p
	}
	session := func(rt *Runtime, pods ...*corev1.Pod) *SessionState {
		job := api.NewJobInfo("ns/g")
		for _, p := range pods {
			job.AddTaskInfo(api.NewTaskInfo(p))
		}
		return &SessionState{rt: rt, ssn: &framework.Session{Jobs: map[api.JobID]*api.JobInfo{job.UID: job}}}
	}
	rec := &capturingRecorder{}
	rt := NewRuntime(topology.Config{}, WithRecorder(rec))
	got := session(rt, pod("big", "9e18"), pod("fine", "4")).findUncountable()
	if len(got) != 1 || got["uid-big"] == nil || got["uid-big"].Field() != "spec.containers[0].resources.limits[cpu]" {
		t.Fatalf("uncountable %v, want pod big's limits[cpu]", got)
	}
	session(rt, pod("big", "9e18")).findUncountable()
	want := []podEvent{{Kind: "Pod", Namespace: "ns", Name: "big", UID: "uid-big", Type: corev1.EventTypeWarning, Reason: ReasonUncountableQuantity}}
	if diff := cmp.Diff(want, rec.events); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
	if len(rec.msgs) != 1 || !strings.HasPrefix(rec.msgs[0], "spec.containers[0].resources.limits[cpu]: 9e18: more cpu than the scheduler can count") {
		t.Errorf("event messages %q", rec.msgs)
	}
	// Gone, then back: warned again.
	session(rt).findUncountable()
	session(rt, pod("big", "9e18")).findUncountable()
	if len(rec.events) != 2 {
		t.Errorf("%d events, want 2 once the pod came back", len(rec.events))
	}
}
