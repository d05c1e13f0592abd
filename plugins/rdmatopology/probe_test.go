package rdmatopology

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"volcano.sh/volcano/pkg/scheduler/api"

	"github.com/rdmatopo/rdmatopo/framework/preemption"
	"github.com/rdmatopo/rdmatopo/internal/testing/builders"
)

// TestWithoutNICCheckLeavesHoldsOut: the plugin's hold check refuses a
// pod of another job where a preempting gang's hold keeps what the pod
// needs; a walk for the other plugins only (WithoutNICCheck) is not
// refused by it, since what holds keep depends on the pod's own job and
// requests, which the caller counts (gangfit's admission). Its own job's
// pods are never refused by its hold.
func TestWithoutNICCheckLeavesHoldsOut(t *testing.T) {
	node := api.NewNodeInfo(builders.MakeNode("n1").CPU("16").Resource(corev1.ResourceMemory, "64Gi").Obj())
	task := func(job string) *api.TaskInfo {
		tk := api.NewTaskInfo(builders.MakePod("ns", "p-"+job).UID("uid-"+job).Req(corev1.ResourceCPU, "8").Obj())
		tk.Job = api.JobID(job)
		return tk
	}
	cases := []struct {
		name    string
		task    *api.TaskInfo
		probing bool
		refused bool
	}{
		{name: "another job's pod", task: task("ns/other"), refused: true},
		{name: "another job's pod, probing", task: task("ns/other"), probing: true},
		{name: "the holder's pod", task: task("ns/holder")},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := testSession(nil, nil, nil)
			s.args = &Args{}
			s.args.SetDefaults()
			s.holds.Apply(&preemption.Hold{Job: "ns/holder", Name: "ns/holder", Tasks: []preemption.HoldTask{
				{UID: "held", Name: "ns/held", Node: "n1", Resreq: preemption.Resources{MilliCPU: 12000}}}})
			var err error
			if tc.probing {
				s.WithoutNICCheck(tc.task, func() { err = s.predicateWithHolds(tc.task, node) })
			} else {
				err = s.predicateWithHolds(tc.task, node)
			}
			if (err != nil) != tc.refused {
				t.Errorf("predicate = %v, want refused %v", err, tc.refused)
			}
		})
	}
}
