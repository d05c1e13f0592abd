package oracle

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// Cablings of the random test fabrics.
const (
	cableProvider = "provider" // every NIC of zone z of every node under leaf z
	cableRail     = "rail"     // NIC i of every node under rail leaf i
	cableUnknown  = "unknown"  // every NIC a leaf of its own
	cableMixed    = "mixed"    // each node provider, rail or unknown
)

// bfNIC is one free NIC of the brute force's fabric; units is how many
// pods it still serves (0: one).
type bfNIC struct {
	leaf  string
	units int
}

// capacity is how many pods the NIC serves.
func (c bfNIC) capacity() int { return max(c.units, 1) }

// withUnits gives every NIC of the fabric 1 to 3 free units.
func withUnits(rng *rand.Rand, nodes []bfNode) []bfNode {
	for _, nd := range nodes {
		for _, z := range nd.zones {
			for i := range z.nics {
				z.nics[i].units = 1 + rng.IntN(3)
			}
		}
	}
	return nodes
}

// bfZone and bfNode mirror OracleZone and OracleNode with NIC identities.
type bfZone struct {
	gpu, cpu int64
	nics     []bfNIC
}

type bfNode struct {
	// s1 is the node's S1: nodes alternate between two, and the leaves
	// of provider and rail cabling are per S1 (named after it).
	s1       string
	spanning bool
	zones    []bfZone
}

// randomFabric draws a small fabric: 1-4 nodes of 1-2 zones, 1-4 NICs per
// zone of which some are taken, partly used GPUs and CPU, some nodes on a
// spanning policy.
func randomFabric(rng *rand.Rand, cabling string) []bfNode {
	nodes := make([]bfNode, 1+rng.IntN(4))
	for ni := range nodes {
		cab := cabling
		if cab == cableMixed {
			cab = []string{cableProvider, cableRail, cableUnknown}[rng.IntN(3)]
		}
		nd := &nodes[ni]
		nd.s1 = fmt.Sprint("s1-", ni%2)
		nd.spanning = rng.IntN(5) < 2
		nicIndex := 0
		for zi := 0; zi < 1+rng.IntN(2); zi++ {
			z := bfZone{gpu: int64(rng.IntN(5)), cpu: int64(rng.IntN(5))}
			for k := 0; k < 1+rng.IntN(4); k++ {
				var leaf string
				switch cab {
				case cableProvider:
					leaf = fmt.Sprintf("%s/prov-%d", nd.s1, zi)
				case cableRail:
					leaf = fmt.Sprintf("%s/rail-%d", nd.s1, nicIndex)
				default:
					leaf = fmt.Sprintf("unknown-%d-%d", ni, nicIndex)
				}
				nicIndex++
				if rng.IntN(10) < 7 { // the rest are held by running pods
					z.nics = append(z.nics, bfNIC{leaf: leaf})
				}
			}
			nd.zones = append(nd.zones, z)
		}
	}
	return nodes
}

// oracleNodes converts the brute force's fabric for MinLeaves.
func oracleNodes(nodes []bfNode) []OracleNode {
	out := make([]OracleNode, len(nodes))
	for i, nd := range nodes {
		out[i] = OracleNode{Name: fmt.Sprint("n", i), S1: nd.s1, Spanning: nd.spanning}
		for _, z := range nd.zones {
			oz := OracleZone{FreeGPU: z.gpu, FreeCPUMilli: z.cpu}
			for _, c := range z.nics {
				oz.FreeNICLeaves = append(oz.FreeNICLeaves, c.leaf)
				if c.units > 1 && oz.FreeNICUnits == nil {
					oz.FreeNICUnits = make([]int64, len(oz.FreeNICLeaves)-1, len(z.nics))
					for j := range oz.FreeNICUnits {
						oz.FreeNICUnits[j] = 1
					}
				}
				if oz.FreeNICUnits != nil {
					oz.FreeNICUnits = append(oz.FreeNICUnits, int64(c.capacity()))
				}
			}
			out[i].Zones = append(out[i].Zones, oz)
		}
	}
	return out
}

