package workload

import (
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	schedulingv1beta1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"
)

// container is a task template's container block requesting one NUMA zone.
const container = `        containers:
        - name: c
          image: img
          resources:
            limits: {nvidia.com/gpu: 4, vke.volcengine.com/rdma: 2, cpu: 16}
`

// volcanoJob renders a Volcano Job with a master and n workers.
func volcanoJob(extraSpec string, workers int) string {
	return `apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata:
  name: mpi
  namespace: team
  uid: 0b6e5c1e-1111-4222-8333-444455556666
  annotations: {rdmatopo.io/mode: hard, rdmatopo.io/highest-tier: s0}
  labels: {app: mpi}
spec:
` + extraSpec + `  tasks:
  - name: master
    replicas: 1
    template:
      metadata: {annotations: {sidecar: "off"}}
      spec:
` + container + `  - name: worker
    replicas: ` + strconv.Itoa(workers) + `
    template:
      spec:
` + container
}

// podSummary is what a test checks of an expanded pod.
type podSummary struct {
	Name      string
	Group     string
	TaskSpec  string
	TaskIndex string
	Scheduler string
}

func summarize(pods []*corev1.Pod) []podSummary {
	out := make([]podSummary, 0, len(pods))
	for _, p := range pods {
		out = append(out, podSummary{
			Name:      p.Namespace + "/" + p.Name,
			Group:     p.Annotations[schedulingv1beta1.KubeGroupNameAnnotationKey],
			TaskSpec:  p.Annotations["volcano.sh/task-spec"],
			TaskIndex: p.Annotations["volcano.sh/task-index"],
			Scheduler: p.Spec.SchedulerName,
		})
	}
	return out
}

func TestExpandVolcanoJob(t *testing.T) {
	const uid = "0b6e5c1e-1111-4222-8333-444455556666"
	pgName := "mpi-" + uid
	cases := map[string]struct {
		in            string
		wantMinMember int32
		wantQueue     string
		wantPods      []podSummary
		wantMinTask   map[string]int32
	}{
		"defaults: minAvailable is every replica, queue default": {
			in:            volcanoJob("", 2),
			wantMinMember: 3,
			wantQueue:     "default",
			wantMinTask:   map[string]int32{"master": 1, "worker": 2},
			wantPods: []podSummary{
				{Name: "team/mpi-master-0", Group: pgName, TaskSpec: "master", TaskIndex: "0", Scheduler: "volcano"},
				{Name: "team/mpi-worker-0", Group: pgName, TaskSpec: "worker", TaskIndex: "0", Scheduler: "volcano"},
				{Name: "team/mpi-worker-1", Group: pgName, TaskSpec: "worker", TaskIndex: "1", Scheduler: "volcano"},
			},
		},
		"explicit minAvailable and queue": {
			in:            "apiVersion: scheduling.volcano.sh/v1beta1\nkind: Queue\nmetadata: {name: hpc}\n---\n" + volcanoJob("  minAvailable: 2\n  queue: hpc\n", 2),
			wantMinMember: 2,
			wantQueue:     "hpc",
			wantMinTask:   map[string]int32{"master": 1, "worker": 2},
			wantPods: []podSummary{
				{Name: "team/mpi-master-0", Group: pgName, TaskSpec: "master", TaskIndex: "0", Scheduler: "volcano"},
				{Name: "team/mpi-worker-0", Group: pgName, TaskSpec: "worker", TaskIndex: "0", Scheduler: "volcano"},
				{Name: "team/mpi-worker-1", Group: pgName, TaskSpec: "worker", TaskIndex: "1", Scheduler: "volcano"},
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			set, err := LoadWorkload("w.yaml", []byte(tc.in))
			require.NoError(t, err)
			require.Len(t, set.PodGroups, 1)
			pg := set.PodGroups[0]
			require.Equal(t, pgName, pg.Name, "Volcano v1.10 names the PodGroup <job>-<job uid>")
			require.Equal(t, "team", pg.Namespace)
			require.Equal(t, tc.wantMinMember, pg.Spec.MinMember)
			require.Equal(t, tc.wantQueue, pg.Spec.Queue)
			require.Equal(t, tc.wantMinTask, pg.Spec.MinTaskMember)
			require.Equal(t, map[string]string{"rdmatopo.io/mode": "hard", "rdmatopo.io/highest-tier": "s0"}, pg.Annotations,
				"job annotations are copied onto the PodGroup")
			require.Equal(t, map[string]string{"app": "mpi"}, pg.Labels)
			require.Len(t, pg.OwnerReferences, 1)
			require.Equal(t, "Job", pg.OwnerReferences[0].Kind)
			if diff := cmp.Diff(tc.wantPods, summarize(set.Pods)); diff != "" {
				t.Errorf("pods (-want +got):\n%s", diff)
			}
			master := set.Pods[0]
			require.Equal(t, "off", master.Annotations["sidecar"], "template annotations stay")
			require.NotContains(t, master.Annotations, "rdmatopo.io/mode", "job annotations are not copied onto pods")
			require.Equal(t, tc.wantQueue, master.Annotations["volcano.sh/queue-name"])
			gpu := master.Spec.Containers[0].Resources.Requests["nvidia.com/gpu"]
			require.Equal(t, "4", gpu.String())
			minGPU := (*pg.Spec.MinResources)["nvidia.com/gpu"]
			require.Equal(t, int64(4*tc.wantMinMember), minGPU.Value(), "minResources covers minMember pods")
		})
	}
}

