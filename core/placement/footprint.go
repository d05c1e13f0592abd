// Footprint search: the fewest leaves for gangs whose pods need NICs of
// several leaves each.
//
// On provider cabling every NIC of a NUMA zone hangs off one leaf, so a pod
// sits under one leaf and the per-leaf pod counts of leafstats.go are exact.
// On rail cabling (NIC i of every node of a scalable unit cabled to rail leaf
// i) and on topology-unknown NICs (each a leaf of its own) a pod's NICs span
// leaves: no leaf alone holds a pod, and counting per leaf finds nothing.
//
// There the planner works with footprints: a footprint is a set of leaves one
// pod of the gang's main shape can take all its NICs from, in one NUMA zone
// (or across the zones of a spanning node). The search grows a leaf set L:
// each step adds the footprint that gains the most pods per leaf it adds to L
// (the gain capped at what the gang still needs, so a footprint that
// completes the gang with one leaf beats a larger one with two). Leaves L no
// longer needs are then pruned, and L is verified by a full fill restricted
// to its NICs.
//
// Exactness: for a gang of one shape that fits the pods of one footprint
// (all pods on the same rails of one scalable unit), the first step takes the
// smallest such footprint with the most room, which is optimal. Beyond that
// the problem is a set cover and the greedy a heuristic; pruning removes what
// it over-covered.

package placement

import (
	"slices"
	"sort"

	"github.com/rdmatopo/rdmatopo/core/topology"
)

// maxEnumLeaves bounds the distinct leaves of a zone whose footprints are
// enumerated exhaustively; zones over more leaves (or with unknown leaves,
// which are all alike) contribute only their natural footprint.
const maxEnumLeaves = 4

// footprint is a leaf set one pod of the main shape can take its NICs from.
type footprint struct {
	leaves []topology.S0ID
	key    string
}

// leafCount is how many free NICs a zone has under one leaf.
type leafCount struct {
	id topology.S0ID
	n  int64
}

// hasSplit reports whether any leaf of a group is split (see leafStat).
func hasSplit(group []*leafStat) bool {
	for _, st := range group {
		if st.split {
			return true
		}
	}
	return false
}

// tryFootprints searches a group of leaves by footprint (see the file
// comment) and returns a verified candidate, or nil.
func (p *planner) tryFootprints(pods []Pod, group []*leafStat, key string) *candidate {
	in := make(map[topology.S0ID]*leafStat, len(group))
	var nodes []string
	for _, st := range group {
		in[st.id] = st
		nodes = append(nodes, st.nodes...)
	}
	nodes = p.dedupe(nodes)
	fps := p.footprints(nodes, in)
	if len(fps) == 0 {
		return nil
	}
	s := &coverState{p: p, in: in, chosen: map[topology.S0ID]bool{}, s1s: map[topology.S1ID]bool{}, cur: map[string]int{}}
	held := map[topology.S0ID]bool{}
	if h := p.g.Occupancy; !h.Empty() {
		for id := range h.S0s {
			if st, ok := in[id]; ok {
				held[id] = true
				s.chosen[id] = true
				s.s1s[st.s1] = true
			}
		}
	}
	inL := func(id topology.S0ID) bool { return s.chosen[id] }
	for _, n := range nodes {
		if v := p.s.view(n); v != nil {
			c := quickCap(v, p.main, inL)
			s.cur[n] = c
			s.total += c
		}
	}
	target := countShape(pods, p.main)
	need := gangNICs(pods)
	for attempt := 0; attempt < maxVerify; attempt++ {
		for s.total < target {
			f := s.best(fps, target-s.total)
			if f == nil {
				return nil
			}
			s.add(f.leaves)
		}
		if attempt == 0 {
			s.prune(held, target)
		}
		allowed := make(map[topology.S0ID]bool, len(s.chosen))
		var under []string
		var free int64
		for id := range s.chosen {
			allowed[id] = true
			under = append(under, in[id].nodes...)
			free += in[id].nics
		}
		sort.Strings(under)
		if assign, ok := p.fill(pods, p.dedupe(under), allowed); ok {
			leaves := p.leavesOf(assign)
			for id := range held {
				leaves[id] = true
			}
			return &candidate{assign: assign, leaves: leaves, leftover: max(free-need, 0), key: key}
		}
		// The estimate was for the main shape; make room for one more.
		target++
	}
	return nil
}

