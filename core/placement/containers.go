// Pods of several containers on nodes whose topology policy binds each
// container, not the whole pod, to one NUMA zone
// (topology.PolicySingleNUMAContainer): the pod's need split into parts,
// and the placement of the parts in a node's zones.

package placement

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/rdmatopo/rdmatopo/core/ledger"
	"github.com/rdmatopo/rdmatopo/core/topology"
)

// Part is the need of one group of a pod's containers that takes one zone:
// one container, or several merged (SplitShape).
type Part struct {
	// Names are the containers' names, in the pod's order.
	Names    []string
	GPU      int64
	NICs     int64
	CPUMilli int64
	// Order is the container's place in the order kubelet admits a pod's
	// containers: init containers (sidecars among them) in the pod's
	// order, then the regular containers. A merged part has the smallest
	// order of its containers.
	Order int
	// Init marks a (non-restartable) init container: it runs to completion
	// before the regular containers start, beside the sidecars declared
	// before it, and what it takes in its zone is reused by the containers
	// that follow it there (zoneNeed). It holds no NIC (SplitShape keeps a
	// pod whole otherwise).
	Init bool
}

// maxParts is the most parts a shape keeps; beyond it the smallest
// containers that run side by side are merged into the smallest one kept.
const maxParts = 8

// maxPartSteps bounds the zone choices placeParts tries for one pod; past
// it the pod does not fit on the node (a plan that is never wrong, only
// possibly missed).
const maxPartSteps = 4096

// SplitShape returns the pod shape total with its containers' needs as
// parts, for nodes with a container-level policy, where kubelet's topology
// manager aligns each container on its own:
//   - parts that need no GPU, NIC or CPU are dropped (they take nothing
//     the planner counts from a zone);
//   - fewer than two parts left, or an init part that asks for NICs (its
//     NICs would be reused by later containers, which the reservation's
//     per-container NIC split cannot say), or more init parts than
//     maxParts: total as it is (the pod takes one zone);
//   - the parts are ordered largest first (NICs, GPUs, CPU, then name);
//     beyond maxParts the smallest parts that run side by side are merged
//     into the smallest one kept (an over-estimate of what they need
//     together, never an under-estimate).
//
// total is what the topology manager aligns for the whole pod (its
// effective request without the pod overhead, which counts against the
// node only: Shape.NodeExtra). The caller decides which containers the
// parts are; see the plugin's ShapeOf.
func SplitShape(total Shape, parts []Part) Shape {
	total.Containers = ""
	var kept []Part
	inits := 0
	for _, p := range parts {
		if p.GPU <= 0 && p.NICs <= 0 && p.CPUMilli <= 0 || len(p.Names) == 0 {
			continue
		}
		p.Names = slices.Clone(p.Names)
		p.GPU, p.NICs, p.CPUMilli = max(p.GPU, 0), max(p.NICs, 0), max(p.CPUMilli, 0)
		if p.Init {
			if p.NICs > 0 {
				return total
			}
			inits++
		}
		kept = append(kept, p)
	}
	if len(kept) < 2 || inits >= maxParts {
		return total
	}
	slices.SortStableFunc(kept, func(a, b Part) int {
		switch {
		case a.NICs != b.NICs:
			return cmpDesc(a.NICs, b.NICs)
		case a.GPU != b.GPU:
			return cmpDesc(a.GPU, b.GPU)
		case a.CPUMilli != b.CPUMilli:
			return cmpDesc(a.CPUMilli, b.CPUMilli)
		}
		return strings.Compare(a.Names[0], b.Names[0])
	})
	for len(kept) > maxParts {
		// The two smallest parts that run side by side become one.
		var small []int
		for i := len(kept) - 1; i >= 0 && len(small) < 2; i-- {
			if !kept[i].Init {
				small = append(small, i)
			}
		}
		into, extra := &kept[small[1]], kept[small[0]]
		into.Names = append(into.Names, extra.Names...)
		into.GPU += extra.GPU
		into.NICs += extra.NICs
		into.CPUMilli += extra.CPUMilli
		into.Order = min(into.Order, extra.Order)
		kept = slices.Delete(kept, small[0], small[0]+1)
	}
	enc := make([]string, len(kept))
	for i, p := range kept {
		kind := "c"
		if p.Init {
			kind = "i"
		}
		enc[i] = fmt.Sprintf("%d/%d/%d/%s/%s%d", p.GPU, p.NICs, p.CPUMilli, strings.Join(p.Names, "+"), kind, p.Order)
	}
	total.Containers = strings.Join(enc, ";")
	return total
}

func cmpDesc(a, b int64) int {
	if a > b {
		return -1
	}
	return 1
}

// Parts decodes Containers: the parts of a split shape, largest first; nil
// for a shape that is not split.
func (s Shape) Parts() []Part {
	if s.Containers == "" {
		return nil
	}
	items := strings.Split(s.Containers, ";")
	out := make([]Part, 0, len(items))
	for _, item := range items {
		f := strings.SplitN(item, "/", 5)
		if len(f) != 5 || len(f[4]) < 2 {
			return nil // not SplitShape's encoding: the shape is one part
		}
		gpu, e1 := strconv.ParseInt(f[0], 10, 64)
		nics, e2 := strconv.ParseInt(f[1], 10, 64)
		cpu, e3 := strconv.ParseInt(f[2], 10, 64)
		order, e4 := strconv.Atoi(f[4][1:])
		if e1 != nil || e2 != nil || e3 != nil || e4 != nil || f[4][0] != 'c' && f[4][0] != 'i' {
			return nil
		}
		out = append(out, Part{Names: strings.Split(f[3], "+"), GPU: gpu, NICs: nics, CPUMilli: cpu, Order: order, Init: f[4][0] == 'i'})
	}
	return out
}