// bfOption is one way to place one pod: per zone of a node, the GPUs and
// CPU taken and the NICs taken (indexes into the zone's NICs).
type bfOption struct {
	node int
	gpu  []int64
	cpu  []int64
	nics [][]int
}

// splits lists every way to take total units from zones with the given
// free amounts (each part at most the zone's free amount).
func splits(total int64, free []int64) [][]int64 {
	if len(free) == 0 {
		if total == 0 {
			return [][]int64{nil}
		}
		return nil
	}
	var out [][]int64
	for take := int64(0); take <= min(total, free[0]); take++ {
		for _, rest := range splits(total-take, free[1:]) {
			out = append(out, append([]int64{take}, rest...))
		}
	}
	return out
}

// nicChoices lists every way to take r NICs from zones with counts[z] free
// NICs: per zone, the chosen indexes.
func nicChoices(r int, counts []int) [][][]int {
	if len(counts) == 0 {
		if r == 0 {
			return [][][]int{nil}
		}
		return nil
	}
	var out [][][]int
	var subsets func(start, left int, cur []int)
	var here [][]int
	subsets = func(start, left int, cur []int) {
		if left == 0 {
			here = append(here, append([]int(nil), cur...))
			return
		}
		for i := start; i < counts[0]; i++ {
			subsets(i+1, left-1, append(cur, i))
		}
	}
	for take := 0; take <= min(r, counts[0]); take++ {
		here = nil
		subsets(0, take, nil)
		for _, s := range here {
			for _, rest := range nicChoices(r-take, counts[1:]) {
				out = append(out, append([][]int{s}, rest...))
			}
		}
	}
	return out
}

// options lists every placement of one pod of shape sh: on a single-NUMA
// node inside one zone, on a spanning node across its zones in any split.
func options(nodes []bfNode, sh OracleShape) []bfOption {
	var out []bfOption
	for ni, nd := range nodes {
		nz := len(nd.zones)
		var groups [][]int // the zone sets one pod may draw from
		if nd.spanning {
			all := make([]int, nz)
			for i := range all {
				all[i] = i
			}
			groups = [][]int{all}
		} else {
			for z := 0; z < nz; z++ {
				groups = append(groups, []int{z})
			}
		}
		for _, g := range groups {
			var gpuFree, cpuFree []int64
			var nicCounts []int
			for _, z := range g {
				gpuFree = append(gpuFree, nd.zones[z].gpu)
				cpuFree = append(cpuFree, nd.zones[z].cpu)
				nicCounts = append(nicCounts, len(nd.zones[z].nics))
			}
			for _, gs := range splits(sh.GPU, gpuFree) {
				for _, cs := range splits(sh.CPUMilli, cpuFree) {
					for _, ns := range nicChoices(int(sh.NICs), nicCounts) {
						o := bfOption{node: ni, gpu: make([]int64, nz), cpu: make([]int64, nz), nics: make([][]int, nz)}
						for i, z := range g {
							o.gpu[z], o.cpu[z], o.nics[z] = gs[i], cs[i], ns[i]
						}
						out = append(out, o)
					}
				}
			}
		}
	}
	return out
}

// bruteResult is what both the brute force and the oracle report.
type bruteResult struct {
	Feasible bool
	Leaves   int
	// S1s is the fewest S1s among the placements on Leaves leaves.
	S1s int
}

// bruteMinLeaves enumerates every assignment of the pods to zones, GPUs,
// CPU and NICs and returns the fewest distinct leaves any complete one
// uses. Pods of one shape are interchangeable, so their options are taken
// in non-decreasing order; mixed shapes are enumerated pod by pod.
func bruteMinLeaves(nodes []bfNode, pods []OracleShape) bruteResult {
	return bruteMinLeavesWith(nodes, pods, bfLimits{})
}

// bfLimits are node constraints for the brute force: pod i's node group
// groups[i] (nil: all 0), whether a group may use node n (nil: yes), and
// how many pods of the gang node n admits (nil or negative: no bound).
type bfLimits struct {
	groups  []int
	allowed func(node, group int) bool
	maxPods []int
}

func (l bfLimits) group(i int) int {
	if l.groups == nil {
		return 0
	}
	return l.groups[i]
}

