package placement

// The leaf-set search's input: the units of the usable nodes (a zone, or
// a node's zones under its admission limit), their leaves joined into
// components.

import (
	"slices"
	"sort"

	"github.com/rdmatopo/rdmatopo/core/topology"
)

// setComponents builds the units of the usable nodes for the main shape,
// joins their leaves into components and counts every subset of each.
func (p *planner) setComponents(target int, other *setOther) ([]setComp, bool) {
	b := &setBuilder{p: p, target: target, other: other, parent: map[topology.S0ID]topology.S0ID{}}
	for _, name := range p.s.fabric.NodeNames() {
		if !b.addNode(name) {
			return nil, false
		}
	}
	byRoot, roots, ok := b.components()
	if !ok {
		return nil, false
	}
	b.unitsByComponent(byRoot)
	comps := make([]setComp, 0, len(roots))
	sort.Slice(roots, func(i, j int) bool { return byRoot[roots[i]].leaves[0] < byRoot[roots[j]].leaves[0] })
	for _, root := range roots {
		c := byRoot[root]
		c.count(p.main.NICs, target, other)
		comps = append(comps, *c)
	}
	sort.SliceStable(comps, func(i, j int) bool { return comps[i].s1 < comps[j].s1 })
	return comps, true
}

// rawZone is a zone (or zones that pool) as setComponents reads it: what
// it holds of the main shape (cap) and, with the other pod in it
// (otherCap, when other); its leaves and NIC counts are
// flatLeaves[off:off+n] and flatNICs[off:off+n] (one backing array for
// all: the search builds a zone per zone of the cluster).
type rawZone struct {
	cap, off, n int
	other       bool
	otherCap    int
	// shared says a NIC of the zone has more than one free unit: its
	// NICs are then also listed one by one, flatUnitLeaf[uoff:uoff+un]
	// (the index of each NIC's leaf among the zone's) and
	// flatUnits[uoff:uoff+un] (its free units).
	shared   bool
	uoff, un int
}

// rawUnit is a run of zones (zones[from:to]) counted as one unit.
type rawUnit struct{ from, to, limit, otherLimit int }

// setBuilder gathers the zones and units of the usable nodes and joins
// their leaves (union-find over parent) for setComponents.
type setBuilder struct {
	p          *planner
	target     int
	other      *setOther
	zones      []rawZone
	units      []rawUnit
	flatLeaves []topology.S0ID
	flatNICs   []int64
	// flatUnitLeaf and flatUnits list the NICs of zones with shared NICs
	// (rawZone.shared).
	flatUnitLeaf []int
	flatUnits    []int64
	parent       map[topology.S0ID]topology.S0ID
	tooWide      bool
}

func (b *setBuilder) find(x topology.S0ID) topology.S0ID {
	for b.parent[x] != x {
		b.parent[x] = b.parent[b.parent[x]]
		x = b.parent[x]
	}
	return x
}

func (b *setBuilder) join(leaves []topology.S0ID) {
	for _, id := range leaves {
		if _, ok := b.parent[id]; !ok {
			b.parent[id] = id
		}
		if x, y := b.find(leaves[0]), b.find(id); x != y {
			b.parent[x] = y
		}
	}
}

// addZones counts zones of node v that pool as one zone. mainOK and
// otherOK say whether the node takes pods of the main shape and the other
// pod.
func (b *setBuilder) addZones(v *nodeFree, zs []zoneFree, mainOK, otherOK bool) {
	sh, r, other := b.p.main, b.p.main.NICs, b.other
	// NICs under leaves the gang may not use (Gang.ExcludeS0s: rooms
	// other gangs claim, a segment's outside) are no NICs of the zone, as
	// for the fill (planner.leafOK): a set the search counts on them is
	// one the fill refuses.
	excluded := b.p.g.ExcludeS0s
	var gpu, cpu, total int64
	for i := range zs {
		gpu += zs[i].gpu
		cpu += zs[i].cpuMilli
		for _, id := range zs[i].leaves {
			if !excluded[id] {
				total++
			}
		}
	}
	// capOf is what the zone holds of the main shape once taken is placed
	// in it (the node's cap too).
	capOf := func(taken Shape) int64 {
		if !mainOK {
			return 0
		}
		c := perZone(gpu-taken.GPU, cpu-taken.CPUMilli, 1<<40, sh)
		if v.cap != nil {
			c = min(c, perZone(v.cap.GPU-taken.GPU, v.cap.CPUMilli-taken.CPUMilli, v.cap.NICs-taken.NICs, sh))
		}
		return min(c, int64(b.target))
	}
	c := capOf(Shape{})
	z := rawZone{cap: int(c), off: len(b.flatLeaves)}
	if other != nil && otherOK {
		o := other.shape
		z.other = perZone(gpu, cpu, total, o) > 0 && (v.cap == nil || perZone(v.cap.GPU, v.cap.CPUMilli, v.cap.NICs, o) > 0)
		if z.other {
			z.otherCap = int(capOf(o))
		}
	}
	if (c <= 0 || total < r) && !z.other {
		return
	}
	for i := range zs {
		for _, id := range zs[i].leaves {
			if excluded[id] {
				continue
			}
			if j := slices.Index(b.flatLeaves[z.off:], id); j >= 0 {
				b.flatNICs[z.off+j]++
				continue
			}
			if z.n == maxUnitLeaves {
				b.tooWide = true
				return
			}
			b.flatLeaves = append(b.flatLeaves, id)
			b.flatNICs = append(b.flatNICs, 1)
			z.n++
		}
	}
	b.addUnitsOfNICs(&z, zs)
	b.zones = append(b.zones, z)
}

