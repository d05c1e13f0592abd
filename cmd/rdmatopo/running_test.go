package main

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"

	"github.com/rdmatopo/rdmatopo/internal/sim/simjson"
	"github.com/rdmatopo/rdmatopo/internal/testing/builders"
)

// testCluster renders the first n nodes of builders.TwoLeavesFourNodes
// (NUMA-0 NICs under leafA, NUMA-1 NICs under leafB, one miniPod) as a
// cluster file.
func testCluster(t *testing.T, n int) string {
	t.Helper()
	nodes, cnrs := builders.TwoLeavesFourNodes()
	var docs []string
	add := func(obj runtime.Object, apiVersion, kind string) {
		data, err := json.Marshal(obj)
		require.NoError(t, err)
		var m map[string]any
		require.NoError(t, json.Unmarshal(data, &m))
		m["apiVersion"], m["kind"] = apiVersion, kind
		out, err := yaml.Marshal(m)
		require.NoError(t, err)
		docs = append(docs, string(out))
	}
	for i := 0; i < n; i++ {
		nodes[i].Status.Allocatable["pods"] = nodes[i].Status.Allocatable["cpu"]
		add(nodes[i], "v1", "Node")
		add(cnrs[i], "node.katalyst.kubewharf.io/v1alpha1", "CustomNodeResource")
	}
	return strings.Join(docs, "---\n")
}

// gangPodYAML is a pending pod of PodGroup group asking one NUMA zone (4
// GPUs, 2 NICs), of priority class class (none when empty).
func gangPodYAML(name, group, class string) string {
	spec := ""
	if class != "" {
		spec = "  priorityClassName: " + class + "\n"
	}
	return "apiVersion: v1\nkind: Pod\nmetadata:\n  name: " + name + "\n  annotations: {scheduling.k8s.io/group-name: " + group + "}\n" +
		"spec:\n  schedulerName: volcano\n" + spec + "  containers: [{name: c, resources: {limits: {cpu: 8, nvidia.com/gpu: 4, vke.volcengine.com/rdma: 2}}}]\n"
}

// runningPodYAML is a running pod of group on node, holding NUMA zone
// numa's two NICs (annotated as the scheduler binds them).
func runningPodYAML(name, group, class, node string, numa int) string {
	nics := builders.NUMANICs[numa][0] + "," + builders.NUMANICs[numa][1]
	return "apiVersion: v1\nkind: Pod\nmetadata:\n  name: " + name + "\n  annotations: {scheduling.k8s.io/group-name: " + group +
		", rdmatopo.io/nics: \"" + nics + "\", rdmatopo.io/numa: \"" + fmt.Sprint(numa) + "\"}\n" +
		"spec:\n  nodeName: " + node + "\n  priorityClassName: " + class + "\n" +
		"  containers: [{name: c, resources: {limits: {cpu: 8, nvidia.com/gpu: 4, vke.volcengine.com/rdma: 2}}}]\nstatus: {phase: Running}\n"
}

// podGroupYAML is a PodGroup with the given annotations (YAML flow map
// entries) and priority class.
func podGroupYAML(name string, minMember int, class, annotations string) string {
	out := "apiVersion: scheduling.volcano.sh/v1beta1\nkind: PodGroup\nmetadata:\n  name: " + name + "\n  annotations: {" + annotations + "}\n" +
		"spec:\n  minMember: " + fmt.Sprint(minMember) + "\n"
	if class != "" {
		out += "  priorityClassName: " + class + "\n"
	}
	return out
}

// priorityClassYAML is a PriorityClass.
func priorityClassYAML(name string, value int) string {
	return fmt.Sprintf("apiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata: {name: %s}\nvalue: %d\n", name, value)
}

// fullJSON is the JSON report with the keys these tests read.
type fullJSON struct {
	Pods      []simjson.Pod      `json:"pods"`
	Jobs      []simjson.Job      `json:"jobs"`
	Evictions []simjson.Eviction `json:"evictions"`
}

