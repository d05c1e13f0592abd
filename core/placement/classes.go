// Capacity estimates per pod class: a gang of several shapes, or of pods
// with different node sets, is held by a node, a leaf or a group of leaves
// only if each class of its pods fits there on the nodes that class may
// use. The leaf statistics (leafstats.go) are kept for the main shape,
// which orders the search; these counts decide whether a unit holds the
// gang.

package placement

import (
	"github.com/rdmatopo/rdmatopo/core/topology"
)

// classCap is how many pods of one class a leaf holds: own with the
// leaf's NICs alone (what one leaf can use), pods including those that
// need NICs of the node's other leaves too (see leafStat).
type classCap struct {
	own, pods int
}

// classesOf lists the distinct classes (podClass: shape and node set) of
// the pods, in first-seen order.
func classesOf(pods []Pod) []podClass {
	var out []podClass
	seen := map[podClass]bool{}
	for _, pod := range pods {
		c := podClass{pod.Shape, pod.Group}
		if !seen[c] {
			seen[c] = true
			out = append(out, c)
		}
	}
	return out
}

// classCounts counts the pods of each of the planner's classes.
func (p *planner) classCounts(pods []Pod) []int {
	out := make([]int, len(p.classes))
	for _, pod := range pods {
		for i, c := range p.classes {
			if c.shape == pod.Shape && c.group == pod.Group {
				out[i]++
				break
			}
		}
	}
	return out
}

// single reports whether the gang has one class, which the main-shape
// statistics count exactly (on the nodes its one node set allows).
func (p *planner) single() bool { return len(p.classes) <= 1 }

// classCaps returns (once per plan and leaf) what the leaf holds of each
// class, over the nodes under it each class may use.
func (p *planner) classCaps(st *leafStat) []classCap {
	if p.single() {
		return []classCap{{own: st.own, pods: st.pods}}
	}
	if caps, ok := p.caps[st]; ok {
		return caps
	}
	caps := make([]classCap, len(p.classes))
	under := func(l topology.S0ID) bool { return l == st.id }
	for _, name := range st.nodes {
		v := p.s.view(name)
		if v == nil {
			continue
		}
		for i, c := range p.classes {
			if !p.allowedNode(name, c.group) {
				continue
			}
			n := quickCap(v, c.shape, under)
			caps[i].own += n
			if n == 0 && pools(v.node, c.shape) {
				n = quickCap(v, c.shape, nil)
			}
			caps[i].pods += n
		}
	}
	if p.caps == nil {
		p.caps = map[*leafStat][]classCap{}
	}
	p.caps[st] = caps
	return caps
}

// leafHolds reports whether one leaf holds every class of the counted
// pods with its own NICs.
func (p *planner) leafHolds(st *leafStat, counts []int) bool {
	for i, c := range p.classCaps(st) {
		if c.own < counts[i] {
			return false
		}
	}
	return true
}

// holdsAny reports whether the leaf holds a pod of some class (for a
// gang of one class: of the main shape).
func (p *planner) holdsAny(st *leafStat) bool {
	for _, c := range p.classCaps(st) {
		if c.pods > 0 {
			return true
		}
	}
	return false
}

// groupHolds reports whether a group of leaves holds every class of the
// counted pods (pods counted under each leaf they may use, see leafStat).
func (p *planner) groupHolds(group []*leafStat, counts []int) bool {
	sum := make([]int, len(counts))
	for _, st := range group {
		for i, c := range p.classCaps(st) {
			sum[i] += c.pods
		}
	}
	for i := range counts {
		if sum[i] < counts[i] {
			return false
		}
	}
	return true
}

// nodeHolds reports whether a node holds every class of the counted pods
// with NICs of the leaves ok admits (any when nil), each class on its own
// (a necessary condition; the fill decides).
func (p *planner) nodeHolds(name string, v *nodeFree, ok func(topology.S0ID) bool, counts []int) bool {
	for i, c := range p.classes {
		if counts[i] == 0 {
			continue
		}
		if !p.allowedNode(name, c.group) || quickCap(v, c.shape, ok) < counts[i] {
			return false
		}
	}
	return true
}