// bruteMinLeavesWith is bruteMinLeaves under node constraints.
func bruteMinLeavesWith(nodes []bfNode, pods []OracleShape, lim bfLimits) bruteResult {
	podsOn := make([]int, len(nodes))
	type usage struct {
		gpu, cpu map[[2]int]int64
		nic      map[[3]int]int // pods on each NIC
	}
	u := usage{gpu: map[[2]int]int64{}, cpu: map[[2]int]int64{}, nic: map[[3]int]int{}}
	leafCount := map[string]int{}
	best, bestS1 := -1, 0
	s1Of := map[string]string{}
	for _, nd := range nodes {
		for _, z := range nd.zones {
			for _, c := range z.nics {
				s1Of[c.leaf] = nd.s1
			}
		}
	}
	s1Count := func() int {
		seen := map[string]bool{}
		for l := range leafCount {
			seen[s1Of[l]] = true
		}
		return len(seen)
	}
	opts := map[OracleShape][]bfOption{}
	for _, p := range pods {
		if _, ok := opts[p]; !ok {
			opts[p] = options(nodes, p)
		}
	}
	fits := func(o bfOption) bool {
		nd := nodes[o.node]
		for z := range nd.zones {
			k := [2]int{o.node, z}
			if u.gpu[k]+o.gpu[z] > nd.zones[z].gpu || u.cpu[k]+o.cpu[z] > nd.zones[z].cpu {
				return false
			}
			for _, i := range o.nics[z] {
				if u.nic[[3]int{o.node, z, i}] >= nd.zones[z].nics[i].capacity() {
					return false
				}
			}
		}
		return true
	}
	take := func(o bfOption, sign int) {
		nd := nodes[o.node]
		for z := range nd.zones {
			k := [2]int{o.node, z}
			u.gpu[k] += int64(sign) * o.gpu[z]
			u.cpu[k] += int64(sign) * o.cpu[z]
			for _, i := range o.nics[z] {
				u.nic[[3]int{o.node, z, i}] += sign
				leaf := nd.zones[z].nics[i].leaf
				leafCount[leaf] += sign
				if leafCount[leaf] == 0 {
					delete(leafCount, leaf)
				}
			}
		}
	}
	var place func(i, from int)
	place = func(i, from int) {
		// Leaves and S1s only grow: stop where neither can improve.
		if best >= 0 && (len(leafCount) > best || len(leafCount) == best && s1Count() >= bestS1) {
			return
		}
		if i == len(pods) {
			best, bestS1 = len(leafCount), s1Count()
			return
		}
		list := opts[pods[i]]
		start := 0
		if i > 0 && pods[i] == pods[i-1] && lim.group(i) == lim.group(i-1) {
			start = from
		}
		for oi := start; oi < len(list); oi++ {
			o := list[oi]
			if lim.allowed != nil && !lim.allowed(o.node, lim.group(i)) {
				continue
			}
			if lim.maxPods != nil && lim.maxPods[o.node] >= 0 && podsOn[o.node] >= lim.maxPods[o.node] {
				continue
			}
			if !fits(o) {
				continue
			}
			take(o, 1)
			podsOn[o.node]++
			place(i+1, oi)
			podsOn[o.node]--
			take(o, -1)
		}
	}
	place(0, 0)
	if best < 0 {
		return bruteResult{}
	}
	return bruteResult{Feasible: true, Leaves: best, S1s: bestS1}
}

// oracleResult reduces an exact or infeasible oracle answer for comparison.
func oracleResult(t *testing.T, res OracleResult) bruteResult {
	t.Helper()
	switch res.Status {
	case OracleExact:
		if res.S1Reason != "" {
			t.Fatalf("oracle left S1s undecided: %s", res.S1Reason)
		}
		return bruteResult{Feasible: true, Leaves: res.Leaves, S1s: res.S1s}
	case OracleInfeasible:
		return bruteResult{}
	}
	t.Fatalf("oracle answered %s (%s), want exact or infeasible", res.Status, res.Reason)
	return bruteResult{}
}

