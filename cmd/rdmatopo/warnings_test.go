package main

import (
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/require"
)

// badKCNRCluster is one shared node whose KCNR has one of each problem the
// CLI must report: a misspelt policy, a negative allocatable, a NIC name
// with a comma, a NIC under two NUMA zones, an empty and a multiple RDMATOR
// value, and a repeated NUMA id.
const badKCNRCluster = `apiVersion: v1
kind: Node
metadata: {name: n1, labels: {vke.node.rdma.mode: shared}}
status: {allocatable: {cpu: "64", nvidia.com/gpu: "8", vke.volcengine.com/rdma: "4", pods: "110"}}
---
apiVersion: node.katalyst.kubewharf.io/v1alpha1
kind: CustomNodeResource
metadata: {name: n1}
spec:
  nodeResourceProperties:
  - {propertyName: RDMATOR/0000:1a:00.0, propertyValues: [leafA]}
  - {propertyName: RDMATOR/0000:3f:00.0, propertyValues: [""]}
  - {propertyName: RDMATOR/0000:d1:00.0, propertyValues: [leafB, leafC]}
status:
  topologyPolicy: SingleNUMANodeContainerLvl
  topologyZone:
  - type: Numa
    name: "0"
    resources: {allocatable: {nvidia.com/gpu: "-4", cpu: "32"}}
    children:
    - {type: NIC, name: "0000:1a:00.0"}
    - {type: NIC, name: "0000:3f:00.0"}
    - {type: NIC, name: "mlx5_0,mlx5_1"}
  - type: Numa
    name: "1"
    resources: {allocatable: {nvidia.com/gpu: "4", cpu: "32"}}
    children:
    - {type: NIC, name: "0000:d1:00.0"}
    - {type: NIC, name: "0000:1a:00.0"}
  - {type: Numa, name: "1"}
`

// badKCNRProblems are the problems of badKCNRCluster as the CLI prints them
// after "LEVEL: FILE: ": node, NIC, code and the field at fault.
var badKCNRProblems = []string{
	`node n1 NIC mlx5_0,mlx5_1: BadNICName: status.topologyZone[0].children[2].name="mlx5_0,mlx5_1": the name holds a comma`,
	`node n1: BadQuantity: status.topologyZone[0].resources.allocatable[nvidia.com/gpu]=-4 is negative`,
	`node n1 NIC 0000:1a:00.0: DuplicateNIC: status.topologyZone[1].children[1] lists the NIC again`,
	`node n1: DuplicateNUMA: status.topologyZone[2].name="1" repeats NUMA 1`,
	`node n1 NIC 0000:3f:00.0: EmptyProperty: spec.nodeResourceProperties[1] (RDMATOR/0000:3f:00.0) has an empty propertyValues[0]: it must name the leaf switch (S0) the NIC is cabled to; the NIC is a leaf of its own until it does`,
	`node n1 NIC 0000:d1:00.0: MultiplePropertyValues: spec.nodeResourceProperties[2] (RDMATOR/0000:d1:00.0) has 2 propertyValues`,
	`node n1: UnknownPolicy: status.topologyPolicy="SingleNUMANodeContainerLvl" is not a katalyst topology policy`,
}

// smallWorkload is one 1-pod gang that fits n1.
const smallWorkload = `apiVersion: scheduling.volcano.sh/v1beta1
kind: PodGroup
metadata: {name: pg, namespace: default}
spec: {minMember: 1}
---
apiVersion: v1
kind: Pod
metadata: {name: p, namespace: default, annotations: {scheduling.k8s.io/group-name: pg}}
spec: {schedulerName: volcano, containers: [{name: c, resources: {requests: {cpu: "1"}, limits: {cpu: "1"}}}]}
`

// checkProblemLines requires lines to be, in order, "level: file: " and
// each of want (as a prefix of the rest of the line).
func checkProblemLines(t *testing.T, lines []string, level, file string, want []string) {
	t.Helper()
	require.Len(t, lines, len(want), "lines: %q", lines)
	for i, line := range lines {
		prefix := level + ": " + file + ": "
		require.True(t, strings.HasPrefix(line, prefix), "line %q does not start with %q", line, prefix)
		require.True(t, strings.HasPrefix(strings.TrimPrefix(line, prefix), want[i]), "line %q, want %q after the prefix", line, want[i])
	}
}

// nonEmptyLines splits s into lines, dropping the empty last one.
func nonEmptyLines(s string) []string {
	return strings.Split(strings.TrimSuffix(s, "\n"), "\n")
}

func TestTopologyWarnings(t *testing.T) {
	dir := t.TempDir()
	bad := writeFile(t, dir, "bad.yaml", badKCNRCluster)
	work := writeFile(t, dir, "w.yaml", smallWorkload)
	cases := map[string]struct {
		args     []string
		wantCode int
		// level of the problem lines on stderr ("" for none).
		level string
		// wantLast is the line after the problems ("" for none).
		wantLast string
		// check inspects stdout.
		check func(t *testing.T, stdout string)
	}{
		"validate warns and succeeds": {
			args: []string{"validate", "--cluster", bad}, wantCode: exitOK, level: "warning",
			check: func(t *testing.T, stdout string) {
				require.Contains(t, stdout, bad+": ok: 1 nodes, 1 CustomNodeResources, 0 bound pods; 7 topology warnings\n")
				require.NotContains(t, stdout, "warning:")
			},
		},
		"validate --strict fails": {
			args: []string{"validate", "--strict", "--cluster", bad}, wantCode: exitUsage, level: "error",
			wantLast: "error: " + bad + ": 7 topology problems (--strict)",
			check: func(t *testing.T, stdout string) {
				require.NotContains(t, stdout, bad+": ok")
			},
		},
		"validate --strict on a clean cluster": {
			args: []string{"validate", "--strict", "--cluster", "../../examples/cluster.yaml"}, wantCode: exitOK,
			check: func(t *testing.T, stdout string) {
				require.Contains(t, stdout, "16 nodes, 16 CustomNodeResources, 6 bound pods\n")
			},
		},
		"simulate json warns on stderr only": {
			args: []string{"simulate", "-o", "json", "--cluster", bad, "--workload", work}, wantCode: exitOK, level: "warning",
			check: func(t *testing.T, stdout string) {
				dec := json.NewDecoder(strings.NewReader(stdout))
				var top map[string]any
				require.NoError(t, dec.Decode(&top))
				var extra any
				require.True(t, errors.Is(dec.Decode(&extra), io.EOF), "exactly one JSON object on stdout")
			},
		},
		"simulate table warns on stderr only": {
			args: []string{"simulate", "--cluster", bad, "--workload", work}, wantCode: exitOK, level: "warning",
			check: func(t *testing.T, stdout string) {
				require.Contains(t, stdout, "default/pg")
				require.NotContains(t, stdout, "warning")
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			code, stdout, stderr := runCLI(t, tc.args...)
			require.Equal(t, tc.wantCode, code, "stderr: %s", stderr)
			tc.check(t, stdout)
			if tc.level == "" {
				require.Empty(t, stderr)
				return
			}
			lines := nonEmptyLines(stderr)
			if tc.wantLast != "" {
				if diff := cmp.Diff(tc.wantLast, lines[len(lines)-1]); diff != "" {
					t.Errorf("last stderr line (-want +got):\n%s", diff)
				}
				lines = lines[:len(lines)-1]
			}
			checkProblemLines(t, lines, tc.level, bad, badKCNRProblems)
		})
	}
}
