package workload

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	schedulingv1beta1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"
)

// runningPodDoc is pod `name` of PodGroup pg, bound to node with phase
// phase (empty: none given), asking 4 GPUs.
func runningPodDoc(name, node, phase string) string {
	doc := "apiVersion: v1\nkind: Pod\nmetadata:\n  name: " + name + "\n" + groupAnn +
		"spec: {nodeName: " + node + ", containers: [{name: c, resources: {limits: {nvidia.com/gpu: 4}}}]}\n"
	if phase != "" {
		doc += "status: {phase: " + phase + "}\n"
	}
	return doc
}

// gpuNodeDoc is node `name` with 8 GPUs.
func gpuNodeDoc(name string) string {
	return "apiVersion: v1\nkind: Node\nmetadata: {name: " + name + "}\nstatus: {allocatable: {cpu: 64, nvidia.com/gpu: 8, pods: 10}}\n"
}

func TestLoadWorkloadRunningPods(t *testing.T) {
	type got struct {
		Phases  []corev1.PodPhase
		PGPhase schedulingv1beta1.PodGroupPhase
	}
	twoPG := "apiVersion: scheduling.volcano.sh/v1beta1\nkind: PodGroup\nmetadata: {name: pg}\nspec: {minMember: 2}\n"
	cases := map[string]struct {
		in   string
		want got
	}{
		"running gang: the PodGroup runs": {
			in:   twoPG + "---\n" + runningPodDoc("a", "n1", "") + "---\n" + runningPodDoc("b", "n1", "Running"),
			want: got{Phases: []corev1.PodPhase{corev1.PodRunning, corev1.PodRunning}, PGPhase: schedulingv1beta1.PodGroupRunning},
		},
		"below minMember: the PodGroup stays pending": {
			in:   twoPG + "---\n" + runningPodDoc("a", "n1", "Pending") + "---\n" + podDoc,
			want: got{Phases: []corev1.PodPhase{corev1.PodRunning, ""}, PGPhase: schedulingv1beta1.PodGroupPending},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			set, err := LoadWorkload("w.yaml", []byte(tc.in))
			require.NoError(t, err)
			var g got
			for _, p := range set.Pods {
				g.Phases = append(g.Phases, p.Status.Phase)
			}
			g.PGPhase = set.PodGroups[0].Status.Phase
			if diff := cmp.Diff(tc.want, g); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestCheckRunning(t *testing.T) {
	const boundInCluster = "---\napiVersion: v1\nkind: Pod\nmetadata: {name: old}\n" +
		"spec: {nodeName: n1, containers: [{name: c, resources: {limits: {nvidia.com/gpu: 4}}}]}\n"
	twoPG := "apiVersion: scheduling.volcano.sh/v1beta1\nkind: PodGroup\nmetadata: {name: pg}\nspec: {minMember: 2}\n"
	cases := map[string]struct {
		cluster, workload string
		want              *wantErr
	}{
		"fits": {
			cluster:  gpuNodeDoc("n1"),
			workload: twoPG + "---\n" + runningPodDoc("a", "n1", "") + "---\n" + runningPodDoc("b", "n1", ""),
		},
		"unknown node": {
			cluster:  gpuNodeDoc("n1"),
			workload: twoPG + "---\n" + runningPodDoc("a", "n2", ""),
			want:     &wantErr{Doc: 2, Kind: "Pod", Name: "default/a", Field: "spec.nodeName", Msg: `node "n2" is not defined in the cluster`},
		},
		"full next to the cluster's bound pods": {
			cluster:  gpuNodeDoc("n1") + boundInCluster,
			workload: twoPG + "---\n" + runningPodDoc("a", "n1", "") + "---\n" + runningPodDoc("b", "n1", ""),
			want:     &wantErr{Doc: 3, Kind: "Pod", Name: "default/b", Field: "spec.nodeName", Msg: "cannot hold this pod"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			c, err := LoadCluster("c.yaml", []byte(tc.cluster))
			require.NoError(t, err)
			set, err := LoadWorkload("w.yaml", []byte(tc.workload))
			require.NoError(t, err)
			err = CheckRunning(c, set)
			if tc.want == nil {
				require.NoError(t, err)
				return
			}
			require.Error(t, err)
			var ie *InputError
			require.True(t, errors.As(err, &ie))
			require.Equal(t, "w.yaml", ie.File)
			if diff := cmp.Diff(*tc.want, asWant(t, err, tc.want.Msg)); diff != "" {
				t.Errorf("(-want +got):\n%s\nfull error: %v", diff, err)
			}
		})
	}
}