// testShapes are the pod shapes the brute-force comparison draws from.
var testShapes = []OracleShape{
	{GPU: 1, NICs: 1},
	{GPU: 2, NICs: 1},
	{GPU: 4, NICs: 2},
	{GPU: 2, CPUMilli: 1, NICs: 2},
	{NICs: 1},
	{GPU: 1, NICs: 3},
	{GPU: 4, CPUMilli: 2, NICs: 1},
	{GPU: 8, NICs: 4},
	{GPU: 3, NICs: 2},
}

// TestMinLeavesMatchesBruteForce compares the oracle with the brute force
// on small random fabrics of every cabling, with partial occupancy.
func TestMinLeavesMatchesBruteForce(t *testing.T) {
	tests := []struct {
		seed    uint64
		cabling string
		shape   OracleShape
		pods    int
	}{
		{1, cableProvider, OracleShape{GPU: 1, NICs: 1}, 3},
		{2, cableProvider, OracleShape{GPU: 4, NICs: 2}, 2},
		{3, cableProvider, OracleShape{GPU: 2, NICs: 2}, 3},
		{4, cableProvider, OracleShape{GPU: 8, NICs: 4}, 1},
		{5, cableRail, OracleShape{GPU: 1, NICs: 1}, 4},
		{6, cableRail, OracleShape{GPU: 4, NICs: 2}, 2},
		{7, cableRail, OracleShape{GPU: 1, NICs: 2}, 3},
		{8, cableRail, OracleShape{GPU: 2, CPUMilli: 1, NICs: 2}, 2},
		{9, cableUnknown, OracleShape{GPU: 1, NICs: 1}, 3},
		{10, cableUnknown, OracleShape{GPU: 2, NICs: 2}, 2},
		{11, cableUnknown, OracleShape{NICs: 1}, 4},
		{12, cableMixed, OracleShape{GPU: 1, NICs: 1}, 4},
		{13, cableMixed, OracleShape{GPU: 4, NICs: 2}, 2},
		{14, cableMixed, OracleShape{GPU: 1, NICs: 3}, 2},
		{15, cableMixed, OracleShape{GPU: 3, NICs: 2}, 2},
		{16, cableMixed, OracleShape{GPU: 4, CPUMilli: 2, NICs: 1}, 3},
	}
	// A sweep over more seeds, drawing cabling, shape and size from the seed.
	cablings := []string{cableProvider, cableRail, cableUnknown, cableMixed}
	for seed := uint64(100); seed < 2100; seed++ {
		rng := rand.New(rand.NewPCG(seed, 1))
		tests = append(tests, struct {
			seed    uint64
			cabling string
			shape   OracleShape
			pods    int
		}{seed, cablings[rng.IntN(len(cablings))], testShapes[rng.IntN(len(testShapes))], 1 + rng.IntN(4)})
	}
	feasible, multi, multiS1 := 0, 0, 0
	for _, tc := range tests {
		name := fmt.Sprintf("seed=%d/%s/%dx%+v", tc.seed, tc.cabling, tc.pods, tc.shape)
		rng := rand.New(rand.NewPCG(tc.seed, 2))
		fabric := randomFabric(rng, tc.cabling)
		pods := make([]OracleShape, tc.pods)
		for i := range pods {
			pods[i] = tc.shape
		}
		want := bruteMinLeaves(fabric, pods)
		got := oracleResult(t, MinLeaves(oracleNodes(fabric), pods, 0))
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("%s: fabric %+v: oracle differs from brute force (-want +got):\n%s", name, fabric, diff)
		}
		if want.Feasible {
			feasible++
			if want.Leaves > 1 {
				multi++
			}
			if want.S1s > 1 {
				multiS1++
			}
		}
	}
	// The sweep must exercise both answers and wide optima, not only
	// infeasible gangs.
	t.Logf("%d cases: %d feasible, %d of them on more than one leaf, %d on more than one S1", len(tests), feasible, multi, multiS1)
	if feasible < len(tests)/4 || multi < len(tests)/10 || multiS1 < len(tests)/50 {
		t.Errorf("only %d feasible and %d multi-leaf cases of %d: the fabrics are too small to test much", feasible, multi, len(tests))
	}
}

