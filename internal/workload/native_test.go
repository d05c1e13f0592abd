package workload

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rdmatopo/rdmatopo/core/placement"
)

// nativePodGroup renders a PodGroup of two pods with extra spec lines.
func nativePodGroup(spec string) string {
	pod := func(n string) string {
		return `---
apiVersion: v1
kind: Pod
metadata: {name: pg-` + n + `, namespace: team, annotations: {scheduling.k8s.io/group-name: pg}}
spec:
  containers:
  - {name: c, image: img, resources: {limits: {nvidia.com/gpu: 4, vke.volcengine.com/rdma: 2, cpu: 16}}}
`
	}
	return `apiVersion: scheduling.volcano.sh/v1beta1
kind: PodGroup
metadata: {name: pg, namespace: team}
spec:
  minMember: 2
` + spec + pod("0") + pod("1")
}

// partitionJob renders a Volcano Job of one task of 4 workers with extra
// spec lines and partition policy lines.
func partitionJob(spec, partition string) string {
	return `apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata: {name: pj, namespace: team, uid: 0b6e5c1e-1111-4222-8333-444455556666}
spec:
` + spec + `  tasks:
  - name: worker
    replicas: 4
` + partition + `    template:
      spec:
` + container
}

func ptr[T any](v T) *T { return &v }

func TestLoadWorkloadNative(t *testing.T) {
	cases := map[string]struct {
		in         string
		wantNative *placement.NativeTopology
		wantErr    string
		// wantPartitions are the workers' volcano.sh/partition-id labels.
		wantPartitions []string
		wantMinTask    int32
	}{
		"PodGroup spec.networkTopology": {
			in:         nativePodGroup("  networkTopology: {mode: hard, highestTierAllowed: 1}\n"),
			wantNative: &placement.NativeTopology{NetworkTopology: &placement.NetworkTopology{Mode: "hard", HighestTierAllowed: ptr(1)}},
		},
		"PodGroup spec.subGroupPolicy": {
			in: nativePodGroup("  subGroupPolicy:\n  - {name: all, subGroupSize: 2, networkTopology: {highestTierName: leaf}}\n"),
			wantNative: &placement.NativeTopology{SubGroupPolicy: []placement.SubGroupPolicy{{Name: "all", SubGroupSize: ptr(int32(2)),
				NetworkTopology: &placement.NetworkTopology{HighestTierName: "leaf"}}}},
		},
		"a typo under networkTopology": {
			in:      nativePodGroup("  networkTopology: {mode: hard, highestTierAlowed: 1}\n"),
			wantErr: "w.yaml: document 1 (PodGroup team/pg): spec.networkTopology.highestTierAlowed: unknown field",
		},
		"a typo under subGroupPolicy": {
			in:      nativePodGroup("  subGroupPolicy:\n  - {name: all, subGroupSise: 2}\n"),
			wantErr: "spec.subGroupPolicy[0].subGroupSise: unknown field",
		},
		"both tier fields": {
			in:      nativePodGroup("  networkTopology: {highestTierAllowed: 1, highestTierName: leaf}\n"),
			wantErr: "spec.networkTopology.highestTierName: must not be set together with highestTierAllowed",
		},
		"a mode Volcano's CRD refuses": {
			in:      nativePodGroup("  networkTopology: {mode: strict, highestTierAllowed: 1}\n"),
			wantErr: `spec.networkTopology.mode: "strict" is not a mode (want hard or soft)`,
		},
		"Job networkTopology and partitionPolicy as Volcano v1.14's controller writes them": {
			in: partitionJob("  networkTopology: {highestTierAllowed: 2}\n",
				"    partitionPolicy: {totalPartitions: 2, partitionSize: 2, minPartitions: 1, networkTopology: {mode: hard, highestTierAllowed: 1}}\n"),
			wantNative: &placement.NativeTopology{
				NetworkTopology: &placement.NetworkTopology{Mode: "hard", HighestTierAllowed: ptr(2)},
				SubGroupPolicy: []placement.SubGroupPolicy{{Name: "worker", SubGroupSize: ptr(int32(2)), MinSubGroups: ptr(int32(1)),
					LabelSelector:   &metav1.LabelSelector{MatchLabels: map[string]string{"volcano.sh/task-spec": "worker"}},
					MatchLabelKeys:  []string{placement.PartitionIDLabel},
					NetworkTopology: &placement.NetworkTopology{Mode: "hard", HighestTierAllowed: ptr(1)}}},
			},
			wantPartitions: []string{"0", "0", "1", "1"},
			wantMinTask:    2,
		},
		"Job highestTierName is copied when no highestTierAllowed": {
			in:         partitionJob("  networkTopology: {mode: soft, highestTierName: minipod}\n", ""),
			wantNative: &placement.NativeTopology{NetworkTopology: &placement.NetworkTopology{Mode: "soft", HighestTierName: "minipod"}},
		},
		"a typo under partitionPolicy": {
			in:      partitionJob("", "    partitionPolicy: {totalPartitions: 2, partitionSize: 2, minPartition: 1}\n"),
			wantErr: "spec.tasks[0].partitionPolicy.minPartition: unknown field",
		},
		"partitions that do not make the replicas": {
			in:      partitionJob("", "    partitionPolicy: {totalPartitions: 3, partitionSize: 2}\n"),
			wantErr: "spec.tasks[0].partitionPolicy: replicas (4) must equal totalPartitions × partitionSize (3 × 2)",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			set, err := LoadWorkload("w.yaml", []byte(tc.in))
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want it to contain %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(set.PodGroups) != 1 {
				t.Fatalf("%d PodGroups, want 1", len(set.PodGroups))
			}
			pg := set.PodGroups[0]
			if diff := cmp.Diff(tc.wantNative, set.Native[pg.Namespace+"/"+pg.Name]); diff != "" {
				t.Errorf("native fields (-want,+got):\n%s", diff)
			}
			if tc.wantPartitions != nil {
				var got []string
				for _, p := range set.Pods {
					got = append(got, p.Labels[placement.PartitionIDLabel])
				}
				if diff := cmp.Diff(tc.wantPartitions, got); diff != "" {
					t.Errorf("partition labels (-want,+got):\n%s", diff)
				}
				if m := pg.Spec.MinTaskMember["worker"]; m != tc.wantMinTask {
					t.Errorf("minTaskMember[worker] = %d, want %d", m, tc.wantMinTask)
				}
			}
		})
	}
}
