package oracle

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// randomGangLimits draws node constraints for a gang on a fabric: in half
// the cases pod 0 has a node group of its own, each group is kept off a
// quarter of the nodes, and a quarter of the nodes admit 1 or 2 pods of the
// gang.
func randomGangLimits(rng *rand.Rand, nodes, pods int) bfLimits {
	lim := bfLimits{groups: make([]int, pods), maxPods: make([]int, nodes)}
	if rng.IntN(2) == 0 {
		lim.groups[0] = 1
	}
	off := map[[2]int]bool{}
	for n := 0; n < nodes; n++ {
		for g := 0; g < 2; g++ {
			off[[2]int{n, g}] = rng.IntN(4) == 0
		}
		lim.maxPods[n] = -1
		if rng.IntN(4) == 0 {
			lim.maxPods[n] = 1 + rng.IntN(2)
		}
	}
	lim.allowed = func(node, group int) bool { return !off[[2]int{node, group}] }
	return lim
}

// oracleGang turns a brute-force instance into MinLeavesGang's input (the
// oracle's nodes are named "n<index>", see oracleNodes).
func oracleGang(pods []OracleShape, lim bfLimits) OracleGang {
	g := OracleGang{Pods: pods}
	index := func(name string) int {
		var i int
		fmt.Sscanf(name, "n%d", &i)
		return i
	}
	if lim.groups != nil {
		g.Groups = lim.groups
	}
	if lim.allowed != nil {
		g.Allowed = func(node string, group int) bool { return lim.allowed(index(node), group) }
	}
	if lim.maxPods != nil {
		g.MaxPods = func(node string) int { return lim.maxPods[index(node)] }
	}
	return g
}

// TestMinLeavesGangMatchesBruteForce compares the mixed-gang oracle with
// the brute force on small random fabrics of every cabling: gangs of one to
// three shapes, with and without node groups and pod limits, on NICs of
// one unit and on NICs of 1 to 3 free units.
func TestMinLeavesGangMatchesBruteForce(t *testing.T) {
	for _, units := range []bool{false, true} {
		t.Run(fmt.Sprintf("units=%v", units), func(t *testing.T) { gangMatchesBruteForce(t, units) })
	}
}

func gangMatchesBruteForce(t *testing.T, units bool) {
	cablings := []string{cableProvider, cableRail, cableUnknown, cableMixed}
	feasible, multi, mixed := 0, 0, 0
	const cases = 2000
	for seed := uint64(1); seed <= cases; seed++ {
		rng := rand.New(rand.NewPCG(seed, 7))
		cabling := cablings[rng.IntN(len(cablings))]
		fabric := randomFabric(rng, cabling)
		if units {
			fabric = withUnits(rand.New(rand.NewPCG(seed, 8)), fabric)
		}
		kinds := 1 + rng.IntN(3)
		var pods []OracleShape
		for i := 0; i < 1+rng.IntN(4); i++ {
			pods = append(pods, testShapes[(int(seed)+i%kinds)%len(testShapes)])
		}
		var lim bfLimits
		if seed%2 == 0 {
			lim = randomGangLimits(rng, len(fabric), len(pods))
		}
		want := bruteMinLeavesWith(fabric, pods, lim)
		got := oracleResult(t, MinLeavesGang(oracleNodes(fabric), oracleGang(pods, lim), 0))
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("seed %d (%s): %+v on %+v: oracle differs from brute force (-want +got):\n%s", seed, cabling, pods, fabric, diff)
		}
		if want.Feasible {
			feasible++
			if want.Leaves > 1 {
				multi++
			}
			for _, p := range pods[1:] {
				if p != pods[0] {
					mixed++
					break
				}
			}
		}
	}
	t.Logf("%d cases: %d feasible, %d on more than one leaf, %d of mixed shapes", cases, feasible, multi, mixed)
	if feasible < cases/4 || multi < cases/10 || mixed < cases/10 {
		t.Errorf("only %d feasible, %d multi-leaf and %d mixed cases of %d: the sweep tests too little", feasible, multi, mixed, cases)
	}
}

// TestMinLeavesGangAgreesWithMinLeaves: for one shape and no constraints
// both oracles give the same answer.
func TestMinLeavesGangAgreesWithMinLeaves(t *testing.T) {
	cablings := []string{cableProvider, cableRail, cableUnknown, cableMixed}
	for seed := uint64(1); seed <= 500; seed++ {
		rng := rand.New(rand.NewPCG(seed, 9))
		fabric := oracleNodes(randomFabric(rng, cablings[rng.IntN(len(cablings))]))
		sh := testShapes[rng.IntN(len(testShapes))]
		pods := make([]OracleShape, 1+rng.IntN(5))
		for i := range pods {
			pods[i] = sh
		}
		one, gang := MinLeaves(fabric, pods, 0), MinLeavesGang(fabric, OracleGang{Pods: pods}, 0)
		if one.Status != gang.Status || one.Leaves != gang.Leaves {
			t.Errorf("seed %d: %d x %+v: MinLeaves %s/%d, MinLeavesGang %s/%d (%s)", seed, len(pods), sh, one.Status, one.Leaves, gang.Status, gang.Leaves, gang.Reason)
		}
	}
}

func TestMinLeavesGangCases(t *testing.T) {
	half, small := OracleShape{GPU: 4, NICs: 2}, OracleShape{GPU: 1, NICs: 1}
	zone := func(gpu int64, leaves ...string) OracleZone {
		return OracleZone{FreeGPU: gpu, FreeCPUMilli: 64000, FreeNICLeaves: leaves}
	}
	prov := func(name string) OracleNode {
		return OracleNode{Name: name, Zones: []OracleZone{zone(4, "a", "a"), zone(4, "b", "b")}}
	}
	tests := []struct {
		name string
		g    OracleGang
		want OracleResult
	}{
		{name: "a small master beside two whole-zone workers takes a second leaf",
			g:    OracleGang{Pods: []OracleShape{small, half, half}},
			want: OracleResult{Status: OracleExact, Leaves: 2, S1s: 1}},
		{name: "a master kept off the workers' nodes",
			g: OracleGang{Pods: []OracleShape{half, half}, Groups: []int{1, 0},
				Allowed: func(node string, group int) bool { return (node == "n1") == (group == 1) }},
			want: OracleResult{Status: OracleExact, Leaves: 1, S1s: 1}},
		{name: "one pod per node",
			g:    OracleGang{Pods: []OracleShape{half, half, half}, MaxPods: func(string) int { return 1 }},
			want: OracleResult{Status: OracleInfeasible}},
		{name: "pods without NICs are left out",
			g:    OracleGang{Pods: []OracleShape{{GPU: 8}, half}},
			want: OracleResult{Status: OracleExact, Leaves: 1, S1s: 1}},
		{name: "node groups must match the pods",
			g:    OracleGang{Pods: []OracleShape{half}, Groups: []int{0, 1}},
			want: OracleResult{Status: OracleUnknown, Reason: "2 node groups for 1 pods"}},
		{name: "too many classes",
			g:    OracleGang{Pods: []OracleShape{{NICs: 1}, {NICs: 1, GPU: 1}, {NICs: 1, GPU: 2}, {NICs: 1, GPU: 3}, {NICs: 1, GPU: 4}}},
			want: OracleResult{Status: OracleUnknown, Reason: "5 pod classes (shape and node group): more than the 4 the search enumerates"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := MinLeavesGang([]OracleNode{prov("n1"), prov("n2")}, tc.g, 0)
			got.Visited = 0
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("MinLeavesGang() differs (-want +got):\n%s", diff)
			}
		})
	}
}