// TestMinLeavesUnitsMatchesBruteForce compares the oracle with the brute
// force on small random fabrics whose NICs have 1 to 3 free units (a pod
// takes one unit of each of its distinct NICs).
func TestMinLeavesUnitsMatchesBruteForce(t *testing.T) {
	cablings := []string{cableProvider, cableRail, cableUnknown, cableMixed}
	feasible, multi, shared := 0, 0, 0
	const cases = 1500
	for seed := uint64(5000); seed < 5000+cases; seed++ {
		rng := rand.New(rand.NewPCG(seed, 1))
		cabling, shape, n := cablings[rng.IntN(len(cablings))], testShapes[rng.IntN(len(testShapes))], 1+rng.IntN(5)
		fabric := withUnits(rng, randomFabric(rng, cabling))
		pods := make([]OracleShape, n)
		for i := range pods {
			pods[i] = shape
		}
		want := bruteMinLeaves(fabric, pods)
		got := oracleResult(t, MinLeaves(oracleNodes(fabric), pods, 0))
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("seed=%d/%s/%dx%+v: fabric %+v: oracle differs from brute force (-want +got):\n%s", seed, cabling, n, shape, fabric, diff)
		}
		if want.Feasible {
			feasible++
			if want.Leaves > 1 {
				multi++
			}
			// Would the gang fit with one unit per NIC?
			if !bruteMinLeaves(oneUnit(fabric), pods).Feasible {
				shared++
			}
		}
	}
	t.Logf("%d cases: %d feasible, %d on more than one leaf, %d only with NICs shared", cases, feasible, multi, shared)
	if feasible < cases/4 || multi < cases/10 || shared < cases/40 {
		t.Errorf("only %d feasible, %d multi-leaf and %d shared-NIC cases of %d: the sweep tests too little", feasible, multi, shared, cases)
	}
}

// oneUnit returns a copy of the fabric with every NIC of one unit.
func oneUnit(nodes []bfNode) []bfNode {
	out := make([]bfNode, len(nodes))
	for i, nd := range nodes {
		out[i] = nd
		out[i].zones = make([]bfZone, len(nd.zones))
		for j, z := range nd.zones {
			z.nics = append([]bfNIC(nil), z.nics...)
			for k := range z.nics {
				z.nics[k].units = 1
			}
			out[i].zones[j] = z
		}
	}
	return out
}

