package workload

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	schedulingv1beta1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"
)

// torchRuntime is a ClusterTrainingRuntime "torch" of one trainer job
// "node" (runtime numNodes 2) with Volcano gang scheduling; its container
// requests 8 CPUs.
const torchRuntime = `apiVersion: trainer.kubeflow.org/v1alpha1
kind: ClusterTrainingRuntime
metadata: {name: torch}
spec:
  mlPolicy: {numNodes: 2, torch: {numProcPerNode: auto}}
  podGroupPolicy: {volcano: {}}
  template:
    metadata:
      annotations: {scheduling.volcano.sh/queue-name: research}
    spec:
      replicatedJobs:
      - name: node
        template:
          metadata:
            labels: {trainer.kubeflow.org/trainjob-ancestor-step: trainer}
          spec:
            template:
              spec:
                schedulerName: volcano
                priorityClassName: train
                containers:
                - name: node
                  image: torch
                  resources: {requests: {cpu: 8}}
`

// mpiRuntime is a TrainingRuntime "mpi" of namespace team: a launcher (the
// trainer step) and a "node" job, the launcher running as a node.
const mpiRuntime = `apiVersion: trainer.kubeflow.org/v1alpha1
kind: TrainingRuntime
metadata: {name: mpi, namespace: team}
spec:
  mlPolicy: {numNodes: 1, mpi: {numProcPerNode: 1, runLauncherAsNode: true}}
  podGroupPolicy: {volcano: {}}
  template:
    spec:
      replicatedJobs:
      - name: launcher
        template:
          metadata:
            labels: {trainer.kubeflow.org/trainjob-ancestor-step: trainer}
          spec:
            template:
              spec:
                schedulerName: volcano
                containers: [{name: node, image: mpi}]
      - name: node
        template:
          spec:
            template:
              spec:
                schedulerName: volcano
                containers: [{name: node, image: mpi}]
`

// queues defines the queues the runtimes name.
const queues = `apiVersion: scheduling.volcano.sh/v1beta1
kind: Queue
metadata: {name: research}
---
apiVersion: scheduling.volcano.sh/v1beta1
kind: Queue
metadata: {name: default}
---
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: train}
value: 100
---
`

// trainJob renders a TrainJob "tj" of namespace team over runtime ref
// (a YAML flow map) with the given spec lines.
func trainJob(ref, spec string) string {
	return "apiVersion: trainer.kubeflow.org/v1alpha1\nkind: TrainJob\nmetadata: {name: tj, namespace: team}\nspec:\n  runtimeRef: " + ref + "\n" + spec
}

// oneZone is a spec.trainer asking for n nodes of one NUMA zone each.
func oneZone(n string) string {
	return "  trainer:\n    numNodes: " + n + "\n    resourcesPerNode: {limits: {nvidia.com/gpu: 4, vke.volcengine.com/rdma: 2}}\n"
}

// trainPod is what a test checks of a pod expanded from a TrainJob.
type trainPod struct {
	Name, Group, ReplicatedJob, JobIndex, CompletionIndex, Hostname string
	GPU                                                             int64
	Contract                                                        string
}