// TestSimulateMaxWait: on two nodes no leaf holds a 3-pod hard s0 gang;
// with max-wait 30s it is placed wider after 30 to 40 simulated seconds,
// without it stays pending.
func TestSimulateMaxWait(t *testing.T) {
	cases := map[string]struct {
		annotations string
		period      string
		wantPlaced  bool
		wantTier    string
		// wantWaited bounds waitedSeconds.
		wantWaited [2]float64
	}{
		"max-wait 30s": {
			annotations: "rdmatopo.io/mode: hard, rdmatopo.io/highest-tier: s0, rdmatopo.io/max-wait: 30s",
			wantPlaced:  true, wantTier: "s1", wantWaited: [2]float64{30, 40},
		},
		"max-wait 30s, 7s per cycle": {
			annotations: "rdmatopo.io/mode: hard, rdmatopo.io/highest-tier: s0, rdmatopo.io/max-wait: 30s", period: "7s",
			wantPlaced: true, wantTier: "s1", wantWaited: [2]float64{30, 40},
		},
		"no max-wait": {
			annotations: "rdmatopo.io/mode: hard, rdmatopo.io/highest-tier: s0",
			wantWaited:  [2]float64{0, 1},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			cluster := writeFile(t, dir, "c.yaml", testCluster(t, 2))
			w := podGroupYAML("hard", 3, "", tc.annotations)
			for i := 0; i < 3; i++ {
				w += "---\n" + gangPodYAML(fmt.Sprintf("hard-%d", i), "hard", "")
			}
			args := []string{"simulate", "-o", "json", "--cluster", cluster, "--workload", writeFile(t, dir, "w.yaml", w)}
			if tc.period != "" {
				args = append(args, "--period", tc.period)
			}
			code, stdout, stderr := runCLI(t, args...)
			require.Equal(t, exitOK, code, stderr)
			require.Empty(t, stderr)
			var out fullJSON
			require.NoError(t, json.Unmarshal([]byte(stdout), &out))
			require.Len(t, out.Jobs, 1)
			job := out.Jobs[0]
			require.Equal(t, tc.wantPlaced, job.Placed, job.Reason)
			require.Equal(t, tc.wantTier, job.Tier)
			require.GreaterOrEqual(t, job.WaitedSeconds, tc.wantWaited[0])
			require.LessOrEqual(t, job.WaitedSeconds, tc.wantWaited[1])
			require.Equal(t, []simjson.Eviction{}, out.Evictions)
		})
	}
}

// TestSimulatePreemptsRunningJobs: running low-priority jobs of the
// workload fill both leaves of four nodes; a high-priority hard s0 gang
// evicts the cheapest set (three pods of the job whose minMember is 1,
// rather than the whole 4-pod gang on the other leaf), the evicted pods
// are gone and the gang is placed under one S0.
func TestSimulatePreemptsRunningJobs(t *testing.T) {
	docs := []string{priorityClassYAML("low", 10), priorityClassYAML("high", 1000),
		podGroupYAML("low-a", 4, "low", ""), podGroupYAML("low-b", 1, "low", "")}
	for i := 0; i < 4; i++ {
		node := fmt.Sprintf("n%d", i+1)
		docs = append(docs, runningPodYAML(fmt.Sprintf("low-a-%d", i), "low-a", "low", node, 0),
			runningPodYAML(fmt.Sprintf("low-b-%d", i), "low-b", "low", node, 1))
	}
	docs = append(docs, podGroupYAML("high", 3, "high", "rdmatopo.io/mode: hard, rdmatopo.io/highest-tier: s0"))
	for i := 0; i < 3; i++ {
		docs = append(docs, gangPodYAML(fmt.Sprintf("high-%d", i), "high", "high"))
	}
	dir := t.TempDir()
	cluster := writeFile(t, dir, "c.yaml", testCluster(t, 4))
	wl := writeFile(t, dir, "w.yaml", strings.Join(docs, "---\n"))

	victim := func(name string) simjson.Eviction {
		return simjson.Eviction{Namespace: "default", Name: name, Job: "default/low-b", Preemptor: "default/high"}
	}
	cases := map[string]struct {
		output string
		check  func(t *testing.T, stdout string)
	}{
		"json": {output: "json", check: func(t *testing.T, stdout string) {
			var out fullJSON
			require.NoError(t, json.Unmarshal([]byte(stdout), &out))
			want := []simjson.Eviction{victim("low-b-1"), victim("low-b-2"), victim("low-b-3")}
			if diff := cmp.Diff(want, out.Evictions); diff != "" {
				t.Errorf("evictions (-want +got):\n%s", diff)
			}
			evicted := map[string]bool{"low-b-1": true, "low-b-2": true, "low-b-3": true}
			for _, p := range out.Pods {
				require.Equal(t, evicted[p.Name], p.Evicted, p.Name)
				if p.Evicted {
					require.Empty(t, p.Node, p.Name)
					require.Empty(t, p.NICs, p.Name)
				} else {
					require.NotEmpty(t, p.Node, p.Name)
				}
			}
			jobs := map[string]simjson.Job{}
			for _, j := range out.Jobs {
				jobs[j.Name] = j
			}
			require.True(t, jobs["high"].Placed, jobs["high"].Reason)
			require.Equal(t, "s0", jobs["high"].Tier)
			require.True(t, jobs["low-a"].Placed, "the 4-pod gang keeps running")
			require.Equal(t, 4, jobs["low-a"].BoundPods)
			require.True(t, jobs["low-b"].Placed, "minMember 1: one pod left runs")
			require.Equal(t, 1, jobs["low-b"].BoundPods)
		}},
		"table": {output: "table", check: func(t *testing.T, stdout string) {
			require.Contains(t, stdout, "3 pods evicted: default/low-b-1 (for default/high), default/low-b-2 (for default/high), default/low-b-3 (for default/high).\n")
		}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			code, stdout, stderr := runCLI(t, "simulate", "-o", tc.output, "--cluster", cluster, "--workload", wl)
			require.Equal(t, exitOK, code, stderr)
			require.Empty(t, stderr)
			tc.check(t, stdout)
		})
	}
}

