package main

import (
	"bytes"
	"context"
	"encoding/json"
	"encoding/xml"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	katalystfake "github.com/kubewharf/katalyst-api/pkg/client/clientset/versioned/fake"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/runtime"
	kubefake "k8s.io/client-go/kubernetes/fake"

	"github.com/rdmatopo/rdmatopo/core/topology"
	"github.com/rdmatopo/rdmatopo/examples"
	"github.com/rdmatopo/rdmatopo/internal/sim/simjson"
	"github.com/rdmatopo/rdmatopo/internal/workload"
	"github.com/rdmatopo/rdmatopo/plugins/rdmatopology"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

// runCLI runs the command line in-process and returns its exit code,
// stdout and stderr.
func runCLI(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	code := run(args, &stdout, &stderr)
	return code, stdout.String(), stderr.String()
}

// golden compares got with testdata/name, or rewrites it with -update.
func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		require.NoError(t, os.MkdirAll("testdata", 0o755))
		require.NoError(t, os.WriteFile(path, []byte(got), 0o644))
		return
	}
	want, err := os.ReadFile(path)
	require.NoError(t, err, "golden file missing: run go test ./cmd/rdmatopo -update")
	if diff := cmp.Diff(string(want), got); diff != "" {
		t.Errorf("%s differs (-want +got); if intended, run go test ./cmd/rdmatopo -update:\n%s", path, diff)
	}
}

func TestSimulateGolden(t *testing.T) {
	cases := map[string]struct {
		args   []string
		golden string
	}{
		"default table":      {args: []string{"simulate"}, golden: "simulate-default.txt"},
		"default json":       {args: []string{"simulate", "-o", "json"}, golden: "simulate-default.json"},
		"default wide":       {args: []string{"simulate", "-o", "wide"}, golden: "simulate-default-wide.txt"},
		"miniPod conf table": {args: []string{"simulate", "--scheduler-conf", "../../examples/volcano-scheduler-minipods.conf"}, golden: "simulate-minipods.txt"},
		"miniPod conf json":  {args: []string{"simulate", "-o", "json", "--scheduler-conf", "../../examples/volcano-scheduler-minipods.conf"}, golden: "simulate-minipods.json"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			code, stdout, stderr := runCLI(t, tc.args...)
			require.Equal(t, exitOK, code, stderr)
			require.Empty(t, stderr)
			golden(t, tc.golden, stdout)
		})
	}
}

func TestSimulateIsDeterministic(t *testing.T) {
	_, first, _ := runCLI(t, "simulate", "-o", "json")
	for i := 0; i < 2; i++ {
		_, again, _ := runCLI(t, "simulate", "-o", "json")
		require.Equal(t, first, again, "run %d", i+2)
	}
}

