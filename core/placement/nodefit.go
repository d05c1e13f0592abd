// How a pod fits one node's free zones: aligned in one zone where the
// node's policy asks it, else spanning zones, its NICs distinct and those
// with the most units left first.

package placement

import (
	"cmp"
	"slices"

	"github.com/rdmatopo/rdmatopo/core/ledger"
	"github.com/rdmatopo/rdmatopo/core/topology"
)

// Fit says whether a pod of shape sh can go on node now, NUMA-aligned as the
// node's policy demands, and if so where (the NICs it would get). It is the
// check behind the plugin's predicate. allowed, if non-nil, limits the NICs
// to those leaves.
func (s *State) Fit(node string, sh Shape, allowed map[topology.S0ID]bool) (Assignment, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	v := s.view(node)
	if v == nil {
		return Assignment{}, false
	}
	return newWork(v).place(sh, leafFilter(allowed))
}

// leafFilter turns a leaf set into a predicate; nil allows every leaf.
func leafFilter(allowed map[topology.S0ID]bool) func(topology.S0ID) bool {
	if allowed == nil {
		return nil
	}
	return func(id topology.S0ID) bool { return allowed[id] }
}

// work is a scratch copy of one node's free view that a fill consumes.
type work struct {
	name  string
	node  *topology.Node
	zones []zoneFree
	cap   *Cap
	// usedNICs counts the units of each NIC taken during this fill.
	usedNICs map[topology.NICID]int64
	// placed are the gang's pods this fill put on the node, in order.
	placed []Pod
}

func newWork(v *nodeFree) *work {
	w := &work{name: v.node.Name, node: v.node, zones: make([]zoneFree, len(v.zones))}
	copy(w.zones, v.zones)
	if v.cap != nil {
		c := *v.cap
		w.cap = &c
	}
	return w
}

// freeNICs lists zone i's distinct NICs with a unit still free in this
// fill and allowed by ok: those with the most free units first, then in
// NIC order (on NICs of one unit: NIC order). A pod takes a prefix, one
// unit of each NIC; taking the fullest first leaves the most NICs for the
// pods after it.
func (w *work) freeNICs(i int, ok func(topology.S0ID) bool) []topology.NICID {
	z := &w.zones[i]
	var out []topology.NICID
	var left []int64
	for j := 0; j < len(z.nics); {
		nic := z.nics[j]
		k := j + 1
		for k < len(z.nics) && z.nics[k] == nic {
			k++
		}
		n := int64(k-j) - w.usedNICs[nic]
		if n > 0 && (ok == nil || ok(z.leaves[j])) {
			out = append(out, nic)
			left = append(left, n)
		}
		j = k
	}
	if len(out) > 1 && slices.ContainsFunc(left, func(n int64) bool { return n != left[0] }) {
		idx := make([]int, len(out))
		for j := range idx {
			idx[j] = j
		}
		slices.SortStableFunc(idx, func(a, b int) int { return cmp.Compare(left[b], left[a]) })
		sorted := make([]topology.NICID, len(out))
		for j, x := range idx {
			sorted[j] = out[x]
		}
		out = sorted
	}
	return out
}

// firstNICs is a sorted copy of the first n of nics (a pod's NICs as the
// ledger keeps them).
func firstNICs(nics []topology.NICID, n int64) []topology.NICID {
	out := slices.Clone(nics[:n])
	slices.Sort(out)
	return out
}

// capFits reports whether the node cap still admits sh.
func (w *work) capFits(sh Shape) bool {
	if w.cap == nil {
		return true
	}
	return w.cap.GPU >= sh.GPU+sh.NodeExtra.GPU && w.cap.CPUMilli >= sh.CPUMilli+sh.NodeExtra.CPUMilli && w.cap.NICs >= sh.NICs+sh.NodeExtra.NICs
}

// place puts one pod of shape sh on the node, taking what it uses from the
// scratch view. Every node takes the pod in one zone when one suffices: the
// best fit, the zone left with the fewest free NICs, then the lowest id.
// Otherwise spanning nodes take several zones, container-level nodes put
// the parts of a split shape in zones of their own (placeParts), and
// pod-level single-NUMA nodes refuse the pod. The shape's NodeExtra is
// taken from the node's cap only.
func (w *work) place(sh Shape, ok func(topology.S0ID) bool) (Assignment, bool) {
	a, fit := w.placeAligned(sh, ok)
	if fit && w.cap != nil {
		w.cap.GPU -= sh.NodeExtra.GPU
		w.cap.CPUMilli -= sh.NodeExtra.CPUMilli
		w.cap.NICs -= sh.NodeExtra.NICs
	}
	return a, fit
}

