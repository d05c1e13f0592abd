package rdmatopology

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"volcano.sh/volcano/pkg/scheduler/api"

	"github.com/rdmatopo/rdmatopo/core/ledger"
	"github.com/rdmatopo/rdmatopo/core/topology"
	"github.com/rdmatopo/rdmatopo/internal/testing/builders"
)

// listerOf is a Node lister holding nodes.
func listerOf(t *testing.T, nodes ...*corev1.Node) corelisters.NodeLister {
	t.Helper()
	idx := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	for _, n := range nodes {
		if err := idx.Add(n); err != nil {
			t.Fatal(err)
		}
	}
	return corelisters.NewNodeLister(idx)
}

// TestForgetDeletedNodes: a node that leaves the session stays in the
// fabric while its Node object exists (NotReady), and leaves it, with its
// series of the labelled gauges, once the Node is deleted.
func TestForgetDeletedNodes(t *testing.T) {
	kept := builders.MakeNode("n1").Shared().GPU(8).RDMA(2).CPU("64").S1("s1-a").Obj()
	gone := builders.MakeNode("x1").Shared().GPU(8).RDMA(2).CPU("64").S1("s1-x").Obj()
	cases := map[string]struct {
		// listed are the Node objects the API server still has.
		listed    []*corev1.Node
		wantNodes []string
		wantS1s   string
	}{
		"not in the session but its Node exists (NotReady): kept": {
			listed:    []*corev1.Node{kept, gone},
			wantNodes: []string{"n1", "x1"},
			wantS1s: `rdmatopo_free_nics{s1="s1-a"} 2
rdmatopo_free_nics{s1="s1-x"} 2
`,
		},
		"Node deleted: dropped, its S1 series gone": {
			listed:    []*corev1.Node{kept},
			wantNodes: []string{"n1"},
			wantS1s: `rdmatopo_free_nics{s1="s1-a"} 2
`,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			rt := NewRuntime(topology.Config{S1NodeLabel: builders.S1Label})
			rt.Fabric.UpsertCNR(eventKCNR("n1").Obj())
			first := map[string]*api.NodeInfo{"n1": {Name: "n1", Node: kept}, "x1": {Name: "x1", Node: gone}}
			rt.nodes = map[string]*corev1.Node{}
			for name, ni := range first {
				rt.nodes[name] = ni.Node
				rt.Fabric.UpsertNode(ni.Node)
			}
			observeFabric(rt.Fabric.Snapshot(), ledger.New())

			rt.forgetDeleted(map[string]*api.NodeInfo{"n1": first["n1"]}, listerOf(t, tc.listed...))
			f := rt.Fabric.Snapshot()
			if diff := cmp.Diff(tc.wantNodes, f.NodeNames()); diff != "" {
				t.Errorf("fabric nodes (-want,+got):\n%s", diff)
			}
			observeFabric(f, ledger.New())
			const head = "# HELP rdmatopo_free_nics RDMA NICs free after the last session (free in the CustomNodeResources and not reserved), by S1 (\"\" where S1 membership is unknown).\n" +
				"# TYPE rdmatopo_free_nics gauge\n"
			if err := testutil.CollectAndCompare(freeNICs, strings.NewReader(head+tc.wantS1s), "rdmatopo_free_nics"); err != nil {
				t.Error(err)
			}
		})
	}
}