// keysOf returns the sorted keys of a JSON object.
func keysOf(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func TestSimulateJSONContract(t *testing.T) {
	code, stdout, stderr := runCLI(t, "simulate", "-o", "json")
	require.Equal(t, exitOK, code, stderr)

	dec := json.NewDecoder(strings.NewReader(stdout))
	var top map[string]any
	require.NoError(t, dec.Decode(&top))
	var extra any
	require.True(t, errors.Is(dec.Decode(&extra), io.EOF), "exactly one JSON object")
	require.Equal(t, []string{"evictions", "jobs", "pods"}, keysOf(top))
	require.Equal(t, []any{}, top["evictions"], "evictions is a list, never null")

	podKeys := []string{"annotations", "evicted", "job", "name", "namespace", "nics", "node", "numa", "rank", "s0", "s1"}
	jobKeys := []string{"boundPods", "minMember", "name", "namespace", "placed", "reason", "ringCrossings", "s0", "s1", "tier", "waitedSeconds"}
	pods, ok := top["pods"].([]any)
	require.True(t, ok)
	require.NotEmpty(t, pods)
	for _, p := range pods {
		pod := p.(map[string]any)
		require.Equal(t, podKeys, keysOf(pod))
		for _, list := range []string{"nics", "s0", "s1"} {
			require.IsType(t, []any{}, pod[list], "%s is a list, never null", list)
		}
		require.IsType(t, map[string]any{}, pod["annotations"], "annotations is an object, never null")
		require.Equal(t, false, pod["evicted"], "the default workload evicts nothing")
		if pod["node"] == "" {
			require.EqualValues(t, -1, pod["numa"], "an unplaced pod has numa -1")
			require.Empty(t, pod["nics"])
		}
		require.True(t, strings.HasPrefix(pod["job"].(string), pod["namespace"].(string)+"/"))
	}
	jobs, ok := top["jobs"].([]any)
	require.True(t, ok)
	tiers := map[string]bool{"": true, "node": true, "s0": true, "s1": true, "cluster": true}
	placed, waiting := 0, 0
	for _, j := range jobs {
		job := j.(map[string]any)
		require.Equal(t, jobKeys, keysOf(job))
		require.True(t, tiers[job["tier"].(string)], "tier %v", job["tier"])
		for _, list := range []string{"s0", "s1"} {
			require.IsType(t, []any{}, job[list])
		}
		require.IsType(t, float64(0), job["waitedSeconds"])
		if job["placed"].(bool) {
			placed++
			require.Empty(t, job["reason"])
			require.Zero(t, job["waitedSeconds"], "the default workload's placed jobs are placed at once")
			require.GreaterOrEqual(t, job["boundPods"].(float64), job["minMember"].(float64))
		} else {
			waiting++
			require.Empty(t, job["tier"])
			require.NotEmpty(t, job["reason"], "an unplaced job says why")
		}
	}
	require.GreaterOrEqual(t, len(jobs), 6)
	require.Positive(t, placed)
	require.Positive(t, waiting, "the default workload has a hard-mode job that must wait")
}

// writeFile writes content into a file of dir and returns its path.
func writeFile(t *testing.T, dir, name, content string) string {
	t.Helper()
	path := filepath.Join(dir, name)
	require.NoError(t, os.WriteFile(path, []byte(content), 0o644))
	return path
}

// nodeYAML is a Node with room for a few pods.
const nodeYAML = "apiVersion: v1\nkind: Node\nmetadata: {name: n1}\nstatus: {allocatable: {cpu: 8, vke.volcengine.com/rdma: 2}}\n"

// annotatedPodYAML is pod ns/p bound to n1, requesting one RDMA NIC, with
// the given annotations (YAML flow map entries).
func annotatedPodYAML(annotations string) string {
	return "apiVersion: v1\nkind: Pod\nmetadata: {name: p, namespace: ns, annotations: {" + annotations + "}}\n" +
		"spec: {nodeName: n1, containers: [{name: c, resources: {requests: {vke.volcengine.com/rdma: 1}, limits: {vke.volcengine.com/rdma: 1}}}]}\n"
}

func TestUnusableInputExits2(t *testing.T) {
	const pg = "apiVersion: scheduling.volcano.sh/v1beta1\nkind: PodGroup\nmetadata: {name: pg}\nspec: {minMember: 1}\n"
	cases := map[string]struct {
		file string // name of the file written with content
		// content of the file; args get the file's path in place of "FILE".
		content string
		args    []string
		// wantIn must all appear in the one stderr line.
		wantIn []string
	}{
		"unparsable YAML": {
			file: "w.yaml", content: pg + "---\nkind: Pod\nmetadata: {name: [\n",
			args: []string{"simulate", "--workload", "FILE"}, wantIn: []string{"w.yaml", "document 2", "invalid YAML"},
		},
		"contract value in upper case": {
			file: "w.yaml", content: "apiVersion: batch.volcano.sh/v1alpha1\nkind: Job\nmetadata: {name: j, annotations: {rdmatopo.io/mode: HARD}}\n",
			args:   []string{"simulate", "--workload", "FILE"},
			wantIn: []string{"w.yaml", "Job default/j", `metadata.annotations["rdmatopo.io/mode"]`, `"HARD" is not a mode`},
		},
		"segment size that does not divide the gang": {
			file: "w.yaml", content: "apiVersion: batch.volcano.sh/v1alpha1\nkind: Job\nmetadata: {name: j, annotations: {rdmatopo.io/segment-size: \"4\", rdmatopo.io/segment-tier: s0}}\n" +
				"spec:\n  minAvailable: 6\n  tasks:\n  - {name: w, replicas: 6, template: {spec: {containers: [{name: c, image: x}]}}}\n",
			args:   []string{"simulate", "--workload", "FILE"},
			wantIn: []string{"w.yaml", "Job default/j", `metadata.annotations["rdmatopo.io/segment-size"]`, "4 does not divide the gang's 6 pods"},
		},
		"contract key misspelt": {
			file: "w.yaml", content: "apiVersion: scheduling.volcano.sh/v1beta1\nkind: PodGroup\nmetadata: {name: pg, annotations: {rdmatopo.io/Mode: hard}}\n",
			args:   []string{"simulate", "--workload", "FILE"},
			wantIn: []string{"w.yaml", "PodGroup default/pg", `metadata.annotations["rdmatopo.io/Mode"]`, "unknown key"},
		},
		"unknown kind": {
			file: "w.yaml", content: "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\n",
			args: []string{"simulate", "--workload", "FILE"}, wantIn: []string{"w.yaml", "Deployment web", "kind"},
		},
		"pod without a group": {
			file: "w.yaml", content: pg + "---\napiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: {containers: [{name: c}]}\n",
			args:   []string{"simulate", "--workload", "FILE"},
			wantIn: []string{"w.yaml", "Pod default/p", "scheduling.k8s.io/group-name"},
		},
		"cluster file error": {
			file: "c.yaml", content: "apiVersion: v1\nkind: Node\nmetadata: {name: n1}\nstatus: {allocatable: {cpu: lots}}\n",
			args: []string{"simulate", "--cluster", "FILE"}, wantIn: []string{"c.yaml", "Node n1", "status.allocatable.cpu"},
		},
		"bound pod with missing numa": {
			file: "c.yaml", content: nodeYAML + "---\n" + annotatedPodYAML(`rdmatopo.io/nics: mlx5_0`),
			args:   []string{"simulate", "--cluster", "FILE"},
			wantIn: []string{"c.yaml", "Pod ns/p", `metadata.annotations["rdmatopo.io/numa"]`, "missing"},
		},
		"bound pod with non-numeric numa": {
			file: "c.yaml", content: nodeYAML + "---\n" + annotatedPodYAML(`rdmatopo.io/nics: "1a:00.0", rdmatopo.io/numa: one`),
			args:   []string{"simulate", "--cluster", "FILE"},
			wantIn: []string{"c.yaml", "Pod ns/p", `metadata.annotations["rdmatopo.io/numa"]`, `"one"`},
		},
		"bound pod naming a NIC twice": {
			file: "c.yaml", content: nodeYAML + "---\n" + annotatedPodYAML(`rdmatopo.io/nics: "mlx5_0,mlx5_0", rdmatopo.io/numa: "0"`),
			args:   []string{"simulate", "--cluster", "FILE"},
			wantIn: []string{"c.yaml", "Pod ns/p", `metadata.annotations["rdmatopo.io/nics"]`, "twice"},
		},
		"bound pod with an unreadable s0": {
			file: "c.yaml", content: nodeYAML + "---\n" + annotatedPodYAML(`rdmatopo.io/nics: mlx5_0, rdmatopo.io/numa: "0", rdmatopo.io/s0: ","`),
			args:   []string{"simulate", "--cluster", "FILE"},
			wantIn: []string{"c.yaml", "Pod ns/p", `metadata.annotations["rdmatopo.io/s0"]`},
		},
		"conf with an unknown action": {
			file: "s.conf", content: "actions: \"enqueue, alocate\"\ntiers:\n- plugins:\n  - name: gang\n",
			args: []string{"simulate", "--scheduler-conf", "FILE"}, wantIn: []string{"s.conf", "actions", `"alocate"`},
		},
		"conf with an unknown plugin": {
			file: "s.conf", content: "actions: \"enqueue, allocate\"\ntiers:\n- plugins:\n  - name: gangs\n",
			args: []string{"simulate", "--scheduler-conf", "FILE"}, wantIn: []string{"s.conf", "tiers[0].plugins[0].name", `"gangs"`},
		},
		"invalid plugin arguments": {
			file: "s.conf", content: "actions: \"enqueue, topology-allocate\"\ntiers:\n- plugins:\n  - name: gang\n  - name: rdma-topology\n    arguments: {weight: 0}\n",
			args: []string{"validate", "--scheduler-conf", "FILE"}, wantIn: []string{"s.conf", "tiers[0].plugins[1].arguments", "weight"},
		},
		"validate: topology-allocate without rdma-topology": {
			file: "s.conf", content: "actions: \"enqueue, topology-allocate\"\ntiers:\n- plugins:\n  - name: gang\n",
			args: []string{"validate", "--scheduler-conf", "FILE"}, wantIn: []string{"s.conf", "tiers", `"rdma-topology" is missing`, `"topology-allocate"`},
		},
		"simulate: topology-allocate without rdma-topology": {
			file: "s.conf", content: "actions: \"enqueue, topology-allocate\"\ntiers:\n- plugins:\n  - name: gang\n",
			args: []string{"simulate", "--scheduler-conf", "FILE"}, wantIn: []string{"s.conf", "tiers", `"rdma-topology" is missing`, `"topology-allocate"`},
		},
		"missing file": {
			args: []string{"simulate", "--workload", "/nonexistent/w.yaml"}, wantIn: []string{"/nonexistent/w.yaml", "cannot read"},
		},
		"unknown node agent": {
			args: []string{"simulate", "--node-agent", "kubelet"}, wantIn: []string{"--node-agent", `"kubelet"`, "exact", "numa", "blind"},
		},
		"bad output format": {
			args: []string{"simulate", "-o", "yaml"}, wantIn: []string{"-o", "table, wide or json"},
		},
		"unknown flag": {
			args: []string{"simulate", "--clster", "x"}, wantIn: []string{"simulate", "clster"},
		},
		"unknown command": {
			args: []string{"simulat"}, wantIn: []string{"unknown command"},
		},
		"cluster and kubeconfig together": {
			args: []string{"simulate", "--cluster", "a", "--kubeconfig", "b"}, wantIn: []string{"exclusive"},
		},
		"unknown example": {
			args: []string{"example", "nodes"}, wantIn: []string{"cluster or workload"},
		},
		"topology without kubeconfig": {
			args: []string{"topology"}, wantIn: []string{"--kubeconfig is required"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			args := append([]string(nil), tc.args...)
			if tc.file != "" {
				path := writeFile(t, t.TempDir(), tc.file, tc.content)
				for i, a := range args {
					if a == "FILE" {
						args[i] = path
					}
				}
			}
			code, stdout, stderr := runCLI(t, args...)
			require.Equal(t, exitUsage, code, "stderr: %s", stderr)
			require.Empty(t, stdout)
			require.Equal(t, 1, strings.Count(stderr, "\n"), "exactly one line: %q", stderr)
			for _, want := range tc.wantIn {
				require.Contains(t, stderr, want)
			}
		})
	}
}

// jsonOutput is the part of the JSON report these tests read.
type jsonOutput struct {
	Pods []simjson.Pod `json:"pods"`
	Jobs []simjson.Job `json:"jobs"`
}

// TestSimulateNodeAgents: every bound RDMA pod shows the annotations the
// scheduler wrote, katalyst's numa_bind_result (the planned zones) among
// them, and its nics and numa are what the node agent chose:
// the annotated NICs (exact), the hinted zone (numa, the sample has room in
// every hinted zone), or the first zone with room whatever the hint
// (blind, which on the sample puts some pods in the other zone).
func TestSimulateNodeAgents(t *testing.T) {
	cases := []struct {
		agent string
		// check tests one bound single-zone RDMA pod; it reports whether
		// the pod sits in the hinted zone.
		check func(t *testing.T, p simjson.Pod) bool
		// wantAllHinted: every such pod sits in its hinted zone.
		wantAllHinted bool
	}{
		{agent: "exact", wantAllHinted: true, check: func(t *testing.T, p simjson.Pod) bool {
			require.Equal(t, p.Annotations["rdmatopo.io/nics"], strings.Join(p.NICs, ","), "pod %s", p.Name)
			require.Equal(t, p.Annotations["rdmatopo.io/numa"], p.Annotations[rdmatopology.AnnotationNUMABindResult], "pod %s", p.Name)
			return strconv.Itoa(p.NUMA) == p.Annotations[rdmatopology.AnnotationNUMABindResult]
		}},
		{agent: "numa", wantAllHinted: true, check: func(t *testing.T, p simjson.Pod) bool {
			return strconv.Itoa(p.NUMA) == p.Annotations[rdmatopology.AnnotationNUMABindResult]
		}},
		{agent: "blind", wantAllHinted: false, check: func(t *testing.T, p simjson.Pod) bool {
			return strconv.Itoa(p.NUMA) == p.Annotations[rdmatopology.AnnotationNUMABindResult]
		}},
	}
	for _, tc := range cases {
		t.Run(tc.agent, func(t *testing.T) {
			code, stdout, stderr := runCLI(t, "simulate", "-o", "json", "--node-agent", tc.agent)
			require.Equal(t, exitOK, code, stderr)
			var out jsonOutput
			require.NoError(t, json.Unmarshal([]byte(stdout), &out))
			checked, hinted := 0, 0
			for _, p := range out.Pods {
				if p.Node == "" || len(p.NICs) == 0 {
					require.Empty(t, p.Annotations, "pod %s got no NICs: no scheduler annotations", p.Name)
					continue
				}
				for _, k := range []string{"rdmatopo.io/nics", "rdmatopo.io/numa", "rdmatopo.io/s0", rdmatopology.AnnotationNUMABindResult} {
					require.Contains(t, p.Annotations, k, "pod %s", p.Name)
				}
				if p.NUMA < 0 {
					continue // spans zones
				}
				checked++
				if tc.check(t, p) {
					hinted++
				}
			}
			require.NotZero(t, checked)
			if tc.wantAllHinted {
				require.Equal(t, checked, hinted, "pods in their hinted zone")
			} else {
				require.Less(t, hinted, checked, "some pods outside their hinted zone")
			}
		})
	}
}

func TestSimulateExpandsControllerJobs(t *testing.T) {
	cases := map[string]struct {
		workload  string
		wantJob   string
		wantPods  []string
		wantMin   int32
		wantPlace bool
	}{
		"Volcano Job": {
			workload: "../../examples/volcanojob.yaml",
			wantJob:  "default/" + workload.VolcanoPodGroupName("mpi-resnet", string(workload.StableUID(workload.KindVolcanoJob, "default", "mpi-resnet"))),
			wantPods: []string{"mpi-resnet-master-0", "mpi-resnet-worker-0", "mpi-resnet-worker-1", "mpi-resnet-worker-2"},
			wantMin:  4, wantPlace: true,
		},
		"PyTorchJob": {
			workload: "../../examples/pytorchjob.yaml",
			wantJob:  "default/llama-ddp",
			wantPods: []string{"llama-ddp-master-0", "llama-ddp-worker-0", "llama-ddp-worker-1", "llama-ddp-worker-2"},
			wantMin:  4, wantPlace: true,
		},
		"TrainJob": {
			workload: "../../examples/trainjob.yaml",
			wantJob:  "default/llama-train",
			wantPods: []string{"llama-train-node-0-0", "llama-train-node-0-1", "llama-train-node-0-2", "llama-train-node-0-3"},
			wantMin:  4, wantPlace: true,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			code, stdout, stderr := runCLI(t, "simulate", "-o", "json", "--workload", tc.workload)
			require.Equal(t, exitOK, code, stderr)
			var out jsonOutput
			require.NoError(t, json.Unmarshal([]byte(stdout), &out))
			var names []string
			for _, p := range out.Pods {
				names = append(names, p.Name)
				require.Equal(t, tc.wantJob, p.Job)
			}
			require.Equal(t, tc.wantPods, names)
			require.Len(t, out.Jobs, 1)
			require.Equal(t, tc.wantJob, out.Jobs[0].Namespace+"/"+out.Jobs[0].Name)
			require.Equal(t, tc.wantMin, out.Jobs[0].MinMember)
			require.Equal(t, tc.wantPlace, out.Jobs[0].Placed)
			require.Equal(t, "s0", out.Jobs[0].Tier)
		})
	}
}