// placeAligned is place without the shape's NodeExtra: what the zones give.
func (w *work) placeAligned(sh Shape, ok func(topology.S0ID) bool) (Assignment, bool) {
	if !w.capFits(sh) {
		return Assignment{}, false
	}
	best, bestLeft := -1, 0
	var bestNICs []topology.NICID
	for i := range w.zones {
		z := &w.zones[i]
		if z.gpu < sh.GPU || z.cpuMilli < sh.CPUMilli {
			continue
		}
		nics := w.freeNICs(i, ok)
		if int64(len(nics)) < sh.NICs {
			continue
		}
		left := len(nics) - int(sh.NICs)
		if best < 0 || left < bestLeft {
			best, bestLeft, bestNICs = i, left, nics
		}
	}
	if best >= 0 {
		use := ledger.ZoneUse{NUMA: w.zones[best].id, GPU: sh.GPU, CPUMilli: sh.CPUMilli, NICs: firstNICs(bestNICs, sh.NICs)}
		w.take(best, use)
		return Assignment{Node: w.name, Zones: []ledger.ZoneUse{use}}, true
	}
	if sh.splitsOn(w.node) {
		return w.placeParts(sh, ok)
	}
	if w.node.Policy != topology.PolicySpanning || len(w.zones) < 2 {
		return Assignment{}, false
	}
	zones, fit := w.span(sh, ok)
	return Assignment{Node: w.name, Zones: zones}, fit
}

// span places a pod across zones in zone order (spanning policies only).
func (w *work) span(sh Shape, ok func(topology.S0ID) bool) ([]ledger.ZoneUse, bool) {
	var totalGPU, totalCPU, totalNIC int64
	for i := range w.zones {
		totalGPU += w.zones[i].gpu
		totalCPU += w.zones[i].cpuMilli
		totalNIC += int64(len(w.freeNICs(i, ok)))
	}
	if totalGPU < sh.GPU || totalCPU < sh.CPUMilli || totalNIC < sh.NICs {
		return nil, false
	}
	needGPU, needCPU, needNIC := sh.GPU, sh.CPUMilli, sh.NICs
	var uses []ledger.ZoneUse
	for i := range w.zones {
		if needGPU == 0 && needCPU == 0 && needNIC == 0 {
			break
		}
		z := &w.zones[i]
		nics := w.freeNICs(i, ok)
		u := ledger.ZoneUse{NUMA: z.id, GPU: min(needGPU, z.gpu), CPUMilli: min(needCPU, z.cpuMilli)}
		k := min(needNIC, int64(len(nics)))
		u.NICs = firstNICs(nics, k)
		if u.GPU == 0 && u.CPUMilli == 0 && len(u.NICs) == 0 {
			continue
		}
		needGPU -= u.GPU
		needCPU -= u.CPUMilli
		needNIC -= k
		uses = append(uses, u)
	}
	w.evenSplit(uses, sh)
	for _, u := range uses {
		for i := range w.zones {
			if w.zones[i].id == u.NUMA {
				w.take(i, u)
			}
		}
	}
	return uses, true
}

// evenSplit re-divides a spanning pod's GPUs and CPUs evenly over the zones
// it uses (the rule ledger.Rebuild applies to annotated pods, so a ledger
// rebuilt after a restart accounts zones the same way), when every zone has
// room for its share; otherwise the zone-order split stays.
func (w *work) evenSplit(uses []ledger.ZoneUse, sh Shape) {
	gpus := ledger.SplitEvenly(sh.GPU, len(uses))
	cpus := ledger.SplitEvenly(sh.CPUMilli, len(uses))
	for i, u := range uses {
		for j := range w.zones {
			if w.zones[j].id == u.NUMA && (w.zones[j].gpu < gpus[i] || w.zones[j].cpuMilli < cpus[i]) {
				return
			}
		}
	}
	for i := range uses {
		uses[i].GPU, uses[i].CPUMilli = gpus[i], cpus[i]
	}
}

// take removes a zone use from the scratch view.
func (w *work) take(i int, u ledger.ZoneUse) {
	z := &w.zones[i]
	z.gpu -= u.GPU
	z.cpuMilli -= u.CPUMilli
	if w.usedNICs == nil {
		w.usedNICs = map[topology.NICID]int64{}
	}
	for _, nic := range u.NICs {
		w.usedNICs[nic]++
	}
	if w.cap != nil {
		w.cap.GPU -= u.GPU
		w.cap.CPUMilli -= u.CPUMilli
		w.cap.NICs -= int64(len(u.NICs))
	}
}
