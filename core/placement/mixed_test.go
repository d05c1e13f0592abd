package placement

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/kubewharf/katalyst-api/pkg/apis/node/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/rdmatopo/rdmatopo/core/ledger"
	"github.com/rdmatopo/rdmatopo/internal/testing/builders"
)

// This file compares the planner with a brute force on small random
// clusters and gangs of mixed pod shapes: the planner must place every gang
// the brute force can place (soft mode) on the fewest leaves it finds, and
// a hard s0 gang whenever one leaf holds it.

// mxNIC, mxZone and mxNode describe a small cluster for both the brute
// force and the fabric the planner sees.
type mxNIC struct {
	leaf string
	free bool
}

type mxZone struct {
	gpu, used int64
	nics      []mxNIC
}

type mxNode struct {
	spanning bool
	s1       string
	zones    []mxZone
}

// randomMixedCluster draws 2-4 nodes of two zones of 4 GPUs and 1-2 NICs
// each; leaves per cabling: provider (zone z of node pair k under leaf
// "p<k>-<z>"), rail (NIC i of a zone under "rail-<i>") or a mix; some GPUs
// and NICs are taken; a fifth of nodes span zones; two S1s.
func randomMixedCluster(rng *rand.Rand) []mxNode {
	nodes := make([]mxNode, 2+rng.IntN(3))
	for i := range nodes {
		nd := &nodes[i]
		nd.spanning = rng.IntN(5) == 0
		nd.s1 = fmt.Sprintf("s1-%d", i/3)
		rail := rng.IntN(3) == 0
		for z := 0; z < 2; z++ {
			zone := mxZone{gpu: 4, used: int64(rng.IntN(4)) * int64(rng.IntN(2))}
			for k := 0; k < 1+rng.IntN(2); k++ {
				leaf := fmt.Sprintf("p%d-%d", i/2, z)
				if rail {
					leaf = fmt.Sprintf("rail-%d", k)
				}
				zone.nics = append(zone.nics, mxNIC{leaf: leaf, free: rng.IntN(5) > 0})
			}
			nd.zones = append(nd.zones, zone)
		}
	}
	return nodes
}

// fixture builds the cluster as Nodes and KCNRs.
func (c mxCluster) fixture() *fixture {
	f := &fixture{}
	for i, nd := range c {
		name := fmt.Sprintf("n%d", i)
		var gpu, nics int64
		for _, z := range nd.zones {
			gpu += z.gpu
			nics += int64(len(z.nics))
		}
		f.nodes = append(f.nodes, builders.MakeNode(name).Shared().GPU(gpu).RDMA(nics).CPU("128").S1(nd.s1).Obj())
		policy := v1alpha1.TopologyPolicySingleNUMANodeContainerLevel
		if nd.spanning {
			policy = v1alpha1.TopologyPolicyNone
		}
		w := builders.MakeCNR(name).Policy(policy)
		pci := 0
		for zi, z := range nd.zones {
			w.Zone(zi, z.gpu, 64000)
			for _, nic := range z.nics {
				w.NIC(railPCI(pci), zi, nic.leaf)
				if !nic.free {
					w.UseNIC(railPCI(pci), builders.Consumer("other", fmt.Sprintf("nic-%d", pci), fmt.Sprintf("uid-nic-%d-%d", i, pci)))
				}
				pci++
			}
			if z.used > 0 {
				c := builders.Consumer("other", fmt.Sprintf("gpu-%d", zi), fmt.Sprintf("uid-gpu-%d-%d", i, zi))
				w.Alloc(zi, c, corev1.ResourceList{builders.GPUResource: *resource.NewQuantity(z.used, resource.DecimalSI)})
			}
		}
		f.add(w)
	}
	return f
}

type mxCluster []mxNode

// mxLimits are the node constraints of an instance: which nodes pods of
// each group may use, and how many pods of the gang a node admits (as
// memory or a pods limit would); nil maps allow everything.
type mxLimits struct {
	allowed map[[2]int]bool // {group, node} -> allowed; missing means allowed
	maxPods map[int]int     // node -> pods of the gang it admits
}