// TestSimulateTrainJobOfTheSample: the sample workload's TrainJob (the
// README's) is placed whole under one leaf, in hard mode read from its
// pods (its PodGroup has no annotations): every rank (completion index
// 0..3) under that leaf, so the ring over ranks crosses no leaf boundary.
func TestSimulateTrainJobOfTheSample(t *testing.T) {
	code, stdout, stderr := runCLI(t, "simulate", "-o", "json")
	require.Equal(t, exitOK, code, stderr)
	var out jsonOutput
	require.NoError(t, json.Unmarshal([]byte(stdout), &out))
	var job *simjson.Job
	for i := range out.Jobs {
		if out.Jobs[i].Name == "llm-pretrain" {
			job = &out.Jobs[i]
		}
	}
	require.NotNil(t, job, "the sample's TrainJob gang")
	require.True(t, job.Placed)
	require.Equal(t, "s0", job.Tier)
	require.Len(t, job.S0, 1)
	var pods []simjson.Pod
	for _, p := range out.Pods {
		if p.Job == "default/llm-pretrain" {
			pods = append(pods, p)
		}
	}
	require.Len(t, pods, 4)
	nodes := map[string]bool{}
	for i, p := range pods {
		require.Equal(t, fmt.Sprintf("llm-pretrain-node-0-%d", i), p.Name)
		require.Equal(t, job.S0, p.S0)
		nodes[p.Node] = true
	}
	require.Len(t, nodes, 4, "one NUMA zone per node")
}

