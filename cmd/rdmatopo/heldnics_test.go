package main

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/rdmatopo/rdmatopo/internal/sim/nodeagent"
	"github.com/rdmatopo/rdmatopo/internal/sim/simjson"
	"github.com/rdmatopo/rdmatopo/internal/testing/builders"
)

// TestSimulateKeepsAnnotationHeldNICs: a running pod holds the first NIC
// (by name) of NUMA zone 0 by its rdmatopo.io/* annotations alone (its
// node's KCNR does not list it yet); a new one-NIC pod is planned on the
// zone's other NIC. Under every node agent the new pod gets a NIC of its
// own (the numa and blind agents take NICs by name, so without the held
// NIC marked they would hand it out again) and the running pod keeps its
// NIC in the output.
func TestSimulateKeepsAnnotationHeldNICs(t *testing.T) {
	held := builders.NUMANICs[0][0]
	running := "apiVersion: v1\nkind: Pod\nmetadata:\n  name: old-0\n  annotations: {scheduling.k8s.io/group-name: old" +
		", rdmatopo.io/nics: \"" + held + "\", rdmatopo.io/numa: \"0\", katalyst.kubewharf.io/numa_bind_result: \"0\"}\n" +
		"spec:\n  nodeName: n1\n" +
		"  containers: [{name: c, resources: {limits: {cpu: 2, nvidia.com/gpu: 1, vke.volcengine.com/rdma: 1}}}]\nstatus: {phase: Running}\n"
	pending := func(name string) string {
		return "apiVersion: v1\nkind: Pod\nmetadata:\n  name: " + name + "\n  annotations: {scheduling.k8s.io/group-name: new}\n" +
			"spec:\n  containers: [{name: c, resources: {limits: {cpu: 2, nvidia.com/gpu: 1, vke.volcengine.com/rdma: 1}}}]\n"
	}
	docs := []string{podGroupYAML("old", 1, "", ""), running, podGroupYAML("new", 1, "", ""), pending("new-0")}
	for _, agent := range nodeagent.Modes {
		t.Run(string(agent), func(t *testing.T) {
			dir := t.TempDir()
			cluster := writeFile(t, dir, "c.yaml", testCluster(t, 1))
			wl := writeFile(t, dir, "w.yaml", strings.Join(docs, "---\n"))
			code, stdout, stderr := runCLI(t, "simulate", "-o", "json", "--node-agent", string(agent), "--cluster", cluster, "--workload", wl)
			require.Equal(t, exitOK, code, stderr)
			var out fullJSON
			require.NoError(t, json.Unmarshal([]byte(stdout), &out))
			owner := map[string]string{}
			pods := map[string]simjson.Pod{}
			for _, p := range out.Pods {
				pods[p.Name] = p
				for _, nic := range p.NICs {
					key := p.Node + "/" + nic
					require.Empty(t, owner[key], "NIC %s handed to %s and %s", key, owner[key], p.Name)
					owner[key] = p.Name
				}
			}
			require.Equal(t, []string{held}, pods["old-0"].NICs, "the running pod keeps its NIC")
			require.Equal(t, held, pods["old-0"].Annotations["rdmatopo.io/nics"], "the running pod's annotation is not rewritten")
			require.Equal(t, "n1", pods["new-0"].Node, fmt.Sprint(out.Jobs))
			require.Len(t, pods["new-0"].NICs, 1)
		})
	}
}