// addUnitsOfNICs lists the zone's NICs one by one with their free units
// when one has more than one (zoneFree lists a NIC once per free unit, in
// NIC order): k pods of r NICs each then fit iff Σ min(units, k) ≥ k·r
// over the NICs under the set, which the count of units alone
// overestimates (a pod takes distinct NICs).
func (b *setBuilder) addUnitsOfNICs(z *rawZone, zs []zoneFree) {
	excluded := b.p.g.ExcludeS0s
	z.uoff = len(b.flatUnits)
	for i := range zs {
		nics, leaves := zs[i].nics, zs[i].leaves
		for j := 0; j < len(nics); {
			k := j + 1
			for k < len(nics) && nics[k] == nics[j] {
				k++
			}
			if !excluded[leaves[j]] {
				at := slices.Index(b.flatLeaves[z.off:z.off+z.n], leaves[j])
				b.flatUnitLeaf = append(b.flatUnitLeaf, at)
				b.flatUnits = append(b.flatUnits, int64(k-j))
				z.shared = z.shared || k-j > 1
			}
			j = k
		}
	}
	z.un = len(b.flatUnits) - z.uoff
	if !z.shared {
		b.flatUnitLeaf, b.flatUnits = b.flatUnitLeaf[:z.uoff], b.flatUnits[:z.uoff]
		z.un = 0
	}
}

// addNode adds the zones and units of one node; false when a zone has
// more leaves than the search counts.
func (b *setBuilder) addNode(name string) bool {
	p, sh, other := b.p, b.p.main, b.other
	mainOK, otherOK := p.anyAllowed(name), false
	if other != nil {
		mainOK, otherOK = p.allowedNode(name, other.mainGroup), p.allowedNode(name, other.group)
	}
	if !mainOK && !otherOK {
		return true
	}
	v := p.s.view(name)
	if v == nil {
		return true
	}
	from := len(b.zones)
	if pools(v.node, sh) {
		b.addZones(v, v.zones, mainOK, otherOK)
	} else {
		for i := range v.zones {
			b.addZones(v, v.zones[i:i+1], mainOK, otherOK)
		}
	}
	if b.tooWide {
		return false
	}
	b.addUnits(name, from)
	var leaves []topology.S0ID
	for _, z := range b.zones[from:] {
		leaves = append(leaves, b.flatLeaves[z.off:z.off+z.n]...)
	}
	if len(leaves) > 0 {
		b.join(leaves)
	}
	return true
}

// addUnits makes the node's zones (zones[from:]) one unit when its
// admission takes fewer pods than they hold; else each zone is one.
func (b *setBuilder) addUnits(name string, from int) {
	zones := b.zones
	holds, otherHolds, anyOther := 0, 0, false
	for _, z := range zones[from:] {
		holds += z.cap
	}
	for _, z := range zones[from:] {
		if z.other {
			otherHolds = max(otherHolds, holds-z.cap+z.otherCap)
			anyOther = true
		}
	}
	limit, otherLimit := b.p.admitted(name, holds, false), -1
	if anyOther {
		if otherLimit = b.p.admitted(name, otherHolds, true); otherLimit < 0 {
			for i := from; i < len(zones); i++ {
				zones[i].other = false
			}
			otherLimit = -1
		}
	}
	if limit < holds || otherLimit >= 0 && otherLimit < otherHolds {
		b.units = append(b.units, rawUnit{from: from, to: len(zones), limit: limit, otherLimit: otherLimit})
	} else {
		for i := from; i < len(zones); i++ {
			b.units = append(b.units, rawUnit{from: i, to: i + 1, limit: -1, otherLimit: -1})
		}
	}
}