// TestSimulateRanksAndSegments: every pod's rank, each job's ring leaf
// crossings and, with rdmatopo.io/segment-size, its blocks of ranks and
// their leaves.
func TestSimulateRanksAndSegments(t *testing.T) {
	var w strings.Builder
	w.WriteString("apiVersion: scheduling.volcano.sh/v1beta1\nkind: PodGroup\nmetadata: {name: seg, annotations: {rdmatopo.io/segment-size: \"2\", rdmatopo.io/segment-tier: s0}}\nspec: {minMember: 4}\n")
	for _, i := range []int{3, 0, 2, 1} { // listed out of rank order
		fmt.Fprintf(&w, "---\napiVersion: v1\nkind: Pod\nmetadata: {name: seg-%d, annotations: {scheduling.k8s.io/group-name: seg}}\n"+
			"spec: {schedulerName: volcano, containers: [{name: c, resources: {requests: {nvidia.com/gpu: \"4\", vke.volcengine.com/rdma: \"2\", cpu: \"4\"}, "+
			"limits: {nvidia.com/gpu: \"4\", vke.volcengine.com/rdma: \"2\"}}}]}\n", i)
	}
	file := writeFile(t, t.TempDir(), "w.yaml", w.String())
	code, stdout, stderr := runCLI(t, "simulate", "-o", "json", "--workload", file)
	require.Equal(t, exitOK, code, stderr)
	var out struct {
		Pods []simjson.Pod `json:"pods"`
		Jobs []simjson.Job `json:"jobs"`
	}
	require.NoError(t, json.Unmarshal([]byte(stdout), &out))
	require.Len(t, out.Jobs, 1)
	job := out.Jobs[0]
	require.True(t, job.Placed, job.Reason)
	leafOf := map[int]string{}
	for _, p := range out.Pods {
		require.Equal(t, "seg-"+fmt.Sprint(p.Rank), p.Name, "rank from the name's ordinal")
		require.Len(t, p.S0, 1)
		leafOf[p.Rank] = p.S0[0]
	}
	var ring []string
	for r := 0; r < 4; r++ {
		ring = append(ring, leafOf[r])
	}
	crossings := 0
	for r := range ring {
		if ring[r] != ring[(r+1)%len(ring)] {
			crossings++
		}
	}
	require.Equal(t, crossings, job.RingCrossings)
	require.Len(t, job.Segments, 2)
	for b, seg := range job.Segments {
		require.Equal(t, []int{2 * b, 2*b + 1}, seg.Ranks)
		require.Equal(t, []string{leafOf[2*b]}, seg.S0, "a segment under one S0")
	}
}

