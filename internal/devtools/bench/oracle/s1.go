package oracle

import "fmt"

// This file adds the second rung of the order of preference: among the
// placements on the fewest leaves, the fewest S1s (miniPods). A leaf
// belongs to the S1 of the nodes with free NICs under it
// (OracleNode.S1); components (leaves joined by a unit or a node) then
// belong to one S1 each, and since components are independent, what k
// leaves of one S1 hold is the best split of k over that S1's components.
// A last programme over S1s finds, for every number of pods, the fewest
// leaves and, among those, the fewest S1s. The leaf count it finds is the
// one of fewestLeaves (the same components, the same sums); an S1 answer
// the programme cannot give exactly (a component whose nodes name two S1s,
// a mixed gang over too many count vectors) is left undecided with a
// reason, never guessed.

// cost is a (leaves, S1s) pair, compared leaves first.
type cost struct{ leaves, s1s int }

func (c cost) less(o cost) bool {
	if c.leaves != o.leaves {
		return c.leaves < o.leaves
	}
	return c.s1s < o.s1s
}

// fewestS1s combines per-component bests (bests[c][k]: the most pods k
// leaves of component c hold, capped at n, constant past its end) grouped
// by S1 (s1[c]): the fewest leaves whose pods reach n, and among those
// the fewest S1s. ok is false when all components together hold fewer
// than n pods.
func fewestS1s(bests [][]int, s1 []string, n int) (cost, bool) {
	// Per S1: the most pods k of its leaves hold (max-plus convolution
	// over its components).
	order := []string{}
	perS1 := map[string][]int{}
	for c, best := range bests {
		cur, seen := perS1[s1[c]]
		if !seen {
			order = append(order, s1[c])
			perS1[s1[c]] = best
			continue
		}
		next := make([]int, len(cur)+len(best)-1)
		for i, a := range cur {
			for j, b := range best {
				next[i+j] = max(next[i+j], min(n, a+b))
			}
		}
		// Non-decreasing in k: k leaves hold at least what k-1 hold.
		for k := 1; k < len(next); k++ {
			next[k] = max(next[k], next[k-1])
		}
		perS1[s1[c]] = next
	}
	const inf = int(^uint(0) >> 1)
	dp := make([]cost, n+1)
	for j := range dp {
		dp[j] = cost{inf, inf}
	}
	dp[0] = cost{}
	next := make([]cost, n+1)
	for _, id := range order {
		best := perS1[id]
		copy(next, dp)
		for j, c := range dp {
			if c.leaves == inf {
				continue
			}
			for k := 1; k < len(best); k++ {
				t := min(n, j+best[k])
				if cand := (cost{c.leaves + k, c.s1s + 1}); cand.less(next[t]) {
					next[t] = cand
				}
			}
		}
		dp, next = next, dp
	}
	if dp[n].leaves == inf {
		return cost{}, false
	}
	return dp[n], true
}

// maxS1Work bounds the state pairs the mixed-gang S1 programme combines.
const maxS1Work = 1 << 24

// s1Search is the mixed-gang version of fewestS1s: per S1 the fewest
// leaves reaching each count vector (reach), then a programme over S1s
// on (leaves, S1s) per vector.
type s1Search struct {
	sp    *stateSpace
	order []string
	reach map[string][]int
	work  int
}

// add folds one component (bySize[j]: the states j of its leaves reach)
// into its S1's reach.
func (s *s1Search) add(s1 string, bySize [][]int) {
	cur, ok := s.reach[s1]
	if !ok {
		s.order = append(s.order, s1)
		cur = make([]int, s.sp.size)
		for i := range cur {
			cur[i] = -1
		}
		cur[0] = 0
	}
	s.reach[s1] = s.sp.combine(cur, bySize)
}

// result returns the fewest (leaves, S1s) reaching the whole gang; reason
// is set when the programme would exceed maxS1Work.
func (s *s1Search) result() (cost, bool, string) {
	const inf = int(^uint(0) >> 1)
	full := s.sp.size - 1
	dp := make([]cost, s.sp.size)
	for i := range dp {
		dp[i] = cost{inf, inf}
	}
	dp[0] = cost{}
	for _, id := range s.order {
		r := s.reach[id]
		var from, to []int
		for st, c := range dp {
			if c.leaves != inf {
				from = append(from, st)
			}
		}
		for st, l := range r {
			if st != 0 && l > 0 {
				to = append(to, st)
			}
		}
		if s.work += len(from) * len(to); s.work > maxS1Work {
			return cost{}, false, fmt.Sprintf("more than %d state pairs to combine over S1s", maxS1Work)
		}
		next := append([]cost(nil), dp...)
		for _, a := range from {
			for _, b := range to {
				t := s.sp.add(a, b)
				if cand := (cost{dp[a].leaves + r[b], dp[a].s1s + 1}); cand.less(next[t]) {
					next[t] = cand
				}
			}
		}
		dp = next
	}
	if dp[full].leaves == inf {
		return cost{}, false, ""
	}
	return dp[full], true, ""
}
