package kube_test

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	batchv1alpha1 "volcano.sh/apis/pkg/apis/batch/v1alpha1"

	"github.com/rdmatopo/rdmatopo/core/kube"
	"github.com/rdmatopo/rdmatopo/core/placement"
	"github.com/rdmatopo/rdmatopo/core/topology"
	"github.com/rdmatopo/rdmatopo/internal/testing/builders"
)

// TestLimitNode: a node bounds the state by what it can give; it is out
// when the session lacks its Node, when it is cordoned or tainted
// NoExecute, and a node of the fabric the session does not have is out.
func TestLimitNode(t *testing.T) {
	nodes, cnrs := builders.TwoLeavesFourNodes()
	f := topology.Build(topology.Config{}.WithDefaults(), nodes, cnrs)
	st := placement.NewState(f, nil)
	cordoned := builders.MakeNode("n2").Cordon().Obj()
	drained := builders.MakeNode("n3").Taint("rdmatopo.io/drain", corev1.TaintEffectNoExecute).Obj()
	tolerable := builders.MakeNode("n1").Taint("team", corev1.TaintEffectNoSchedule).Obj()
	kube.LimitNode(st, "n1", tolerable, placement.Cap{GPU: 8, NICs: 4, CPUMilli: 1000})
	kube.LimitNode(st, "n2", cordoned, placement.Cap{GPU: 8})
	kube.LimitNode(st, "n3", drained, placement.Cap{GPU: 8})
	in := map[string]bool{"n1": true, "n2": true, "n3": true}
	kube.LimitMissing(st, func(n string) bool { return in[n] })
	got := map[string]bool{}
	for _, n := range f.NodeNames() {
		got[n] = st.Usable(n)
	}
	want := map[string]bool{"n1": true, "n2": false, "n3": false, "n4": false}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("usable nodes (-want,+got):\n%s", diff)
	}
	if got := kube.NoExecuteTaint(drained); got != "rdmatopo.io/drain" {
		t.Errorf("NoExecuteTaint = %q, want rdmatopo.io/drain", got)
	}
	if got := kube.NoExecuteTaint(tolerable); got != "" {
		t.Errorf("NoExecuteTaint of a NoSchedule taint = %q, want none", got)
	}
}

// TestRanksOf: a Volcano Job's tasks rank in the order tasks gives, a
// Job it does not know by name, and an invalid rank is a contract error.
func TestRanksOf(t *testing.T) {
	pod := func(name, task string) *corev1.Pod {
		w := builders.MakePod("ns", name).Annotation(batchv1alpha1.JobNameKey, "job")
		if task != "" {
			w = w.Annotation(batchv1alpha1.TaskSpecKey, task)
		}
		return w.Obj()
	}
	pods := []*corev1.Pod{pod("job-worker-0", "worker"), pod("job-master-0", "master"), pod("job-worker-1", "worker")}
	cases := map[string]struct {
		pods  []*corev1.Pod
		tasks func(namespace, job string) []string
		want  []int
		err   error
	}{
		"spec order": {pods: pods, tasks: func(ns, job string) []string {
			if ns != "ns" || job != "job" {
				return nil
			}
			return []string{"master", "worker"}
		}, want: []int{1, 0, 2}},
		"job unknown": {pods: pods, want: []int{1, 0, 2}},
		"invalid rank": {pods: []*corev1.Pod{builders.MakePod("ns", "p").Annotation("rdmatopo.io/rank", "first").Obj()},
			err: placement.ErrInvalidContract},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := kube.RanksOf(tc.pods, tc.tasks)
			if tc.err != nil {
				if !errors.Is(err, tc.err) {
					t.Fatalf("error %v, want %v", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("ranks (-want,+got):\n%s", diff)
			}
		})
	}
}