func (l mxLimits) allows(group, node int) bool {
	ok, set := l.allowed[[2]int{group, node}]
	return !set || ok
}

// bruteLeaves returns the fewest distinct leaves the pods' NICs can use, or
// -1 when the pods do not fit: every pod tried on every zone (every node
// when spanning) with every subset of the free NICs there. Pod k is of
// group groups[k].
func (c mxCluster) bruteLeaves(pods []Shape, groups []int, lim mxLimits) int {
	type nicKey struct{ node, zone, nic int }
	gpuLeft := make([][]int64, len(c))
	for i, nd := range c {
		for _, z := range nd.zones {
			gpuLeft[i] = append(gpuLeft[i], z.gpu-z.used)
		}
	}
	taken := map[nicKey]bool{}
	leafUse := map[string]int{}
	podsOn := map[int]int{}
	best := -1
	var place func(k int)
	// tryNICs takes r free NICs from the zones of a node (one zone unless
	// spanning), from list position from on, then recurses to pod k+1.
	var tryNICs func(k, node int, zones []int, r int64, from int)
	tryNICs = func(k, node int, zones []int, r int64, from int) {
		if r == 0 {
			place(k + 1)
			return
		}
		var keys []nicKey
		for _, z := range zones {
			for ni, nic := range c[node].zones[z].nics {
				if nic.free {
					keys = append(keys, nicKey{node, z, ni})
				}
			}
		}
		for i := from; i < len(keys); i++ {
			key := keys[i]
			if taken[key] {
				continue
			}
			leaf := c[node].zones[key.zone].nics[key.nic].leaf
			taken[key] = true
			leafUse[leaf]++
			tryNICs(k, node, zones, r-1, i+1)
			if leafUse[leaf]--; leafUse[leaf] == 0 {
				delete(leafUse, leaf)
			}
			taken[key] = false
		}
	}
	place = func(k int) {
		if best >= 0 && len(leafUse) >= best {
			return
		}
		if k == len(pods) {
			best = len(leafUse)
			return
		}
		sh := pods[k]
		for ni, nd := range c {
			if !lim.allows(groups[k], ni) {
				continue
			}
			if m, set := lim.maxPods[ni]; set && podsOn[ni] >= m {
				continue
			}
			podsOn[ni]++
			var zoneSets [][]int
			if nd.spanning {
				zoneSets = [][]int{{0, 1}}
			} else {
				zoneSets = [][]int{{0}, {1}}
			}
			for _, zones := range zoneSets {
				var free int64
				for _, z := range zones {
					free += gpuLeft[ni][z]
				}
				if free < sh.GPU {
					continue
				}
				// GPUs pool over a spanning node's zones: take them
				// from the first zone first (which zone gives them does
				// not change which NICs are free).
				need := sh.GPU
				took := make([]int64, len(zones))
				for i, z := range zones {
					took[i] = min(need, gpuLeft[ni][z])
					gpuLeft[ni][z] -= took[i]
					need -= took[i]
				}
				tryNICs(k, ni, zones, sh.NICs, 0)
				for i, z := range zones {
					gpuLeft[ni][z] += took[i]
				}
			}
			podsOn[ni]--
		}
	}
	place(0)
	return best
}

// mixedShapes are the pod shapes the comparison draws gangs from.
var mixedShapes = []Shape{
	{GPU: 2, NICs: 2},
	{GPU: 2, NICs: 1},
	{GPU: 4, NICs: 2},
	{GPU: 1, NICs: 1},
	{GPU: 4, NICs: 1},
	{NICs: 1},
}

