package oracle

import (
	"fmt"
	"slices"
	"sync"
)

// This file extends the benchmark's optimum (oracle.go) to gangs whose pods
// differ: in shape (a master beside its workers), in the nodes they may use
// (taints, selectors) and in how many of them a node admits (memory, host
// ports, the node's pod limit). Like MinLeaves it imports nothing of the
// project, so the planner is not graded by its own answer.
//
// The search. Pods fall into classes (shape and node group) with counts
// n_1..n_m; a partial placement is a count vector capped at those, one of
// P = Π(n_c+1) states. Leaves split into components (leaves joined by a node
// with free NICs under both: a provider node pair's two leaves, a rail
// unit's rails, a topology-unknown node's NICs). For each component and each
// subset S of its leaves, a dynamic programme over the component's nodes
// gives every vector the nodes can hold with NICs under S alone: per NUMA
// zone (per node when the node's policy lets a pod span zones) every
// combination of pods whose GPUs, CPU and NICs fit, summed over zones and
// bounded by the node's pod limit. The union over subsets of size j is what
// j leaves of the component hold. A second programme over components then
// finds the fewest leaves in total whose vectors reach the whole gang. Every
// step is exhaustive, so the answer is the true minimum; components of more
// than maxComponentLeaves leaves, more than maxClasses classes or more than
// maxStates states give OracleUnknown with a reason, never a guess.

// OracleGang is a gang of RDMA pods with their node constraints.
type OracleGang struct {
	// Pods lists each pod's shape. Pods that request no NICs are left out
	// (they do not use leaves, and the planner leaves them out as well).
	Pods []OracleShape
	// Groups, when set, gives each pod's node group (len(Pods) entries);
	// Allowed says which nodes pods of a group may use. Nil: every node.
	Groups  []int
	Allowed func(node string, group int) bool
	// MaxPods, when set, bounds how many pods of the gang a node admits;
	// a negative answer is no bound.
	MaxPods func(node string) int
}

// Bounds of the exact mixed-gang search.
const (
	maxClasses         = 4
	maxStates          = 1 << 14
	maxComponentLeaves = 10
)

// gangClass is a pod shape and node group, with its pod count.
type gangClass struct {
	shape OracleShape
	group int
	n     int
}

// MinLeavesGang returns the fewest distinct leaves whose NICs can hold every
// pod of the gang on nodes, honouring each pod's node group and the nodes'
// pod limits, visiting at most limit leaf sets (DefaultOracleLimit if
// limit <= 0). See the comment at the top of this file.
func MinLeavesGang(nodes []OracleNode, g OracleGang, limit int) OracleResult {
	if limit <= 0 {
		limit = DefaultOracleLimit
	}
	classes, err := gangClasses(g)
	if err != nil {
		return OracleResult{Status: OracleUnknown, Reason: err.Error()}
	}
	if len(classes) == 0 {
		return OracleResult{Status: OracleExact}
	}
	sp := newStateSpace(classes)
	if sp.size > maxStates {
		return OracleResult{Status: OracleUnknown, Reason: fmt.Sprintf("%d count vectors for %d pod classes: more than the %d the search enumerates", sp.size, len(classes), maxStates)}
	}
	sc := gangPool.Get().(*gangScratch)
	defer gangPool.Put(sc)
	ns := gangNodes(nodes, g, classes, sc)
	search := &gangSearch{sp: sp, classes: classes, limit: limit}
	dp := make([]int, sp.size) // fewest leaves reaching each vector; -1 unreachable
	for i := range dp {
		dp[i] = -1
	}
	dp[0] = 0
	s1 := &s1Search{sp: sp, reach: map[string][]int{}}
	s1Reason := ""
	for _, comp := range componentsOf(ns, func(n gangNode) []string { return n.leaves }) {
		if len(comp.leaves) > maxComponentLeaves {
			return OracleResult{Status: OracleUnknown, Visited: search.visited,
				Reason: fmt.Sprintf("a component of %d leaves: more than the %d whose subsets the search enumerates", len(comp.leaves), maxComponentLeaves)}
		}
		bySize, ok := search.componentReach(comp)
		if !ok {
			return OracleResult{Status: OracleUnknown, Visited: search.visited,
				Reason: fmt.Sprintf("search limit of %d leaf sets reached", limit)}
		}
		dp = sp.combine(dp, bySize)
		if s1Reason == "" {
			if id, ok := componentS1(comp); ok {
				s1.add(id, bySize)
			} else {
				s1Reason = fmt.Sprintf("leaf %s is reached from nodes of two S1s", comp.leaves[0])
			}
		}
	}
	best := dp[sp.size-1]
	if best < 0 {
		return OracleResult{Status: OracleInfeasible, Visited: search.visited}
	}
	res := OracleResult{Status: OracleExact, Leaves: best, Visited: search.visited, S1Reason: s1Reason}
	if s1Reason == "" {
		switch c, ok, reason := s1.result(); {
		case reason != "":
			res.S1Reason = reason
		case !ok || c.leaves != best:
			res.S1Reason = fmt.Sprintf("the S1 programme found %d leaves where the leaf programme found %d", c.leaves, best)
		default:
			res.S1s = c.s1s
		}
	}
	return res
}