func TestExpandTrainJob(t *testing.T) {
	cases := map[string]struct {
		in        string
		wantQueue string
		wantMin   int32
		wantCPU   string // the PodGroup's minResources cpu
		wantPrio  string
		wantPods  []trainPod
	}{
		"torch: numNodes and resources from the TrainJob, queue from the runtime": {
			in:        torchRuntime + "---\n" + trainJob("{name: torch}", oneZone("3")),
			wantQueue: "research", wantMin: 3, wantCPU: "24", wantPrio: "train",
			wantPods: []trainPod{
				{Name: "tj-node-0-0", Group: "tj", ReplicatedJob: "node", JobIndex: "0", CompletionIndex: "0", Hostname: "tj-node-0-0", GPU: 4},
				{Name: "tj-node-0-1", Group: "tj", ReplicatedJob: "node", JobIndex: "0", CompletionIndex: "1", Hostname: "tj-node-0-1", GPU: 4},
				{Name: "tj-node-0-2", Group: "tj", ReplicatedJob: "node", JobIndex: "0", CompletionIndex: "2", Hostname: "tj-node-0-2", GPU: 4},
			},
		},
		"torch: the runtime's numNodes, the TrainJob's queue and contract on the pod template": {
			in: torchRuntime + "---\n" + trainJob("{name: torch, kind: ClusterTrainingRuntime, apiGroup: trainer.kubeflow.org}",
				"  annotations: {scheduling.volcano.sh/queue-name: default}\n  podTemplateOverrides:\n  - targetJobs: [{name: node}]\n    metadata: {annotations: {rdmatopo.io/mode: hard}}\n"),
			wantQueue: "default", wantMin: 2, wantCPU: "16", wantPrio: "train",
			wantPods: []trainPod{
				{Name: "tj-node-0-0", Group: "tj", ReplicatedJob: "node", JobIndex: "0", CompletionIndex: "0", Hostname: "tj-node-0-0", Contract: "hard"},
				{Name: "tj-node-0-1", Group: "tj", ReplicatedJob: "node", JobIndex: "0", CompletionIndex: "1", Hostname: "tj-node-0-1", Contract: "hard"},
			},
		},
		"mpi, launcher as a node: 1 launcher + numNodes-1 nodes, resources on both": {
			in:        mpiRuntime + "---\n" + trainJob("{name: mpi, kind: TrainingRuntime}", oneZone("3")),
			wantQueue: "default", wantMin: 3, wantCPU: "",
			wantPods: []trainPod{
				{Name: "tj-launcher-0-0", Group: "tj", ReplicatedJob: "launcher", JobIndex: "0", CompletionIndex: "0", Hostname: "tj-launcher-0-0", GPU: 4},
				{Name: "tj-node-0-0", Group: "tj", ReplicatedJob: "node", JobIndex: "0", CompletionIndex: "0", Hostname: "tj-node-0-0", GPU: 4},
				{Name: "tj-node-0-1", Group: "tj", ReplicatedJob: "node", JobIndex: "0", CompletionIndex: "1", Hostname: "tj-node-0-1", GPU: 4},
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			set, err := LoadWorkload("w.yaml", []byte(queues+tc.in))
			require.NoError(t, err)
			require.Len(t, set.PodGroups, 1)
			pg := set.PodGroups[0]
			require.Equal(t, "team/tj", pg.Namespace+"/"+pg.Name)
			require.Empty(t, pg.Annotations, "Trainer's PodGroup carries no annotations of the job")
			require.Equal(t, tc.wantQueue, pg.Spec.Queue)
			require.Equal(t, tc.wantMin, pg.Spec.MinMember)
			require.Equal(t, tc.wantPrio, pg.Spec.PriorityClassName)
			cpu := ""
			if q, ok := (*pg.Spec.MinResources)[corev1.ResourceCPU]; ok {
				cpu = q.String()
			}
			require.Equal(t, tc.wantCPU, cpu, "minResources: the runtime template's requests × count")
			require.Equal(t, "TrainJob", pg.OwnerReferences[0].Kind)
			var got []trainPod
			for _, p := range set.Pods {
				gpu := p.Spec.Containers[0].Resources.Requests[corev1.ResourceName("nvidia.com/gpu")]
				got = append(got, trainPod{
					Name: p.Name, Group: p.Annotations[schedulingv1beta1.KubeGroupNameAnnotationKey],
					ReplicatedJob: p.Labels[jobsetReplicatedJobKey], JobIndex: p.Labels[jobsetJobIndexKey],
					CompletionIndex: p.Labels["batch.kubernetes.io/job-completion-index"], Hostname: p.Spec.Hostname,
					GPU: gpu.Value(), Contract: p.Annotations["rdmatopo.io/mode"],
				})
				require.Equal(t, p.Labels[jobsetJobIndexKey], p.Annotations[jobsetJobIndexKey], "JobSet writes its keys as labels and annotations")
				require.Equal(t, "tj", p.Labels[jobsetNameKey])
				require.Equal(t, "tj", p.Spec.Subdomain)
				require.Equal(t, DefaultSchedulerName, p.Spec.SchedulerName)
			}
			if diff := cmp.Diff(tc.wantPods, got); diff != "" {
				t.Errorf("pods (-want,+got):\n%s", diff)
			}
		})
	}
}

