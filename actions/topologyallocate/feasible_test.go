package topologyallocate

import (
	"fmt"
	"slices"
	"testing"

	"volcano.sh/volcano/cmd/scheduler/app/options"
	"volcano.sh/volcano/pkg/scheduler/api"
)

// nodeList builds n NodeInfos named n0000, n0001, ...
func nodeList(n int) []*api.NodeInfo {
	out := make([]*api.NodeInfo, n)
	for i := range out {
		out[i] = &api.NodeInfo{Name: fmt.Sprintf("n%04d", i)}
	}
	return out
}

// refuseEvery returns a predicate refusing (unresolvably) every k-th node
// by index; k == 0 refuses none.
func refuseEvery(k int) api.PredicateFn {
	return func(t *api.TaskInfo, n *api.NodeInfo) error {
		var i int
		fmt.Sscanf(n.Name, "n%d", &i)
		if k > 0 && i%k == 0 {
			return api.NewFitErrWithStatus(t, n, &api.Status{Code: api.UnschedulableAndUnresolvable, Reason: "refused"})
		}
		return nil
	}
}

// withNodesToFind sets Volcano's nodes-to-find options for one test.
func withNodesToFind(t *testing.T, percent int32) {
	t.Helper()
	if options.ServerOpts == nil {
		options.ServerOpts = options.NewServerOption()
	}
	saved := *options.ServerOpts
	t.Cleanup(func() { *options.ServerOpts = saved })
	options.ServerOpts.PercentageOfNodesToFind = percent
	options.ServerOpts.MinNodesToFind = 100
	options.ServerOpts.MinPercentageOfNodesToFind = 5
}

func TestFeasibleNodes(t *testing.T) {
	for _, tc := range []struct {
		name        string
		nodes       int
		percent     int32 // Volcano's percentage-nodes-to-find; 0 = adaptive
		refuse      int   // refuse every k-th node
		wantFound   int
		wantRefused int // at least this many refusals recorded
	}{
		{name: "no nodes", nodes: 0, wantFound: 0},
		{name: "small cluster: every node", nodes: 60, refuse: 3, wantFound: 40, wantRefused: 20},
		{name: "100 percent: every node", nodes: 1000, percent: 100, wantFound: 1000},
		{name: "adaptive share of 1000 nodes", nodes: 1000, wantFound: 420},
		{name: "adaptive share of 10000 nodes", nodes: 10000, wantFound: 500},
		{name: "refusals do not count", nodes: 1000, refuse: 2, wantFound: 420, wantRefused: 420},
		{name: "fixed percentage", nodes: 2000, percent: 10, wantFound: 200},
		{name: "fewer feasible than wanted", nodes: 1000, refuse: 1, wantFound: 0, wantRefused: 1000},
	} {
		t.Run(tc.name, func(t *testing.T) {
			withNodesToFind(t, tc.percent)
			nodes := nodeList(tc.nodes)
			task := &api.TaskInfo{UID: "uid-a", Namespace: "default", Name: "a"}
			found, fe := feasibleNodes(task, nodes, refuseEvery(tc.refuse))
			if len(found) != tc.wantFound {
				t.Fatalf("found %d nodes, want %d", len(found), tc.wantFound)
			}
			if got := len(fe.GetUnschedulableAndUnresolvableNodes()); got < tc.wantRefused {
				t.Errorf("%d refusals recorded, want at least %d", got, tc.wantRefused)
			}
			seen := map[string]bool{}
			for _, n := range found {
				if seen[n.Name] {
					t.Fatalf("node %s returned twice", n.Name)
				}
				seen[n.Name] = true
				if err := refuseEvery(tc.refuse)(task, n); err != nil {
					t.Fatalf("refused node %s returned", n.Name)
				}
			}
			again, _ := feasibleNodes(task, nodes, refuseEvery(tc.refuse))
			if !slices.Equal(found, again) {
				t.Error("a second walk for the same task found other nodes")
			}
		})
	}
}

func TestFeasibleNodesSpreadsTasks(t *testing.T) {
	withNodesToFind(t, 0)
	nodes := nodeList(2000)
	firsts := map[string]bool{}
	for i := 0; i < 20; i++ {
		task := &api.TaskInfo{UID: api.TaskID(fmt.Sprint("uid-", i))}
		found, _ := feasibleNodes(task, nodes, refuseEvery(0))
		if len(found) == 0 {
			t.Fatal("no node found")
		}
		firsts[found[0].Name] = true
	}
	if len(firsts) < 15 {
		t.Errorf("20 tasks started their walk on %d distinct nodes, want at least 15", len(firsts))
	}
}
