// The fill: NUMA-aligned assignment of a gang's pods to nodes, finishing a
// node before opening the next, and helpers on pod shapes.

package placement

import (
	"sort"

	"github.com/rdmatopo/rdmatopo/core/topology"
)

// fill places the pods on the given nodes using only NICs of the allowed
// leaves (nil: any) the gang does not exclude: greedily, and for small
// gangs the greedy fill misses (mixed shapes, per-pod node sets) by the
// exact search (exact.go).
func (p *planner) fill(pods []Pod, nodes []string, allowed map[topology.S0ID]bool) ([]Assignment, bool) {
	if assign, ok := p.greedyFill(pods, nodes, allowed); ok {
		return assign, true
	}
	if len(pods) > exactMaxPods {
		return nil, false
	}
	return p.exactFill(pods, nodes, allowed)
}

// greedyFill fills pods of one node into its zones before the next node
// is opened. A new node is the best fit: the smallest capacity that still
// holds the pods left, else the largest.
func (p *planner) greedyFill(pods []Pod, nodes []string, allowed map[topology.S0ID]bool) ([]Assignment, bool) {
	ok := p.leafOK(allowed)
	// A node's fill state (work) is made when the node is first tried for
	// a pod: most candidates of a large group never are.
	type cand struct {
		name string
		v    *nodeFree
		w    *work
		cap  int
		used bool
	}
	fillOf := func(c *cand) *work {
		if c.w == nil {
			c.w = newWork(c.v)
		}
		return c.w
	}
	// takes is p.takes for a node the fill has put nothing on yet, too.
	takes := func(c *cand, pod Pod) bool {
		if c.w != nil {
			return p.takes(c.w, pod)
		}
		return p.allowedNode(c.name, pod.Group) && (p.g.Admit == nil || p.g.Admit(c.name, pod, nil))
	}
	cands := make([]cand, 0, len(nodes))
	for _, n := range nodes {
		v := p.s.view(n)
		if v == nil {
			continue
		}
		cands = append(cands, cand{name: v.node.Name, v: v, cap: quickCap(v, p.main, ok)})
	}
	sort.SliceStable(cands, func(i, j int) bool {
		if cands[i].cap != cands[j].cap {
			return cands[i].cap < cands[j].cap
		}
		return cands[i].name < cands[j].name
	})
	order := bySize(pods)
	assign := make([]Assignment, len(pods))
	var open []*cand
	for k, idx := range order {
		pod := pods[idx]
		placed := false
		for _, c := range open {
			if !p.takes(c.w, pod) {
				continue
			}
			if a, fit := c.w.place(pod.Shape, ok); fit {
				a.PodUID = pod.UID
				assign[idx] = a
				c.w.placed = append(c.w.placed, pod)
				placed = true
				break
			}
		}
		if placed {
			continue
		}
		left := len(order) - k
		var pick *cand
		for i := range cands {
			c := &cands[i]
			if c.used || !takes(c, pod) || c.cap == 0 && pod.Shape == p.main {
				continue
			}
			if c.cap >= left {
				pick = c
				break
			}
			pick = c // largest so far, as cands ascend
		}
		if pick == nil {
			return nil, false
		}
		a, fit := fillOf(pick).place(pod.Shape, ok)
		if !fit {
			// The capacity estimate was for the main shape; try the others.
			for i := range cands {
				c := &cands[i]
				if c.used || c == pick || !takes(c, pod) {
					continue
				}
				if a, fit = fillOf(c).place(pod.Shape, ok); fit {
					pick = c
					break
				}
			}
			if !fit {
				return nil, false
			}
		}
		pick.used = true
		pick.w.placed = append(pick.w.placed, pod)
		open = append(open, pick)
		a.PodUID = pod.UID
		assign[idx] = a
	}
	return assign, true
}

// mainShape is the most common shape of the pods (the larger on ties).
func mainShape(pods []Pod) Shape {
	counts := map[Shape]int{}
	for _, p := range pods {
		counts[p.Shape]++
	}
	var best Shape
	bestN := -1
	for sh, n := range counts {
		if n > bestN || n == bestN && larger(sh, best) {
			best, bestN = sh, n
		}
	}
	return best
}

// larger orders shapes by NICs, GPUs, CPU.
func larger(a, b Shape) bool {
	if a.NICs != b.NICs {
		return a.NICs > b.NICs
	}
	if a.GPU != b.GPU {
		return a.GPU > b.GPU
	}
	return a.CPUMilli > b.CPUMilli
}

// bySize returns pod indexes, largest shape first (stable).
func bySize(pods []Pod) []int {
	idx := make([]int, len(pods))
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(i, j int) bool { return larger(pods[idx[i]].Shape, pods[idx[j]].Shape) })
	return idx
}

// countShape counts the pods of shape sh.
func countShape(pods []Pod, sh Shape) int {
	n := 0
	for _, p := range pods {
		if p.Shape == sh {
			n++
		}
	}
	return n
}

// gangNICs sums the NICs the pods need.
func gangNICs(pods []Pod) int64 {
	var n int64
	for _, p := range pods {
		n += p.Shape.NICs
	}
	return n
}

// dedupe removes repeated names, keeping the first.
func dedupe(names []string) []string {
	return dedupeWith(make(map[string]struct{}, len(names)), names)
}

// dedupe is the function dedupe with the planner's scratch set: a search
// dedupes many node lists, and one set serves them all. The set is emptied
// name by name (clearing a map costs its largest size, each time).
func (p *planner) dedupe(names []string) []string {
	if p.seen == nil {
		p.seen = make(map[string]struct{}, len(names))
	}
	out := dedupeWith(p.seen, names)
	for _, n := range out {
		delete(p.seen, n)
	}
	return out
}

// dedupeWith removes repeated names, keeping the first, with seen empty.
func dedupeWith(seen map[string]struct{}, names []string) []string {
	out := names[:0]
	for _, n := range names {
		if _, dup := seen[n]; !dup {
			seen[n] = struct{}{}
			out = append(out, n)
		}
	}
	return out
}

// leafOK is the leaf predicate of a fill: the allowed leaves (nil: any)
// less those the gang excludes; nil when every leaf is allowed.
func (p *planner) leafOK(allowed map[topology.S0ID]bool) func(topology.S0ID) bool {
	if len(p.g.ExcludeS0s) == 0 {
		return leafFilter(allowed)
	}
	return func(id topology.S0ID) bool { return !p.g.ExcludeS0s[id] && (allowed == nil || allowed[id]) }
}