func TestExpandTrainJobErrors(t *testing.T) {
	noVolcano := strings.Replace(torchRuntime, "  podGroupPolicy: {volcano: {}}\n", "  podGroupPolicy: {coscheduling: {}}\n", 1)
	noScheduler := strings.Replace(torchRuntime, "                schedulerName: volcano\n", "", 1)
	dependsOn := strings.Replace(mpiRuntime, "      - name: node\n        template:\n", "      - name: node\n        dependsOn: [{name: launcher, status: Ready}]\n        template:\n", 1)
	cases := map[string]struct {
		in   string
		want wantErr
	}{
		"no such ClusterTrainingRuntime": {
			in:   trainJob("{name: torch}", oneZone("2")),
			want: wantErr{Doc: 4, Kind: "TrainJob", Name: "team/tj", Field: "spec.runtimeRef.name", Msg: `no ClusterTrainingRuntime named "torch" in the workload`},
		},
		"a TrainingRuntime of another namespace": {
			in:   strings.Replace(mpiRuntime, "namespace: team", "namespace: other", 1) + "---\n" + trainJob("{name: mpi, kind: TrainingRuntime}", oneZone("2")),
			want: wantErr{Doc: 5, Kind: "TrainJob", Name: "team/tj", Field: "spec.runtimeRef.name", Msg: `no TrainingRuntime named "mpi" in namespace team in the workload`},
		},
		"unknown runtime kind": {
			in:   torchRuntime + "---\n" + trainJob("{name: torch, kind: Runtime}", oneZone("2")),
			want: wantErr{Doc: 5, Kind: "TrainJob", Name: "team/tj", Field: "spec.runtimeRef.kind", Msg: `"Runtime": want ClusterTrainingRuntime or TrainingRuntime`},
		},
		"a runtime without podGroupPolicy.volcano": {
			in:   noVolcano + "---\n" + trainJob("{name: torch}", oneZone("2")),
			want: wantErr{Doc: 5, Kind: "TrainJob", Name: "team/tj", Field: "spec.runtimeRef.name", Msg: `ClusterTrainingRuntime "torch" has no spec.podGroupPolicy.volcano`},
		},
		"runtime pods without the volcano scheduler": {
			in: noScheduler + "---\n" + trainJob("{name: torch}", oneZone("2")),
			want: wantErr{Doc: 4, Kind: "ClusterTrainingRuntime", Name: "torch",
				Field: "spec.template.spec.replicatedJobs[0].template.spec.template.spec.schedulerName", Msg: `"": Trainer's Volcano plugin does not set the scheduler`},
		},
		"dependsOn": {
			in:   dependsOn,
			want: wantErr{Doc: 4, Kind: "TrainingRuntime", Name: "team/mpi", Field: "spec.template.spec.replicatedJobs[1].dependsOn", Msg: "not simulated"},
		},
		"an override of a job the runtime lacks": {
			in:   torchRuntime + "---\n" + trainJob("{name: torch}", "  podTemplateOverrides:\n  - targetJobs: [{name: worker}]\n    metadata: {labels: {a: b}}\n"),
			want: wantErr{Doc: 5, Kind: "TrainJob", Name: "team/tj", Field: "spec.podTemplateOverrides[0].targetJobs[0].name", Msg: `the runtime has no replicated job "worker"`},
		},
		"suspended": {
			in:   torchRuntime + "---\n" + trainJob("{name: torch}", "  suspend: true\n"),
			want: wantErr{Doc: 5, Kind: "TrainJob", Name: "team/tj", Field: "spec.suspend", Msg: "runs no pods"},
		},
		"zero nodes": {
			in:   torchRuntime + "---\n" + trainJob("{name: torch}", oneZone("0")),
			want: wantErr{Doc: 5, Kind: "TrainJob", Name: "team/tj", Field: "spec.trainer.numNodes", Msg: "must be >= 1, got 0"},
		},
		"an unknown field": {
			in:   torchRuntime + "---\n" + trainJob("{name: torch}", "  trainer: {nodes: 2}\n"),
			want: wantErr{Doc: 5, Kind: "TrainJob", Name: "team/tj", Field: "spec.trainer.nodes", Msg: "unknown field"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := LoadWorkload("w.yaml", []byte(queues+tc.in))
			require.Error(t, err)
			if diff := cmp.Diff(tc.want, asWant(t, err, tc.want.Msg)); diff != "" {
				t.Errorf("error (-want,+got):\n%s\n%v", diff, err)
			}
		})
	}
}
