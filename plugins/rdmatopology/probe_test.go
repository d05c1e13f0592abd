package rdmatopology

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"volcano.sh/volcano/pkg/scheduler/api"

	"github.com/rdmatopo/rdmatopo/core/preemption"
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

// TestHoldKeepsHostPorts: a hold keeps its pods' host ports on their node,
// so another job's pod that declares one of them is refused there even
// where the node has the CPUs for both.
func TestHoldKeepsHostPorts(t *testing.T) {
	node := api.NewNodeInfo(builders.MakeNode("n1").CPU("16").Resource(corev1.ResourceMemory, "64Gi").
		Resource(corev1.ResourcePods, "110").Obj())
	withPort := func(job string, port int32) *api.TaskInfo {
		p := builders.MakePod("ns", "p-"+job).UID("uid-"+job).Req(corev1.ResourceCPU, "1").Obj()
		if port > 0 {
			p.Spec.Containers[0].Ports = []corev1.ContainerPort{{ContainerPort: port, HostPort: port}}
		}
		tk := api.NewTaskInfo(p)
		tk.Job = api.JobID(job)
		return tk
	}
	held := withPort("ns/holder", 29500)
	cases := []struct {
		name    string
		task    *api.TaskInfo
		refused bool
	}{
		{name: "another job's pod on the held port", task: withPort("ns/other", 29500), refused: true},
		{name: "another job's pod on another port", task: withPort("ns/other", 29501)},
		{name: "another job's pod without ports", task: withPort("ns/other", 0)},
		{name: "the holder's pod on its port", task: withPort("ns/holder", 29500)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := testSession(nil, nil, nil)
			s.args = &Args{}
			s.args.SetDefaults()
			kept := holdTaskOf(held, "n1", nil)
			kept.Resreq = preemption.Resources{MilliCPU: 1000}
			s.holds.Apply(&preemption.Hold{Job: "ns/holder", Name: "ns/holder", Rebind: true, Tasks: []preemption.HoldTask{kept}})
			if err := s.predicateWithHolds(tc.task, node); (err != nil) != tc.refused {
				t.Errorf("predicate = %v, want refused %v", err, tc.refused)
			}
		})
	}
}