// randomMixedGang draws 2-5 pods of one shape (a quarter of gangs), two or
// three.
func randomMixedGang(rng *rand.Rand) []Shape {
	var kinds []Shape
	want := []int{1, 2, 2, 3}[rng.IntN(4)]
	for len(kinds) < want {
		sh := mixedShapes[rng.IntN(len(mixedShapes))]
		dup := false
		for _, k := range kinds {
			dup = dup || k == sh
		}
		if !dup {
			kinds = append(kinds, sh)
		}
	}
	pods := append([]Shape(nil), kinds...)
	for len(pods) < 2+rng.IntN(4) {
		pods = append(pods, kinds[rng.IntN(len(kinds))])
	}
	return pods
}

// randomLimits gives pod 0 (the master) a group of its own in half the
// instances, and draws node sets per group and per-node pod limits.
func randomLimits(rng *rand.Rand, nodes, pods int) ([]int, mxLimits) {
	groups := make([]int, pods)
	if rng.IntN(2) == 0 {
		groups[0] = 1
	}
	lim := mxLimits{allowed: map[[2]int]bool{}, maxPods: map[int]int{}}
	for n := 0; n < nodes; n++ {
		for g := 0; g < 2; g++ {
			if rng.IntN(4) == 0 {
				lim.allowed[[2]int{g, n}] = false
			}
		}
		if rng.IntN(4) == 0 {
			lim.maxPods[n] = 1 + rng.IntN(2)
		}
	}
	return groups, lim
}

// mixedGang builds the gang, its node sets and pod limits as the actions
// hand them to the planner.
func mixedGang(shapes []Shape, groups []int, lim mxLimits, mode Mode, tier Tier) Gang {
	g := Gang{Job: "ns/mixed", Mode: mode, HighestTier: tier, Need: len(shapes)}
	for i, sh := range shapes {
		g.Pods = append(g.Pods, Pod{UID: fmt.Sprintf("p%d", i), Name: fmt.Sprintf("ns/p%d", i), Shape: sh, Group: groups[i]})
	}
	index := func(node string) int {
		var n int
		fmt.Sscanf(node, "n%d", &n)
		return n
	}
	g.Allowed = func(node string, group int) bool { return lim.allows(group, index(node)) }
	g.Admit = func(node string, _ Pod, on []Pod) bool {
		m, set := lim.maxPods[index(node)]
		return !set || len(on) < m
	}
	return g
}

func TestPlanMixedShapesMatchBruteForce(t *testing.T) {
	rng := rand.New(rand.NewPCG(23, 1))
	const instances = 1500
	var feasible, wider, refused, hardRefused int
	for i := 0; i < instances; i++ {
		c := mxCluster(randomMixedCluster(rng))
		shapes := randomMixedGang(rng)
		var lim mxLimits
		gs := make([]int, len(shapes))
		if i%2 == 1 {
			gs, lim = randomLimits(rng, len(c), len(shapes))
		}
		want := c.bruteLeaves(shapes, gs, lim)
		if want < 0 {
			continue
		}
		feasible++
		fx := c.fixture()
		s := NewState(fx.fabric(), ledger.New())
		g := mixedGang(shapes, gs, lim, ModeSoft, TierCluster)
		plan, fail := s.Plan(g)
		switch {
		case plan == nil:
			refused++
			t.Errorf("instance %d: %v on %+v refused (%s); brute force places it on %d leaves", i, shapes, c, fail.Message, want)
			continue
		case planLeaves(s, plan) > want:
			wider++
			t.Errorf("instance %d: %v on %+v placed on %d leaves; brute force: %d", i, shapes, c, planLeaves(s, plan), want)
		}
		checkPlan(t, s, g, plan)
		if want == 1 {
			if plan, fail := s.Plan(mixedGang(shapes, gs, lim, ModeHard, TierS0)); plan == nil {
				hardRefused++
				t.Errorf("instance %d: hard s0 %v on %+v refused (%s); one leaf holds it", i, shapes, c, fail.Message)
			}
		}
	}
	t.Logf("%d feasible of %d: wider %d, refused %d, hard s0 refused %d", feasible, instances, wider, refused, hardRefused)
}