func TestMinLeavesCases(t *testing.T) {
	half := OracleShape{GPU: 4, NICs: 2}
	gang := func(n int, sh OracleShape) []OracleShape {
		out := make([]OracleShape, n)
		for i := range out {
			out[i] = sh
		}
		return out
	}
	zone := func(gpu int64, leaves ...string) OracleZone {
		return OracleZone{FreeGPU: gpu, FreeCPUMilli: 64000, FreeNICLeaves: leaves}
	}
	// railNode is a rail-cabled node: zone 0 NICs on rails 0-3, zone 1 on 4-7.
	railNode := func(name string, spanning bool) OracleNode {
		return OracleNode{Name: name, Spanning: spanning, Zones: []OracleZone{
			zone(4, "r0", "r1", "r2", "r3"), zone(4, "r4", "r5", "r6", "r7")}}
	}
	provNode := func(name string, spanning bool) OracleNode {
		return OracleNode{Name: name, Spanning: spanning, Zones: []OracleZone{zone(4, "a", "a"), zone(4, "b", "b")}}
	}
	tests := []struct {
		name  string
		nodes []OracleNode
		pods  []OracleShape
		limit int
		want  OracleResult
	}{
		{name: "no pods", want: OracleResult{Status: OracleExact}},
		{name: "no NICs requested", nodes: []OracleNode{provNode("n1", false)}, pods: gang(2, OracleShape{GPU: 4}),
			want: OracleResult{Status: OracleExact}},
		{name: "no NICs requested, no room", nodes: []OracleNode{provNode("n1", false)}, pods: gang(3, OracleShape{GPU: 4}),
			want: OracleResult{Status: OracleInfeasible}},
		{name: "provider: both zones of two nodes, one leaf", nodes: []OracleNode{provNode("n1", false), provNode("n2", false)},
			pods: gang(2, half), want: OracleResult{Status: OracleExact, Leaves: 1, S1s: 1}},
		{name: "provider: a whole-node pod needs both leaves of a spanning node",
			nodes: []OracleNode{provNode("n1", false), provNode("n2", true)}, pods: gang(1, OracleShape{GPU: 8, NICs: 4}),
			want: OracleResult{Status: OracleExact, Leaves: 2, S1s: 1}},
		{name: "provider: a whole-node pod on single-NUMA nodes does not fit",
			nodes: []OracleNode{provNode("n1", false)}, pods: gang(1, OracleShape{GPU: 8, NICs: 4}),
			want: OracleResult{Status: OracleInfeasible}},
		{name: "rail: three 2-NIC pods on two rails", nodes: []OracleNode{railNode("n1", false), railNode("n2", false), railNode("n3", false)},
			pods: gang(3, half), want: OracleResult{Status: OracleExact, Leaves: 2, S1s: 1}},
		{name: "rail: six 2-NIC pods on four rails (two per zone side)", nodes: []OracleNode{railNode("n1", false), railNode("n2", false), railNode("n3", false)},
			pods: gang(6, half), want: OracleResult{Status: OracleExact, Leaves: 4, S1s: 1}},
		{name: "units: a zone of two NICs of 4 units holds four 1-NIC pods on one leaf",
			nodes: []OracleNode{{Name: "n1", Zones: []OracleZone{{FreeGPU: 8, FreeCPUMilli: 64000, FreeNICLeaves: []string{"a", "a"}, FreeNICUnits: []int64{4, 4}}}},
				provNode("n2", false)},
			pods: gang(4, OracleShape{GPU: 1, NICs: 1}), want: OracleResult{Status: OracleExact, Leaves: 1, S1s: 1}},
		{name: "units: a 3-NIC pod needs three distinct NICs, not three units",
			nodes: []OracleNode{{Name: "n1", Zones: []OracleZone{{FreeGPU: 8, FreeCPUMilli: 64000, FreeNICLeaves: []string{"a", "a"}, FreeNICUnits: []int64{4, 4}}}}},
			pods:  gang(1, OracleShape{GPU: 1, NICs: 3}), want: OracleResult{Status: OracleInfeasible}},
		{name: "units: NICs of 3 and 1 free units hold one 2-NIC pod, so two pods take two leaves",
			nodes: []OracleNode{{Name: "n1", Zones: []OracleZone{{FreeGPU: 8, FreeCPUMilli: 64000, FreeNICLeaves: []string{"a", "a"}, FreeNICUnits: []int64{3, 1}}}},
				{Name: "n2", Zones: []OracleZone{zone(8, "b", "b")}}},
			pods: gang(2, OracleShape{GPU: 1, NICs: 2}), want: OracleResult{Status: OracleExact, Leaves: 2, S1s: 1}},
		{name: "mixed shapes are not searched", nodes: []OracleNode{provNode("n1", false)},
			pods: []OracleShape{half, {GPU: 1, NICs: 1}},
			want: OracleResult{Status: OracleUnknown, Reason: "pods of different shapes ({GPU:4 CPUMilli:0 NICs:2} and {GPU:1 CPUMilli:0 NICs:1}): the oracle is exact for one shape only"}},
		{name: "the search limit is reported", nodes: []OracleNode{railNode("n1", false), railNode("n2", false)},
			pods: gang(4, half), limit: 3,
			want: OracleResult{Status: OracleUnknown, Visited: 4, Reason: "search limit of 3 leaf sets reached in a component of 4 leaves"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := MinLeaves(tc.nodes, tc.pods, tc.limit)
			// Visited depends on the walk order; only its bound is checked.
			if diff := cmp.Diff(tc.want, got, cmpopts.IgnoreFields(OracleResult{}, "Visited")); diff != "" {
				t.Errorf("MinLeaves() differs (-want +got):\n%s", diff)
			}
			if tc.limit > 0 && got.Visited > tc.limit+1 {
				t.Errorf("MinLeaves() visited %d leaf sets, limit %d", got.Visited, tc.limit)
			}
		})
	}
}