// requireJobError loads a workload that must fail on a field of a job of
// kind, with a message containing msg.
func requireJobError(t *testing.T, in, kind, field, msg string) {
	t.Helper()
	_, err := LoadWorkload("w.yaml", []byte(in))
	require.Error(t, err)
	var ie *InputError
	require.ErrorAs(t, err, &ie)
	require.Equal(t, kind, ie.Kind)
	require.Equal(t, field, ie.Field)
	require.Contains(t, ie.Msg, msg)
}

func TestExpandVolcanoJobErrors(t *testing.T) {
	cases := map[string]struct {
		in        string
		wantField string
		wantMsg   string
	}{
		"minAvailable above the replicas": {
			in:        volcanoJob("  minAvailable: 9\n", 2),
			wantField: "spec.minAvailable",
			wantMsg:   "greater than the total replicas",
		},
		"no task": {
			in:        "apiVersion: batch.volcano.sh/v1alpha1\nkind: Job\nmetadata: {name: j}\nspec: {minAvailable: 1}\n",
			wantField: "spec.tasks",
			wantMsg:   "required",
		},
		"duplicate task": {
			in:        strings.Replace(volcanoJob("", 1), "name: worker", "name: master", 1),
			wantField: "spec.tasks[1].name",
			wantMsg:   "duplicate task name",
		},
		"undefined queue": {
			in:        volcanoJob("  queue: nowhere\n", 1),
			wantField: "spec.queue",
			wantMsg:   `queue "nowhere" is not defined`,
		},
		"replicas beyond what a file holds": {
			in:        volcanoJob("", 2000000000),
			wantField: "spec.tasks[1].replicas",
			wantMsg:   "2000000000 replicas would bring the workload past 20000 pods",
		},
		"two jobs beyond what a file holds together": {
			in: volcanoJob("", 10000) + "---\n" +
				strings.NewReplacer("name: mpi", "name: mpi2", "uid: 0b6e5c1e", "uid: 1b6e5c1e").Replace(volcanoJob("", 10000)),
			wantField: "spec.tasks[1].replicas",
			wantMsg:   "10000 replicas would bring the workload past 20000 pods",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) { requireJobError(t, tc.in, KindVolcanoJob, tc.wantField, tc.wantMsg) })
	}
}

// pytorchJob renders a PyTorchJob; keys are the replica type spellings.
func pytorchJob(masterKey, workerKey, runPolicy string, workers int) string {
	return `apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata:
  name: ddp
  annotations: {rdmatopo.io/highest-tier: s1}
spec:
` + runPolicy + `  pytorchReplicaSpecs:
    ` + masterKey + `:
      replicas: 1
      template:
        spec:
  ` + strings.ReplaceAll(container, "\n        ", "\n          ") + `    ` + workerKey + `:
      replicas: ` + strconv.Itoa(workers) + `
      restartPolicy: ExitCode
      template:
        spec:
  ` + strings.ReplaceAll(container, "\n        ", "\n          ")
}