// gangClasses groups the gang's NIC-using pods by shape and node group, in
// first-seen order.
func gangClasses(g OracleGang) ([]gangClass, error) {
	if g.Groups != nil && len(g.Groups) != len(g.Pods) {
		return nil, fmt.Errorf("%d node groups for %d pods", len(g.Groups), len(g.Pods))
	}
	var out []gangClass
	for i, sh := range g.Pods {
		if sh.NICs <= 0 {
			continue
		}
		group := 0
		if g.Groups != nil {
			group = g.Groups[i]
		}
		j := slices.IndexFunc(out, func(c gangClass) bool { return c.shape == sh && c.group == group })
		if j < 0 {
			out = append(out, gangClass{shape: sh, group: group})
			j = len(out) - 1
		}
		out[j].n++
	}
	if len(out) > maxClasses {
		return nil, fmt.Errorf("%d pod classes (shape and node group): more than the %d the search enumerates", len(out), maxClasses)
	}
	return out, nil
}

// stateSpace encodes count vectors in mixed radix.
type stateSpace struct {
	n      []int // per class count
	stride []int
	size   int
	vec    [][]int // decoded vector of each state
}

func newStateSpace(classes []gangClass) *stateSpace {
	sp := &stateSpace{size: 1}
	for _, c := range classes {
		sp.n = append(sp.n, c.n)
		sp.stride = append(sp.stride, sp.size)
		sp.size *= c.n + 1
		if sp.size > maxStates {
			return sp
		}
	}
	sp.vec = make([][]int, sp.size)
	for s := range sp.vec {
		v := make([]int, len(sp.n))
		for c := range v {
			v[c] = s / sp.stride[c] % (sp.n[c] + 1)
		}
		sp.vec[s] = v
	}
	return sp
}

// add returns the state of a+b, each count capped at the class size.
func (sp *stateSpace) add(a, b int) int {
	va, vb := sp.vec[a], sp.vec[b]
	s := 0
	for c := range va {
		s += min(va[c]+vb[c], sp.n[c]) * sp.stride[c]
	}
	return s
}

// sumSets returns every a+b (capped) for a in x and b in y, as a state
// set; y is a list of states (small: what one node or zone holds).
func (sp *stateSpace) sumSets(x []bool, y []int) []bool {
	out := make([]bool, sp.size)
	for a, ok := range x {
		if !ok {
			continue
		}
		for _, b := range y {
			out[sp.add(a, b)] = true
		}
	}
	return out
}

// states lists the members of a state set.
func states(set []bool) []int {
	var out []int
	for s, ok := range set {
		if ok {
			out = append(out, s)
		}
	}
	return out
}

// combine extends dp (fewest leaves per state) by one component whose j
// leaves reach the states bySize[j].
func (sp *stateSpace) combine(dp []int, bySize [][]int) []int {
	next := append([]int(nil), dp...)
	for a, leaves := range dp {
		if leaves < 0 {
			continue
		}
		for j, set := range bySize {
			if j == 0 {
				continue
			}
			for _, b := range set {
				s := sp.add(a, b)
				if next[s] < 0 || leaves+j < next[s] {
					next[s] = leaves + j
				}
			}
		}
	}
	return next
}

