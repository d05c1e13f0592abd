package sim

import (
	"errors"
	"testing"

	"github.com/kubewharf/katalyst-api/pkg/apis/node/v1alpha1"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"

	"github.com/rdmatopo/rdmatopo/config"
	"github.com/rdmatopo/rdmatopo/core/ledger"
	"github.com/rdmatopo/rdmatopo/internal/testing/builders"
	"github.com/rdmatopo/rdmatopo/internal/workload"
)

// gpuJob returns a one-pod job that asks 4 GPUs and no RDMA, created at
// second `at` after workload.Epoch.
func gpuJob(name string, at int) *workload.Set {
	set := gang(name, 0, at)
	set.PodGroups[0].Spec.MinMember = 1
	set.Pods = append(set.Pods, builders.MakePod("default", name+"-0").
		Req(builders.GPUResource, "4").Req(corev1.ResourceCPU, "8").
		Group(name).Created(set.PodGroups[0].CreationTimestamp.Time).Obj())
	return set
}

// TestFailedBindKeepsItsSlot: a high-priority hard s0 gang preempts three
// pods and is allocated where they were while the nodes' KCNRs still list
// them (the KCNRs lag the evictions); one of its binds fails. The pod's
// slot stays the gang's: a job waiting for GPUs does not get that node's,
// although Volcano sees them idle, and the pod is bound there again, on the
// NICs it was planned on, in the next cycle. Nothing more is evicted.
func TestFailedBindKeepsItsSlot(t *testing.T) {
	all := []string{"n1", "n2", "n3", "n4"}
	failed := false
	hook := func(p *corev1.Pod, node string) error {
		if p.Name == "high-1" && !failed {
			failed = true
			return errors.New("injected bind failure")
		}
		return nil
	}
	s := newSim(t, config.SchedulerConf, fourNodes(), Options{BindHook: hook},
		runningGang("low-a", "low", 10, 4, 0, 0, all...), runningGang("low-b", "low", 10, 1, 1, 10, all...),
		highHardGang(), gpuJob("waiting", 200))
	for _, ps := range s.Pods() {
		if ps.Pod.Spec.NodeName != "" {
			_, err := s.ConfirmPod(ps.Pod.Namespace, ps.Pod.Name)
			require.NoError(t, err)
		}
	}
	var lagging []*v1alpha1.CustomNodeResource
	for _, c := range s.CNRs() {
		lagging = append(lagging, c.DeepCopy())
	}

	rep, err := s.RunCycle()
	require.NoError(t, err)
	require.ElementsMatch(t, []string{"default/low-b-1", "default/low-b-2", "default/low-b-3"}, rep.Evicted)
	// The KCNRs have not caught up with the evictions: they list the
	// victims for a few cycles more.
	for _, c := range lagging {
		s.UpsertCNR(c)
	}

	rep, err = s.RunCycle()
	require.NoError(t, err)
	require.Len(t, rep.FailedBinds, 1)
	fb := rep.FailedBinds[0]
	require.Equal(t, "high-1", fb.Pod.Name)
	slot, nics := fb.Node, fb.Pod.Annotations[ledger.AnnotationNICs]
	require.NotEmpty(t, nics)
	require.Len(t, rep.Binds, 2, "the gang is partial")

	rep, err = s.RunCycle()
	require.NoError(t, err)
	require.Empty(t, rep.Evicted)
	bound := boundNodes(s)
	require.Equal(t, slot, bound["default/high-1"], "the pod goes back to its slot")
	require.NotEqual(t, slot, bound["default/waiting-0"], "the slot's GPUs were not given away")
	running := 0
	for _, ps := range s.Pods() {
		if ps.Pod.Name == "high-1" {
			require.Equal(t, nics, ps.Pod.Annotations[ledger.AnnotationNICs], "on the NICs it was planned on")
		}
		if ps.Evicted == "" && ps.Pod.Spec.NodeName != "" {
			running++
		}
	}
	require.Equal(t, 4+1+3, running, "low-a, low-b-0 and the whole gang")
	require.NoError(t, s.Ledger().CheckInvariants())
}