// footprints lists the distinct footprints of the main shape on the nodes,
// using only NICs of the leaves in in, sorted by key.
func (p *planner) footprints(nodes []string, in map[topology.S0ID]*leafStat) []footprint {
	k := p.main.NICs
	seen := map[string]bool{}
	var out []footprint
	// Most nodes repeat a footprint already listed: the key is built in
	// scratch space and copied only for a new one.
	var sorted []topology.S0ID
	var key []byte
	add := func(ids []topology.S0ID) {
		sorted = append(sorted[:0], ids...)
		slices.Sort(sorted)
		key = key[:0]
		for i, id := range sorted {
			if i > 0 {
				key = append(key, 0)
			}
			key = append(key, id...)
		}
		if !seen[string(key)] {
			name := string(key)
			seen[name] = true
			out = append(out, footprint{leaves: slices.Clone(sorted), key: name})
		}
	}
	for _, n := range nodes {
		v := p.s.view(n)
		if v == nil {
			continue
		}
		inZone := false
		var all []leafCount
		var gpu, cpu int64
		for i := range v.zones {
			z := &v.zones[i]
			gpu += z.gpu
			cpu += z.cpuMilli
			counts := leafCounts(z.nics, z.leaves, in)
			all = mergeCounts(all, counts)
			if perZone(z.gpu, z.cpuMilli, k, p.main) < 1 {
				continue
			}
			if zoneFootprints(counts, k, add) {
				inZone = true
			}
		}
		// A pod no zone holds may span the zones of a spanning node, or
		// put its containers in several zones of a container-level one.
		if !inZone && pools(v.node, p.main) && perZone(gpu, cpu, k, p.main) >= 1 {
			sortCounts(all)
			natural(all, k, add)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].key < out[j].key })
	return out
}

// leafCounts counts a zone's free NICs per leaf of in, most NICs first.
func leafCounts(nics []topology.NICID, leaves []topology.S0ID, in map[topology.S0ID]*leafStat) []leafCount {
	var out []leafCount
	for j := range nics {
		id := leaves[j]
		if _, ok := in[id]; !ok {
			continue
		}
		found := false
		for i := range out {
			if out[i].id == id {
				out[i].n++
				found = true
				break
			}
		}
		if !found {
			out = append(out, leafCount{id: id, n: 1})
		}
	}
	sortCounts(out)
	return out
}

// mergeCounts adds the counts of b into a.
func mergeCounts(a, b []leafCount) []leafCount {
	for _, c := range b {
		found := false
		for i := range a {
			if a[i].id == c.id {
				a[i].n += c.n
				found = true
				break
			}
		}
		if !found {
			a = append(a, c)
		}
	}
	return a
}

// sortCounts orders counts by NICs descending, then leaf id.
func sortCounts(c []leafCount) {
	sort.Slice(c, func(i, j int) bool {
		if c[i].n != c[j].n {
			return c[i].n > c[j].n
		}
		return c[i].id < c[j].id
	})
}

// natural adds the footprint of the fewest leaves taking the leaves with the
// most NICs first; false when the counts hold fewer than k NICs.
func natural(counts []leafCount, k int64, add func([]topology.S0ID)) bool {
	var ids []topology.S0ID
	var got int64
	for _, c := range counts {
		if got >= k {
			break
		}
		ids = append(ids, c.id)
		got += c.n
	}
	if got < k {
		return false
	}
	add(ids)
	return true
}

// zoneFootprints adds a zone's footprints for pods of k NICs: every set of
// the fewest leaves that holds k NICs when the zone has few known leaves,
// else the natural one. It reports whether the zone has one at all.
func zoneFootprints(counts []leafCount, k int64, add func([]topology.S0ID)) bool {
	if !natural(counts, k, func([]topology.S0ID) {}) {
		return false
	}
	enumerable := len(counts) <= maxEnumLeaves
	for _, c := range counts {
		if c.id.IsUnknown() {
			enumerable = false
		}
	}
	if !enumerable {
		return natural(counts, k, add)
	}
	// The fewest leaves m any set needs is the natural footprint's size.
	m, got := 0, int64(0)
	for _, c := range counts {
		if got >= k {
			break
		}
		m++
		got += c.n
	}
	n := len(counts)
	for mask := 1; mask < 1<<n; mask++ {
		if popcount(mask) != m {
			continue
		}
		var ids []topology.S0ID
		var sum int64
		for i := 0; i < n; i++ {
			if mask&(1<<i) != 0 {
				ids = append(ids, counts[i].id)
				sum += counts[i].n
			}
		}
		if sum >= k {
			add(ids)
		}
	}
	return true
}

func popcount(x int) int {
	n := 0
	for ; x != 0; x &= x - 1 {
		n++
	}
	return n
}

// coverState is the leaf set a footprint search grows.
type coverState struct {
	p  *planner
	in map[topology.S0ID]*leafStat
	// chosen is the leaf set L; s1s the S1s of its leaves.
	chosen map[topology.S0ID]bool
	s1s    map[topology.S1ID]bool
	// cur is each node's capacity for the main shape using only NICs of L;
	// total their sum.
	cur   map[string]int
	total int
	// scratch backs touched's lists, each read before the next is made.
	scratch []string
}