// zoneNeed is what the parts placed in one zone hold there, as kubelet's
// CPU and device managers count a pod's containers admitted in order: the
// sidecars and regular containers add up; an init container needs room
// beside the sidecars declared before it, and what it took is reused by
// the containers after it. This is Kubernetes' effective request of a pod
// (k8s.io/kubernetes/pkg/api/v1/resource.PodRequests, without overhead)
// over the zone's containers; TestZoneNeedIsPodRequests holds the two
// equal.
func zoneNeed(parts []Part, in []int) (gpu, cpu, nics int64) {
	for _, k := range in {
		if p := parts[k]; !p.Init {
			gpu += p.GPU
			cpu += p.CPUMilli
			nics += p.NICs
		}
	}
	for _, k := range in {
		p := parts[k]
		if !p.Init {
			continue
		}
		g, c := p.GPU, p.CPUMilli
		for _, j := range in {
			if q := parts[j]; !q.Init && q.Order < p.Order {
				g += q.GPU
				c += q.CPUMilli
			}
		}
		gpu, cpu = max(gpu, g), max(cpu, c)
	}
	return gpu, cpu, nics
}

// splitsOn reports whether a pod of this shape may take several zones of a
// node container by container: the node binds containers, not pods, and
// the shape has several parts.
func (s Shape) splitsOn(n *topology.Node) bool {
	return n.Policy == topology.PolicySingleNUMAContainer && s.Containers != "" && len(n.Zones) > 1
}

// pools reports whether a pod of shape sh may draw on several zones of the
// node: the node lets pods span zones, or binds containers and the pod
// has several. Capacity estimates then pool the node's zones (an
// over-estimate for parts, which the fill corrects).
func pools(n *topology.Node, sh Shape) bool {
	return n.Policy == topology.PolicySpanning || sh.splitsOn(n)
}

// placeParts puts each part of a split shape in one zone of the node,
// parts largest first, each in the zone it leaves with the fewest free
// NICs that still has room for what the zone's parts then hold together
// (zoneNeed), backtracking when a later part finds none, and takes what
// each zone holds from the scratch view. Containers says where each part
// that runs beside the regular containers went (init containers hold no
// NIC and end before the pod runs; they are not listed).
func (w *work) placeParts(sh Shape, ok func(topology.S0ID) bool) (Assignment, bool) {
	parts := sh.Parts()
	if len(parts) == 0 || !w.capFits(sh) {
		return Assignment{}, false
	}
	type room struct{ gpu, cpu, nics int64 }
	free := make([]room, len(w.zones))
	for i := range w.zones {
		free[i] = room{w.zones[i].gpu, w.zones[i].cpuMilli, int64(len(w.freeNICs(i, ok)))}
	}
	in := make([][]int, len(w.zones))
	fits := func(i int) bool {
		gpu, cpu, nics := zoneNeed(parts, in[i])
		return gpu <= free[i].gpu && cpu <= free[i].cpu && nics <= free[i].nics
	}
	left := func(i int) int64 {
		_, _, nics := zoneNeed(parts, in[i])
		return free[i].nics - nics
	}
	at := make([]int, len(parts))
	steps := 0
	var assign func(k int) bool
	assign = func(k int) bool {
		if k == len(parts) {
			return true
		}
		var order []int
		var after []int64
		for i := range free {
			in[i] = append(in[i], k)
			if fits(i) {
				order = append(order, i)
				after = append(after, left(i))
			}
			in[i] = in[i][:len(in[i])-1]
		}
		idx := make([]int, len(order))
		for j := range idx {
			idx[j] = j
		}
		slices.SortStableFunc(idx, func(a, b int) int {
			switch {
			case after[a] < after[b]:
				return -1
			case after[a] > after[b]:
				return 1
			}
			return 0
		})
		for _, j := range idx {
			i := order[j]
			if steps++; steps > maxPartSteps {
				return false
			}
			in[i] = append(in[i], k)
			at[k] = i
			if assign(k + 1) {
				return true
			}
			in[i] = in[i][:len(in[i])-1]
		}
		return false
	}
	if !assign(0) {
		return Assignment{}, false
	}
	a := Assignment{Node: w.name}
	for i := range w.zones {
		if len(in[i]) == 0 {
			continue
		}
		nics := w.freeNICs(i, ok)
		use := ledger.ZoneUse{NUMA: w.zones[i].id}
		use.GPU, use.CPUMilli, _ = zoneNeed(parts, in[i])
		for k, p := range parts {
			if at[k] != i || p.Init {
				continue
			}
			var mine []topology.NICID
			if p.NICs > 0 {
				mine = slices.Clone(nics[:p.NICs])
				nics = nics[p.NICs:]
			}
			use.NICs = append(use.NICs, mine...)
			slices.Sort(mine)
			a.Containers = append(a.Containers, ledger.ContainerUse{Names: slices.Clone(p.Names), NUMA: use.NUMA, NICs: mine})
		}
		slices.Sort(use.NICs)
		w.take(i, use)
		a.Zones = append(a.Zones, use)
	}
	if len(a.Zones) < 2 {
		a.Containers = nil // every container in one zone: nothing to say per container
	}
	return a, true
}
