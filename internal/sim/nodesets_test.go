package sim

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"

	"github.com/rdmatopo/rdmatopo/internal/sim/nodeagent"
	"github.com/rdmatopo/rdmatopo/internal/workload"
)

// TestNodeSetsFollowChangesBetweenCycles: where the predicates admit a
// gang's pods is kept from one session to the next and walked again only
// on nodes that changed, so a node labelled, tainted or taking a host port
// between two cycles is judged on what it is now, while the others keep
// their answer.
func TestNodeSetsFollowChangesBetweenCycles(t *testing.T) {
	s := newSim(t, topoConf, fourNodes(), Options{NodeAgent: nodeagent.Default})
	cycle := func() {
		t.Helper()
		_, err := s.RunCycle()
		require.NoError(t, err)
	}
	node := func(name string) *corev1.Node {
		for _, n := range s.Nodes() {
			if n.Name == name {
				return n
			}
		}
		t.Fatalf("no node %s", name)
		return nil
	}
	submit := func(set *workload.Set, mutate func(*corev1.Pod)) {
		t.Helper()
		for _, p := range set.Pods {
			mutate(p)
		}
		require.NoError(t, s.Submit(set))
	}
	noop := func(*corev1.Pod) {}
	selectPool := func(p *corev1.Pod) { p.Spec.NodeSelector = map[string]string{"pool": "x"} }
	port := func(p *corev1.Pod) {
		p.Spec.Containers[0].Ports = []corev1.ContainerPort{{ContainerPort: 29500, HostPort: 29500, Protocol: corev1.ProtocolTCP}}
	}

	// No node is in pool x: the gang waits, its node set (empty) carried.
	submit(gang("sel", 1, 0), selectPool)
	cycle()
	cycle()
	require.Empty(t, boundNodes(s))
	// n3 joins the pool: only n3 changed, and the gang goes there.
	n3 := node("n3")
	n3.Labels["pool"] = "x"
	s.UpsertNode(n3)
	cycle()
	require.Equal(t, map[string]string{"default/sel-0": "n3"}, boundNodes(s))

	// A gang without constraints is admitted everywhere; then every node
	// but n2 is tainted and the next gang of the same pods (one set)
	// goes to n2 only.
	submit(gang("free", 1, 1), noop)
	cycle()
	require.Contains(t, boundNodes(s), "default/free-0")
	for _, name := range []string{"n1", "n3", "n4"} {
		n := node(name)
		n.Spec.Taints = []corev1.Taint{{Key: "maintenance", Effect: corev1.TaintEffectNoSchedule}}
		s.UpsertNode(n)
	}
	submit(gang("tainted", 2, 2), noop)
	cycle()
	cycle()
	got := boundNodes(s)
	require.Equal(t, "n2", got["default/tainted-0"], "bound: %v", got)
	require.Equal(t, "n2", got["default/tainted-1"], "bound: %v", got)

	// The gangs finish and the taints go; a pod holding host port 29500
	// lands on n1 in one cycle, and in the next a gang with that port
	// (one pod per node) finds n1 refused though it has room.
	for _, name := range []string{"sel", "free", "tainted"} {
		for _, p := range s.Pods() {
			if p.Workload && strings.HasPrefix(p.Pod.Name, name+"-") {
				require.NoError(t, s.DeletePod(p.Pod.Namespace, p.Pod.Name))
			}
		}
		require.NoError(t, s.DeletePodGroup("default", name))
	}
	for _, name := range []string{"n1", "n3", "n4"} {
		n := node(name)
		n.Spec.Taints = nil
		if name == "n1" {
			n.Labels["pool"] = "y"
		}
		s.UpsertNode(n)
	}
	submit(gang("port-a", 1, 3), func(p *corev1.Pod) {
		port(p)
		p.Spec.NodeSelector = map[string]string{"pool": "y"}
	})
	cycle()
	require.Equal(t, map[string]string{"default/port-a-0": "n1"}, boundNodes(s))
	submit(gang("port-b", 3, 4), port)
	cycle()
	cycle()
	got = boundNodes(s)
	seen := map[string]bool{}
	for _, name := range []string{"port-b-0", "port-b-1", "port-b-2"} {
		n, ok := got["default/"+name]
		require.True(t, ok, "%s not bound: %v", name, got)
		require.NotEqual(t, "n1", n, "%s shares host port 29500 with port-a on n1", name)
		require.False(t, seen[n], "two pods of port-b hold host port 29500 on %s", n)
		seen[n] = true
	}
}