// TestSimulateTrainJobInputErrors: a TrainJob whose runtime is missing or
// cannot be gang scheduled by Volcano exits 2 with one line naming the field.
func TestSimulateTrainJobInputErrors(t *testing.T) {
	data, err := os.ReadFile("../../examples/trainjob.yaml")
	require.NoError(t, err)
	sample := string(data)
	cases := map[string]struct {
		workload string
		wantIn   []string
	}{
		"missing runtime": {
			workload: strings.Replace(sample, "    name: torch-distributed-volcano\n  trainer:", "    name: torch-distributed\n  trainer:", 1),
			wantIn:   []string{"TrainJob default/llama-train", "spec.runtimeRef.name", `no ClusterTrainingRuntime named "torch-distributed" in the workload`},
		},
		"runtime without a Volcano PodGroup policy": {
			workload: strings.Replace(sample, "  podGroupPolicy:\n    volcano: {}\n", "", 1),
			wantIn:   []string{"TrainJob default/llama-train", "spec.runtimeRef.name", "has no spec.podGroupPolicy.volcano"},
		},
		"runtime pods for another scheduler": {
			workload: strings.Replace(sample, "                schedulerName: volcano\n", "", 1),
			wantIn:   []string{"ClusterTrainingRuntime torch-distributed-volcano", "spec.template.spec.replicatedJobs[0].template.spec.template.spec.schedulerName"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			require.NotEqual(t, sample, tc.workload, "the case changes the sample")
			wl := writeFile(t, t.TempDir(), "w.yaml", tc.workload)
			code, stdout, stderr := runCLI(t, "simulate", "--workload", wl)
			require.Equal(t, exitUsage, code, "stderr: %s", stderr)
			require.Empty(t, stdout)
			require.Equal(t, 1, strings.Count(stderr, "\n"), "exactly one line: %q", stderr)
			for _, want := range tc.wantIn {
				require.Contains(t, stderr, want)
			}
		})
	}
}