// gangNode is one node as the mixed search sees it.
type gangNode struct {
	// s1 is the node's S1.
	s1       string
	spanning bool
	zones    []OracleZone
	// allowed[c] says whether pods of class c may use the node.
	allowed []bool
	// maxPods bounds the gang's pods on the node (-1: none).
	maxPods int
	leaves  []string // distinct leaves of its free NICs
}

// gangNodes lists the nodes some class of the gang may use that have free
// NICs and admit a pod of the gang, each with its leaves, sorted. The nodes
// and their slices live in sc's arrays (one for every node's allowed
// flags, one for their leaves), valid until sc is used again.
func gangNodes(nodes []OracleNode, g OracleGang, classes []gangClass, sc *gangScratch) []gangNode {
	total := 0
	for _, nd := range nodes {
		for _, z := range nd.Zones {
			total += len(z.FreeNICLeaves)
		}
	}
	// Sized up front: the nodes' slices point into allowed and leaves,
	// which must not move while they are filled.
	out := grow(sc.nodes, len(nodes))
	allowed := grow(sc.allowed, len(nodes)*len(classes))
	leaves := grow(sc.leaves, total)
	defer func() { sc.nodes, sc.allowed, sc.leaves = out, allowed, leaves }()
	for _, nd := range nodes {
		gn := gangNode{s1: nd.S1, spanning: nd.Spanning, zones: nd.Zones, maxPods: -1}
		a0, l0 := len(allowed), len(leaves)
		any := false
		for _, c := range classes {
			ok := g.Allowed == nil || g.Allowed(nd.Name, c.group)
			allowed = append(allowed, ok)
			any = any || ok
		}
		if g.MaxPods != nil {
			gn.maxPods = g.MaxPods(nd.Name)
		}
		for _, z := range nd.Zones {
			for _, l := range z.FreeNICLeaves {
				if !slices.Contains(leaves[l0:], l) {
					leaves = append(leaves, l)
				}
			}
		}
		if !any || len(leaves) == l0 || gn.maxPods == 0 {
			allowed, leaves = allowed[:a0], leaves[:l0]
			continue
		}
		gn.allowed = allowed[a0:len(allowed):len(allowed)]
		gn.leaves = leaves[l0:len(leaves):len(leaves)]
		slices.Sort(gn.leaves)
		out = append(out, gn)
	}
	return out
}

// gangScratch holds the backing arrays of gangNodes' answer, reused from
// one oracle call to the next (see unitScratch).
type gangScratch struct {
	nodes   []gangNode
	allowed []bool
	leaves  []string
}

var gangPool = sync.Pool{New: func() any { return new(gangScratch) }}

// gangComponent is a set of leaves joined by nodes, with those nodes.
type gangComponent = leafComponent[gangNode]

// componentS1 returns the S1 of the component's nodes; false when they name two.
func componentS1(c gangComponent) (string, bool) {
	for _, n := range c.items[1:] {
		if n.s1 != c.items[0].s1 {
			return "", false
		}
	}
	return c.items[0].s1, true
}

// gangSearch holds what the component searches share.
type gangSearch struct {
	sp      *stateSpace
	classes []gangClass
	limit   int
	visited int
}

// componentReach returns, for j = 0 .. len(leaves), the states some j
// leaves of the component reach; ok is false past the search limit.
func (s *gangSearch) componentReach(c gangComponent) (bySize [][]int, ok bool) {
	index := map[string]int{}
	for i, l := range c.leaves {
		index[l] = i
	}
	k := len(c.leaves)
	union := make([][]bool, k+1)
	for j := range union {
		union[j] = make([]bool, s.sp.size)
	}
	for mask := 0; mask < 1<<k; mask++ {
		if s.visited++; s.visited > s.limit {
			return nil, false
		}
		reach := make([]bool, s.sp.size)
		reach[0] = true
		for _, n := range c.items {
			reach = s.sp.sumSets(reach, states(s.nodeStates(n, mask, index)))
		}
		j := popcount(mask)
		for st, ok := range reach {
			if ok {
				union[j][st] = true
			}
		}
	}
	bySize = make([][]int, k+1)
	for j := range union {
		bySize[j] = states(union[j])
	}
	return bySize, true
}