func TestExpandPyTorchJob(t *testing.T) {
	cases := map[string]struct {
		in            string
		wantMinMember int32
		wantQueue     string
		wantPods      []string
	}{
		"all replicas form the gang": {
			in:            pytorchJob("Master", "Worker", "", 3),
			wantMinMember: 4,
			wantQueue:     "default",
			wantPods:      []string{"default/ddp-master-0", "default/ddp-worker-0", "default/ddp-worker-1", "default/ddp-worker-2"},
		},
		"lower-case replica types, minAvailable and queue from the scheduling policy": {
			in: "apiVersion: scheduling.volcano.sh/v1beta1\nkind: Queue\nmetadata: {name: ml}\n---\n" +
				pytorchJob("master", "worker", "  runPolicy:\n    schedulingPolicy: {minAvailable: 2, queue: ml}\n", 2),
			wantMinMember: 2,
			wantQueue:     "ml",
			wantPods:      []string{"default/ddp-master-0", "default/ddp-worker-0", "default/ddp-worker-1"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			set, err := LoadWorkload("w.yaml", []byte(tc.in))
			require.NoError(t, err)
			require.Len(t, set.PodGroups, 1)
			pg := set.PodGroups[0]
			require.Equal(t, "ddp", pg.Name, "the training operator names the PodGroup like the job")
			require.Equal(t, tc.wantMinMember, pg.Spec.MinMember)
			require.Equal(t, tc.wantQueue, pg.Spec.Queue)
			require.Equal(t, map[string]string{"rdmatopo.io/highest-tier": "s1"}, pg.Annotations)
			require.Equal(t, "PyTorchJob", pg.OwnerReferences[0].Kind)
			var names []string
			for _, p := range set.Pods {
				names = append(names, p.Namespace+"/"+p.Name)
				require.Equal(t, "ddp", p.Annotations[schedulingv1beta1.KubeGroupNameAnnotationKey])
				require.Equal(t, "volcano", p.Spec.SchedulerName)
			}
			if diff := cmp.Diff(tc.wantPods, names); diff != "" {
				t.Errorf("pods (-want +got):\n%s", diff)
			}
			require.Equal(t, "master", set.Pods[0].Annotations["volcano.sh/task-spec"])
			require.Equal(t, "master", set.Pods[0].Labels["training.kubeflow.org/job-role"])
			require.Equal(t, corev1.RestartPolicyOnFailure, set.Pods[0].Spec.RestartPolicy, "default restart policy")
			require.Equal(t, corev1.RestartPolicyNever, set.Pods[1].Spec.RestartPolicy, "ExitCode runs as Never")
			minGPU := (*pg.Spec.MinResources)["nvidia.com/gpu"]
			require.Equal(t, int64(4*tc.wantMinMember), minGPU.Value())
		})
	}
}

func TestExpandPyTorchJobErrors(t *testing.T) {
	cases := map[string]struct {
		in        string
		wantField string
		wantMsg   string
	}{
		"unknown replica type": {
			in:        pytorchJob("Master", "Chief", "", 1),
			wantField: "spec.pytorchReplicaSpecs.Chief",
			wantMsg:   "unknown replica type",
		},
		"two masters": {
			in:        strings.Replace(pytorchJob("Master", "Worker", "", 1), "replicas: 1", "replicas: 2", 1),
			wantField: "spec.pytorchReplicaSpecs.Master.replicas",
			wantMsg:   "at most one Master",
		},
		"minAvailable above the replicas": {
			in:        pytorchJob("Master", "Worker", "  runPolicy:\n    schedulingPolicy: {minAvailable: 7}\n", 1),
			wantField: "spec.runPolicy.schedulingPolicy.minAvailable",
			wantMsg:   "between 0 and the total replicas (2)",
		},
		"replicas beyond what a file holds": {
			in:        pytorchJob("Master", "Worker", "", 2000000000),
			wantField: "spec.pytorchReplicaSpecs.Worker.replicas",
			wantMsg:   "2000000000 replicas would bring the workload past 20000 pods",
		},
		"unknown run policy field": {
			in:        pytorchJob("Master", "Worker", "  runPolicy:\n    schedulingPolicy: {minAvailble: 1}\n", 1),
			wantField: "spec.runPolicy.schedulingPolicy.minAvailble",
			wantMsg:   "unknown field",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) { requireJobError(t, tc.in, KindPyTorchJob, tc.wantField, tc.wantMsg) })
	}
}

func TestGeneratedNamesClash(t *testing.T) {
	in := volcanoJob("", 1) + "---\n" + pgDoc + "---\n" +
		"apiVersion: v1\nkind: Pod\nmetadata:\n  name: mpi-worker-0\n  namespace: team\n  annotations: {scheduling.k8s.io/group-name: pg}\nspec: {containers: [{name: c}]}\n"
	_, err := LoadWorkload("w.yaml", []byte(in))
	require.Error(t, err)
	require.Contains(t, err.Error(), "already defined in document 1")
}