// TestSimulateS1FromHyperNodes: S1s read from HyperNodes (tier 2 over
// tier-1 HyperNodes selecting nodes by label) give the same placement as
// the equivalent node label; without the HyperNodes every node shares the
// default S1 and is reported.
func TestSimulateS1FromHyperNodes(t *testing.T) {
	cluster, err := os.ReadFile("../../examples/cluster.yaml")
	require.NoError(t, err)
	hyper, err := os.ReadFile("../../examples/hypernodes.yaml")
	require.NoError(t, err)
	dir := t.TempDir()
	withHyper := writeFile(t, dir, "c.yaml", string(cluster)+"---\n"+string(hyper))
	run := func(args ...string) jsonOutput {
		t.Helper()
		code, stdout, stderr := runCLI(t, append([]string{"simulate", "-o", "json"}, args...)...)
		require.Equal(t, exitOK, code, stderr)
		var out jsonOutput
		require.NoError(t, json.Unmarshal([]byte(stdout), &out))
		return out
	}
	byLabel := run("--scheduler-conf", "../../examples/volcano-scheduler-minipods.conf")
	byHyper := run("--cluster", withHyper, "--scheduler-conf", "../../examples/volcano-scheduler-hypernodes.conf")
	if diff := cmp.Diff(byLabel, byHyper); diff != "" {
		t.Errorf("placement with S1 from HyperNodes differs from the label's (-label,+hypernode):\n%s", diff)
	}
	seen := map[string]bool{}
	for _, j := range byHyper.Jobs {
		for _, s1 := range j.S1 {
			seen[s1] = true
		}
	}
	require.Equal(t, map[string]bool{"minipod-a": true, "minipod-b": true}, seen, "the tier-2 HyperNodes name the S1s")

	code, _, stderr := runCLI(t, "simulate", "-o", "json", "--scheduler-conf", "../../examples/volcano-scheduler-hypernodes.conf")
	require.Equal(t, exitOK, code, stderr)
	require.Contains(t, stderr, "node gpu-a01: NoS1HyperNode: no HyperNode of tier 2 holds the node; it shares the default S1")
}