// components groups the joined leaves by root, each component's leaves
// sorted and all in one S1; false when a component is too large, a leaf
// unknown or a component over two S1s.
func (b *setBuilder) components() (map[topology.S0ID]*setComp, []topology.S0ID, bool) {
	byRoot := map[topology.S0ID]*setComp{}
	var roots []topology.S0ID
	for id := range b.parent {
		root := b.find(id)
		c := byRoot[root]
		if c == nil {
			c = &setComp{}
			byRoot[root] = c
			roots = append(roots, root)
		}
		c.leaves = append(c.leaves, id)
	}
	for _, c := range byRoot {
		if len(c.leaves) > maxSetLeaves {
			return nil, nil, false
		}
		slices.Sort(c.leaves)
		for i, id := range c.leaves {
			l, ok := b.p.s.fabric.Leaf(id)
			if !ok {
				return nil, nil, false
			}
			if i == 0 {
				c.s1 = l.S1
			} else if l.S1 != c.s1 {
				return nil, nil, false
			}
		}
	}
	return byRoot, roots, true
}

// unitsByComponent gives each component its units, alike units merged:
// one map for all components, keyed by the component's root and the unit
// (the key is built in scratch space; only a new one is stored).
func (b *setBuilder) unitsByComponent(byRoot map[topology.S0ID]*setComp) {
	zones, flatLeaves, flatNICs := b.zones, b.flatLeaves, b.flatNICs
	seen := map[string]int{}
	var key []byte
	var bitsOf [maxUnitLeaves]uint
	for _, u := range b.units {
		if zones[u.from].n == 0 && u.to-u.from == 1 {
			continue
		}
		var root topology.S0ID
		for _, z := range zones[u.from:u.to] {
			if z.n > 0 {
				root = b.find(flatLeaves[z.off])
				break
			}
		}
		c := byRoot[root]
		key = append(append(key[:0], root...), '|')
		key = appendInt(key, int64(u.limit+1))
		key = append(key, ',')
		key = appendInt(key, int64(u.otherLimit+1))
		su := setUnit{limit: u.limit, otherLimit: u.otherLimit, mult: 1}
		for _, z := range zones[u.from:u.to] {
			leaves, nics := flatLeaves[z.off:z.off+z.n], flatNICs[z.off:z.off+z.n]
			for j, id := range leaves {
				bitsOf[j] = uint(slices.Index(c.leaves, id))
			}
			key = append(key, '|')
			key = appendInt(key, int64(z.cap))
			if z.other {
				key = append(key, '+')
				key = appendInt(key, int64(z.otherCap))
			}
			for j := 0; j < z.n; j++ {
				key = append(key, '/')
				key = appendInt(key, int64(bitsOf[j]))
				key = append(key, ':')
				key = appendInt(key, nics[j])
			}
			sz := setZone{cap: z.cap, bits: slices.Clone(bitsOf[:z.n]), nics: slices.Clone(nics), other: z.other, otherCap: z.otherCap}
			if z.shared {
				key = append(key, '#')
				for j := z.uoff; j < z.uoff+z.un; j++ {
					bit := bitsOf[b.flatUnitLeaf[j]]
					sz.unitBits = append(sz.unitBits, bit)
					sz.units = append(sz.units, b.flatUnits[j])
					key = append(key, '/')
					key = appendInt(key, int64(bit))
					key = append(key, ':')
					key = appendInt(key, b.flatUnits[j])
				}
			}
			su.zones = append(su.zones, sz)
		}
		if at, ok := seen[string(key)]; ok {
			c.units[at].mult++
			continue
		}
		seen[string(key)] = len(c.units)
		c.units = append(c.units, su)
	}
}

// admitted is how many of the gang's main-shape pods node admits together
// (Gang.Admit), beside its other pod when withOther, up to holds: holds
// when the admission takes that many (or the gang has none); -1 when it
// refuses the other pod. One probe decides most nodes (the last pod
// beside the others); a node that refuses it is probed pod by pod.
func (p *planner) admitted(node string, holds int, withOther bool) int {
	if p.g.Admit == nil || p.setPods == nil {
		return holds
	}
	var mains []Pod
	var on []Pod
	for _, pod := range p.setPods {
		switch {
		case pod.Shape == p.main:
			mains = append(mains, pod)
		case withOther && pod.Shape.NICs > 0 && len(on) == 0:
			if !p.g.Admit(node, pod, nil) {
				return -1
			}
			on = append(on, pod)
		}
	}
	holds = min(holds, len(mains))
	takes := func(k int) bool { // the k-th main pod beside the first k-1
		return p.g.Admit(node, mains[k-1], append(on[:len(on):len(on)], mains[:k-1]...))
	}
	switch {
	case holds == 0:
		return 0
	case takes(holds):
		return holds
	}
	k := 0
	for k < holds-1 && takes(k+1) {
		k++
	}
	return k
}

// appendInt appends v (>= 0) in decimal.
func appendInt(b []byte, v int64) []byte {
	if v == 0 {
		return append(b, '0')
	}
	var tmp [20]byte
	i := len(tmp)
	for v > 0 {
		i--
		tmp[i] = byte('0' + v%10)
		v /= 10
	}
	return append(b, tmp[i:]...)
}