// popcount counts the set bits of x.
func popcount(x int) int {
	n := 0
	for ; x != 0; x &= x - 1 {
		n++
	}
	return n
}

// nodeStates returns the vectors a node holds using only NICs of the leaves
// in mask: per zone (the pooled node when it spans) every combination that
// fits, summed over zones, within the node's pod limit.
func (s *gangSearch) nodeStates(n gangNode, mask int, index map[string]int) []bool {
	type room struct{ gpu, cpu, nics int64 }
	// units lists, per room, the free units of its NICs under mask when
	// one has several (nil otherwise): a room's nics is then their sum, a
	// budget every combination must meet, and a combination fits only if
	// its pods' distinct NICs can be dealt onto them (fitsUnits).
	var units [][]int64
	under := func(z OracleZone, list *[]int64) int64 {
		var k int64
		for i, l := range z.FreeNICLeaves {
			if mask&(1<<index[l]) != 0 {
				k += z.nicUnits(i)
				*list = append(*list, z.nicUnits(i))
			}
		}
		return k
	}
	withUnits := false
	for _, z := range n.zones {
		withUnits = withUnits || z.hasUnits()
	}
	var rooms []room
	if n.spanning {
		var r room
		var list []int64
		for _, z := range n.zones {
			r.gpu += max(z.FreeGPU, 0)
			r.cpu += max(z.FreeCPUMilli, 0)
			r.nics += under(z, &list)
		}
		rooms = []room{r}
		units = [][]int64{list}
	} else {
		for _, z := range n.zones {
			var list []int64
			rooms = append(rooms, room{max(z.FreeGPU, 0), max(z.FreeCPUMilli, 0), under(z, &list)})
			units = append(units, list)
		}
	}
	out := make([]bool, s.sp.size)
	out[0] = true
	for ri, r := range rooms {
		zone := make([]bool, s.sp.size)
		var walk func(c int, state int, left room)
		walk = func(c, state int, left room) {
			if c == len(s.classes) {
				if !withUnits || s.fitsUnits(s.sp.vec[state], units[ri]) {
					zone[state] = true
				}
				return
			}
			walk(c+1, state, left)
			if !n.allowed[c] {
				return
			}
			sh := s.classes[c].shape
			for k := 1; k <= s.classes[c].n; k++ {
				need := room{int64(k) * sh.GPU, int64(k) * sh.CPUMilli, int64(k) * sh.NICs}
				if need.gpu > left.gpu || need.cpu > left.cpu || need.nics > left.nics {
					break
				}
				walk(c+1, state+k*s.sp.stride[c], room{left.gpu - need.gpu, left.cpu - need.cpu, left.nics - need.nics})
			}
		}
		walk(0, 0, r)
		out = s.sp.sumSets(out, states(zone))
	}
	if n.maxPods >= 0 {
		for st, ok := range out {
			if ok && podsOf(s.sp.vec[st]) > n.maxPods {
				out[st] = false
			}
		}
	}
	return out
}

// fitsUnits reports whether pods of the classes, counts[c] of class c,
// each on distinct NICs (shape.NICs of them, one unit each), can be dealt
// onto NICs of the given free units: with the pods' NIC counts r_1 >= r_2
// >= ... , for every k the first k pods need at most Σ_i min(units_i, k)
// units (Gale and Ryser's condition for a 0-1 matrix with row sums r_j and
// column sums at most units_i).
func (s *gangSearch) fitsUnits(counts []int, units []int64) bool {
	var rows []int64
	for c, k := range counts {
		for range k {
			rows = append(rows, s.classes[c].shape.NICs)
		}
	}
	slices.SortFunc(rows, func(a, b int64) int { return int(b - a) })
	var need int64
	for k, r := range rows {
		need += r
		var have int64
		for _, u := range units {
			have += min(u, int64(k+1))
		}
		if need > have {
			return false
		}
	}
	return true
}

// podsOf sums a count vector.
func podsOf(v []int) int {
	n := 0
	for _, x := range v {
		n += x
	}
	return n
}