func TestSimulateMapIsWellFormedSVG(t *testing.T) {
	path := filepath.Join(t.TempDir(), "fabric.svg")
	code, _, stderr := runCLI(t, "simulate", "--map", path)
	require.Equal(t, exitOK, code, stderr)
	data, err := os.ReadFile(path)
	require.NoError(t, err)

	dec := xml.NewDecoder(bytes.NewReader(data))
	var root string
	rects, titles := 0, 0
	var texts []string
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		require.NoError(t, err, "the map must be well-formed XML")
		switch el := tok.(type) {
		case xml.StartElement:
			if root == "" {
				root = el.Name.Local
				require.Equal(t, "http://www.w3.org/2000/svg", el.Name.Space)
			}
			switch el.Name.Local {
			case "rect":
				rects++
			case "title":
				titles++
			}
		case xml.CharData:
			texts = append(texts, string(el))
		}
	}
	require.Equal(t, "svg", root)
	require.GreaterOrEqual(t, titles, 64, "one titled square per NIC of the sample cluster")
	require.Greater(t, rects, 64)
	all := strings.Join(texts, "\n")
	for _, want := range []string{"default/llm-pretrain", "default/vision-hard: waiting", "free NIC", "gpu-a01 NUMA 0"} {
		require.Contains(t, all, want)
	}
}

// fakeCluster serves the sample cluster through fake clientsets.
func fakeCluster(t *testing.T) (*kubefake.Clientset, *katalystfake.Clientset) {
	t.Helper()
	cluster, err := workload.LoadCluster("cluster.yaml", examples.Cluster)
	require.NoError(t, err)
	var kubeObjs, katObjs []runtime.Object
	for _, n := range cluster.Nodes {
		kubeObjs = append(kubeObjs, n)
	}
	for _, p := range cluster.Pods {
		kubeObjs = append(kubeObjs, p)
	}
	for _, c := range cluster.CNRs {
		katObjs = append(katObjs, c)
	}
	return kubefake.NewSimpleClientset(kubeObjs...), katalystfake.NewSimpleClientset(katObjs...)
}

// useFakeCluster makes --kubeconfig reach the fake clientsets.
func useFakeCluster(t *testing.T, kube *kubefake.Clientset, kat *katalystfake.Clientset) {
	t.Helper()
	saved := dial
	dial = func(string) (*liveClients, error) { return &liveClients{kube: kube, katalyst: kat}, nil }
	t.Cleanup(func() { dial = saved })
}