// best picks the footprint with the most pods gained (capped at need) per
// leaf added; ties go to the fewest new S1s, the most pods gained, the
// fewest new leaves, the fewest free NICs under the new leaves (best fit),
// then the key. Nil when no footprint gains anything.
func (s *coverState) best(fps []footprint, need int) *footprint {
	var best *footprint
	var bGain, bNew, bS1 int
	var bFree int64
	// added and newS1 are scratch, refilled for each footprint.
	var added []topology.S0ID
	var newS1 []topology.S1ID
	for i := range fps {
		f := &fps[i]
		added = added[:0]
		for _, id := range f.leaves {
			if !s.chosen[id] {
				added = append(added, id)
			}
		}
		if len(added) == 0 {
			continue
		}
		gain := min(s.gain(added), need)
		if gain <= 0 {
			continue
		}
		newS1 = newS1[:0]
		var free int64
		for _, id := range added {
			st := s.in[id]
			if !s.s1s[st.s1] && !slices.Contains(newS1, st.s1) {
				newS1 = append(newS1, st.s1)
			}
			free += st.nics
		}
		if best != nil {
			// gain/len(added) against bGain/bNew, without division.
			if l, r := gain*bNew, bGain*len(added); l != r {
				if l < r {
					continue
				}
			} else if len(newS1) != bS1 {
				if len(newS1) > bS1 {
					continue
				}
			} else if gain != bGain {
				// At the same rate, the larger footprint: it leaves less
				// for smaller ones to cover at a worse rate later.
				if gain < bGain {
					continue
				}
			} else if len(added) != bNew {
				if len(added) > bNew {
					continue
				}
			} else if free != bFree {
				if free > bFree {
					continue
				}
			} else if f.key >= best.key {
				continue
			}
		}
		best, bGain, bNew, bS1, bFree = f, gain, len(added), len(newS1), free
	}
	return best
}

// touched lists the nodes with free NICs under the leaves, valid until the
// next call.
func (s *coverState) touched(leaves []topology.S0ID) []string {
	if len(leaves) == 1 {
		return s.in[leaves[0]].nodes
	}
	out := s.scratch[:0]
	for _, id := range leaves {
		out = append(out, s.in[id].nodes...)
	}
	s.scratch = out
	return s.p.dedupe(out)
}

// gain is how many pods of the main shape adding the leaves to L would add.
func (s *coverState) gain(added []topology.S0ID) int {
	ok := func(id topology.S0ID) bool {
		if s.chosen[id] {
			return true
		}
		for _, a := range added {
			if a == id {
				return true
			}
		}
		return false
	}
	g := 0
	for _, n := range s.touched(added) {
		if v := s.p.s.view(n); v != nil {
			g += quickCap(v, s.p.main, ok) - s.cur[n]
		}
	}
	return g
}

// add puts the leaves into L and recounts the nodes under them.
func (s *coverState) add(leaves []topology.S0ID) {
	var added []topology.S0ID
	for _, id := range leaves {
		if !s.chosen[id] {
			s.chosen[id] = true
			s.s1s[s.in[id].s1] = true
			added = append(added, id)
		}
	}
	s.recount(s.touched(added))
}

// recount refreshes the capacity of the nodes under L.
func (s *coverState) recount(nodes []string) {
	ok := func(id topology.S0ID) bool { return s.chosen[id] }
	for _, n := range nodes {
		if v := s.p.s.view(n); v != nil {
			c := quickCap(v, s.p.main, ok)
			s.total += c - s.cur[n]
			s.cur[n] = c
		}
	}
}

// prune drops leaves of L (never held ones) that the gang does not need,
// those with the fewest free NICs first.
func (s *coverState) prune(held map[topology.S0ID]bool, target int) {
	var ids []topology.S0ID
	for id := range s.chosen {
		if !held[id] {
			ids = append(ids, id)
		}
	}
	sort.Slice(ids, func(i, j int) bool {
		a, b := s.in[ids[i]], s.in[ids[j]]
		if a.nics != b.nics {
			return a.nics < b.nics
		}
		return a.id < b.id
	})
	for _, id := range ids {
		delete(s.chosen, id)
		ok := func(l topology.S0ID) bool { return s.chosen[l] }
		loss := 0
		nodes := s.in[id].nodes
		caps := make([]int, len(nodes))
		for i, n := range nodes {
			if v := s.p.s.view(n); v != nil {
				caps[i] = quickCap(v, s.p.main, ok)
				loss += s.cur[n] - caps[i]
			}
		}
		if s.total-loss < target {
			s.chosen[id] = true
			continue
		}
		for i, n := range nodes {
			if _, ok := s.cur[n]; ok {
				s.cur[n] = caps[i]
			}
		}
		s.total -= loss
	}
	s.s1s = map[topology.S1ID]bool{}
	for id := range s.chosen {
		s.s1s[s.in[id].s1] = true
	}
}