// TestSimulateRunningPodErrors: running workload pods are checked against
// the cluster as the cluster file's bound pods are (exit 2, one line).
func TestSimulateRunningPodErrors(t *testing.T) {
	pg := podGroupYAML("pg", 1, "", "")
	pc := priorityClassYAML("low", 10)
	cases := map[string]struct {
		workload string
		args     []string
		wantIn   []string
	}{
		"node not in the cluster": {
			workload: pc + "---\n" + pg + "---\n" + runningPodYAML("p", "pg", "low", "n9", 0),
			wantIn:   []string{"w.yaml", "document 3", "Pod default/p", "spec.nodeName", `node "n9" is not defined in the cluster`},
		},
		"node full": {
			workload: pc + "---\n" + pg + "---\n" + runningPodYAML("p", "pg", "low", "n1", 0) + "---\n" +
				runningPodYAML("q", "pg", "low", "n1", 1) + "---\n" + runningPodYAML("r", "pg", "low", "n1", 1),
			wantIn: []string{"w.yaml", "document 5", "Pod default/r", "spec.nodeName", "cannot hold this pod"},
		},
		"unreadable annotations": {
			workload: pc + "---\n" + pg + "---\n" + strings.Replace(runningPodYAML("p", "pg", "low", "n1", 0), `rdmatopo.io/numa: "0"`, `rdmatopo.io/numa: "zero"`, 1),
			wantIn:   []string{"w.yaml", "Pod default/p", `metadata.annotations["rdmatopo.io/numa"]`, `"zero"`},
		},
		"period not positive": {
			workload: pg, args: []string{"--period", "0s"},
			wantIn: []string{"--period must be positive"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			cluster := writeFile(t, dir, "c.yaml", testCluster(t, 1))
			wl := writeFile(t, dir, "w.yaml", tc.workload)
			args := append([]string{"simulate", "--cluster", cluster, "--workload", wl}, tc.args...)
			code, stdout, stderr := runCLI(t, args...)
			require.Equal(t, exitUsage, code, "stderr: %s", stderr)
			require.Empty(t, stdout)
			require.Equal(t, 1, strings.Count(stderr, "\n"), "exactly one line: %q", stderr)
			for _, want := range tc.wantIn {
				require.Contains(t, stderr, want)
			}
			require.True(t, strings.Contains(stderr, filepath.Base(wl)) || strings.Contains(stderr, "--period"))
		})
	}
}

// TestSimulateWaitCap: a deadline beyond --max-cycles ends the run with a
// warning, not an error.
func TestSimulateWaitCap(t *testing.T) {
	dir := t.TempDir()
	cluster := writeFile(t, dir, "c.yaml", testCluster(t, 2))
	w := podGroupYAML("hard", 3, "", "rdmatopo.io/mode: hard, rdmatopo.io/highest-tier: s0, rdmatopo.io/max-wait: 10m")
	for i := 0; i < 3; i++ {
		w += "---\n" + gangPodYAML(fmt.Sprintf("hard-%d", i), "hard", "")
	}
	code, stdout, stderr := runCLI(t, "simulate", "-o", "json", "--cluster", cluster, "--workload", writeFile(t, dir, "w.yaml", w), "--max-cycles", "20")
	require.Equal(t, exitOK, code, stderr)
	require.Equal(t, "warning: stopped after 20 cycles (--max-cycles) with a max-wait deadline 9m41s ahead; raise --max-cycles or --period to see it pass\n", stderr)
	var out fullJSON
	require.NoError(t, json.Unmarshal([]byte(stdout), &out))
	require.False(t, out.Jobs[0].Placed)
	require.Equal(t, 19.0, out.Jobs[0].WaitedSeconds)
}