// requireReadOnly checks that only list calls reached the clientsets.
func requireReadOnly(t *testing.T, kube *kubefake.Clientset, kat *katalystfake.Clientset) {
	t.Helper()
	for _, a := range append(kube.Actions(), kat.Actions()...) {
		require.Equal(t, "list", a.GetVerb(), "read-only: %s %s", a.GetVerb(), a.GetResource().Resource)
	}
}

func TestSimulateLiveClusterReadOnly(t *testing.T) {
	kube, kat := fakeCluster(t)
	useFakeCluster(t, kube, kat)
	code, live, stderr := runCLI(t, "simulate", "-o", "json", "--kubeconfig", "fake", "--workload", "../../examples/workload.yaml")
	require.Equal(t, exitOK, code, stderr)
	_, fromFiles, _ := runCLI(t, "simulate", "-o", "json")
	require.Equal(t, fromFiles, live, "the live copy of the sample cluster gives the same placements")
	requireReadOnly(t, kube, kat)
}

func TestTopologyWithFakeClients(t *testing.T) {
	kube, kat := fakeCluster(t)
	live, err := fetchCluster(context.Background(), &liveClients{kube: kube, katalyst: kat}, topology.Config{})
	require.NoError(t, err)
	require.Len(t, live.Nodes, 16)
	require.Len(t, live.CNRs, 16)
	require.Len(t, live.Pods, 6)

	c, err := loadConf("../../examples/volcano-scheduler-minipods.conf")
	require.NoError(t, err)
	var out bytes.Buffer
	require.NoError(t, printTopology(&out, c.Topology, live))
	golden(t, "topology.txt", out.String())

	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	require.True(t, strings.HasPrefix(lines[0], "S1"))
	require.Contains(t, out.String(), "16 nodes, 8 S0 leaves, 0 topology-unknown nodes; 52 of 64 RDMA NICs free.")
	require.Contains(t, out.String(), "research/legacy-eval (2)")

	useFakeCluster(t, kube, kat)
	code, stdout, stderr := runCLI(t, "topology", "--kubeconfig", "fake", "--scheduler-conf", "../../examples/volcano-scheduler-minipods.conf")
	require.Equal(t, exitOK, code, stderr)
	require.Equal(t, out.String(), stdout)
	requireReadOnly(t, kube, kat)
}

func TestExampleAndValidate(t *testing.T) {
	code, stdout, _ := runCLI(t, "example", "cluster")
	require.Equal(t, exitOK, code)
	require.Equal(t, string(examples.Cluster), stdout)
	code, stdout, _ = runCLI(t, "example", "workload")
	require.Equal(t, exitOK, code)
	require.Equal(t, string(examples.Workload), stdout)
	for _, f := range []string{"../../examples/cluster.yaml", "../../examples/workload.yaml", "../../examples/volcanojob.yaml", "../../examples/pytorchjob.yaml", "../../examples/trainjob.yaml", "../../examples/hypernodes.yaml", "../../examples/volcano-scheduler-hypernodes.conf"} {
		data, err := os.ReadFile(f)
		require.NoError(t, err)
		require.True(t, strings.HasPrefix(string(data), "# "), "%s starts with a one-line comment saying what it shows", f)
	}

	code, stdout, stderr := runCLI(t, "validate", "--cluster", "../../examples/cluster.yaml", "--workload", "../../examples/workload.yaml")
	require.Equal(t, exitOK, code, stderr)
	require.Contains(t, stdout, "ok: actions enqueue, topology-allocate, topology-preempt, topology-reclaim, backfill")
	require.Contains(t, stdout, "16 nodes, 16 CustomNodeResources, 6 bound pods")
	require.Contains(t, stdout, "6 PodGroups, 22 pods")

	code, stdout, _ = runCLI(t, "--help")
	require.Equal(t, exitOK, code)
	require.Contains(t, stdout, "simulate")
	code, stdout, _ = runCLI(t, "simulate", "--help")
	require.Equal(t, exitOK, code)
	require.Contains(t, stdout, "--scheduler-conf")
}

func TestBenchAndSoakSayWhereTheyMoved(t *testing.T) {
	for _, cmd := range []string{"bench", "soak"} {
		t.Run(cmd, func(t *testing.T) {
			code, stdout, stderr := runCLI(t, cmd, "--nodes", "10")
			require.Equal(t, exitUsage, code)
			require.Empty(t, stdout)
			require.Contains(t, stderr, "moved to the developer tool rdmatopo-dev")
			require.Contains(t, stderr, "make build-dev")
		})
	}
}
