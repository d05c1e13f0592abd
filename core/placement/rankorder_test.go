package placement

import (
	"fmt"
	"math/rand"
	"sort"
	"strings"
	"testing"

	"github.com/rdmatopo/rdmatopo/core/ledger"
)

// ranked sets each pod's rank to its index in g.Pods.
func ranked(g Gang) Gang {
	for i := range g.Pods {
		g.Pods[i].Rank = i
	}
	return g
}

// ringOf returns the leaves of each placed pod in rank order, read from the
// plan's NICs through the fabric (independently of the planner's places).
func ringOf(t *testing.T, s *State, g Gang, p *Plan) []string {
	t.Helper()
	rank := map[string]int{}
	for _, pod := range g.Pods {
		rank[pod.UID] = pod.Rank
	}
	type placed struct {
		rank   int
		leaves string
	}
	var out []placed
	for _, a := range p.Assignments {
		var ids []string
		for _, nic := range a.NICs() {
			if id, ok := s.Fabric().NICLeaf(a.Node, nic); ok && !contains(ids, string(id)) {
				ids = append(ids, string(id))
			}
		}
		sort.Strings(ids)
		out = append(out, placed{rank[a.PodUID], strings.Join(ids, "+")})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].rank < out[j].rank })
	leaves := make([]string, len(out))
	for i, o := range out {
		leaves[i] = o.leaves
	}
	return leaves
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// crossings counts the leaf changes along the ring, by hand.
func crossings(ring []string) int {
	n := 0
	for i := 0; len(ring) > 1 && i < len(ring); i++ {
		if ring[i] != ring[(i+1)%len(ring)] {
			n++
		}
	}
	return n
}

// distinct counts the distinct leaves of a ring.
func distinct(ring []string) int {
	seen := map[string]bool{}
	for _, l := range ring {
		seen[l] = true
	}
	return len(seen)
}

// minCrossings is the fewest leaf changes a ring over k leaves can have.
func minCrossings(k int) int {
	if k <= 1 {
		return 0
	}
	return k
}

func TestPlanRankContiguous(t *testing.T) {
	cases := map[string]struct {
		f      func() *fixture
		g      Gang
		leaves int
	}{
		// Leaves A and B hold 6 zones each, C 2: 14 pods need 3 leaves, and
		// the fill alternates A and B node by node.
		"14 pods on 3 leaves": {
			f: func() *fixture {
				f := &fixture{}
				f.std(6, "n", "s1-0", "A", "B")
				f.add(f.node("c1", "s1-0", "C", "D"))
				f.add(usedZone(f.node("c2", "s1-0", "C", "D"), 1))
				for i := 3; i <= 6; i++ {
					f.add(usedZone(usedZone(f.node(fmt.Sprintf("c%d", i), "s1-0", "C", "D"), 0), 1))
				}
				return f
			},
			g: ranked(gang(14, worker)), leaves: 3,
		},
		// Leaves A and B have 3 free zones each, C and D 2: a master of its
		// own shape and 9 workers need all four.
		"1 master and 9 workers on 4 leaves": {
			f: func() *fixture {
				f := &fixture{}
				f.std(3, "a", "s1-0", "A", "B")
				f.std(2, "c", "s1-0", "C", "D")
				return f
			},
			g: func() Gang {
				g := gang(10, worker)
				g.Pods[0].Shape = master
				return ranked(g)
			}(),
			leaves: 4,
		},
		"pods listed out of rank order": {
			f: func() *fixture { f := &fixture{}; return f.std(4, "n", "s1-0", "A", "B") },
			g: func() Gang {
				g := gang(8, worker)
				for i := range g.Pods {
					g.Pods[i].Rank = (i * 3) % 8
				}
				return g
			}(),
			leaves: 2,
		},
		"one leaf: no crossing": {
			f: func() *fixture { f := &fixture{}; return f.std(4, "n", "s1-0", "A", "B") },
			g: ranked(gang(3, worker)), leaves: 1,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			s := NewState(tc.f().fabric(), ledger.New())
			plan, fail := s.Plan(tc.g)
			if plan == nil {
				t.Fatalf("Plan() failed: %v", fail)
			}
			checkPlan(t, s, tc.g, plan)
			ring := ringOf(t, s, tc.g, plan)
			if got := distinct(ring); got != tc.leaves {
				t.Fatalf("plan uses %d leaves (%v), want %d", got, ring, tc.leaves)
			}
			if got, want := crossings(ring), minCrossings(tc.leaves); got != want {
				t.Errorf("ring crosses %d leaf boundaries, want %d: %v", got, want, ring)
			}
			if got, want := RingCrossings(ring), crossings(ring); got != want {
				t.Errorf("RingCrossings = %d, want %d", got, want)
			}
		})
	}
}

// TestPlanRankContiguousProperty: on random provider fabrics with random
// busy zones, every plan of a one-shape gang crosses exactly as many leaf
// boundaries as it has leaves (none on one), and stays a valid plan.
func TestPlanRankContiguousProperty(t *testing.T) {
	rng := rand.New(rand.NewSource(25))
	placed := 0
	for iter := 0; iter < 200; iter++ {
		f := &fixture{}
		pairs := 2 + rng.Intn(4)
		for p := 0; p < pairs; p++ {
			s1 := fmt.Sprintf("s1-%d", p%2)
			for i := 0; i < 2+rng.Intn(6); i++ {
				w := f.node(fmt.Sprintf("n%d-%d", p, i), s1, fmt.Sprintf("L%da", p), fmt.Sprintf("L%db", p))
				for numa := 0; numa < 2; numa++ {
					if rng.Float64() < 0.45 {
						usedZone(w, numa)
					}
				}
				f.add(w)
			}
		}
		sh := worker
		if rng.Intn(3) == 0 {
			sh = Shape{GPU: 2, NICs: 1, CPUMilli: 4000}
		}
		g := ranked(gang(2+rng.Intn(24), sh))
		if rng.Intn(2) == 0 {
			g = hard(g, TierS1)
		}
		s := NewState(f.fabric(), ledger.New())
		plan, _ := s.Plan(g)
		if plan == nil {
			continue
		}
		placed++
		checkPlan(t, s, g, plan)
		ring := ringOf(t, s, g, plan)
		if got, want := crossings(ring), minCrossings(distinct(ring)); got != want {
			t.Fatalf("iteration %d: %d pods of %s cross %d leaf boundaries over %d leaves, want %d: %v",
				iter, len(g.Pods), sh, got, distinct(ring), want, ring)
		}
		if distinct(ring) != len(plan.S0s) {
			t.Fatalf("iteration %d: ring over %d leaves, plan lists %d", iter, distinct(ring), len(plan.S0s))
		}
	}
	if placed < 100 {
		t.Fatalf("only %d of 200 random gangs placed: the property is barely exercised", placed)
	}
}
