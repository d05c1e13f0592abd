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

	"github.com/rdmatopo/rdmatopo/framework/ledger"
	"github.com/rdmatopo/rdmatopo/framework/topology"
)

// Part is the need of one group of a pod's containers that takes one zone:
// one container, or several merged (SplitShape).
type Part struct {
	// Names are the containers' names, in the pod's order.
	Names    []string
	GPU      int64
	NICs     int64
	CPUMilli int64
}

// maxParts is the most parts a shape keeps; the smallest containers beyond
// it are planned in the zone of the last part kept.
const maxParts = 8

// maxPartSteps bounds the zone choices placeParts tries for one pod; past
// it the pod does not fit on the node (a plan that is never wrong, only
// possibly missed).
const maxPartSteps = 4096

// SplitShape returns the pod shape total with its containers' needs as
// parts, for nodes with a container-level policy:
//   - parts that need no GPU, NIC or CPU are dropped (they take nothing
//     the planner counts from a zone);
//   - fewer than two parts left: total as it is (one part is the pod);
//   - what total asks beyond the parts' sum (a pod overhead) is added to
//     the largest part;
//   - the parts are ordered largest first (NICs, GPUs, CPU, then name);
//     beyond maxParts the smallest are merged into the last one kept.
//
// The caller decides which containers run side by side (regular and
// sidecar containers) and whether the pod may be split at all (an init
// container that fits no part needs a zone of its own, so the pod is not
// split; see the plugin's ShapeOfPod).
func SplitShape(total Shape, parts []Part) Shape {
	total.Containers = ""
	var kept []Part
	var sum Shape
	for _, p := range parts {
		if p.GPU <= 0 && p.NICs <= 0 && p.CPUMilli <= 0 || len(p.Names) == 0 {
			continue
		}
		p.Names = slices.Clone(p.Names)
		p.GPU, p.NICs, p.CPUMilli = max(p.GPU, 0), max(p.NICs, 0), max(p.CPUMilli, 0)
		sum.GPU += p.GPU
		sum.NICs += p.NICs
		sum.CPUMilli += p.CPUMilli
		kept = append(kept, p)
	}
	if len(kept) < 2 {
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
	kept[0].GPU += max(total.GPU-sum.GPU, 0)
	kept[0].NICs += max(total.NICs-sum.NICs, 0)
	kept[0].CPUMilli += max(total.CPUMilli-sum.CPUMilli, 0)
	for len(kept) > maxParts {
		last, extra := &kept[maxParts-1], kept[len(kept)-1]
		last.Names = append(last.Names, extra.Names...)
		last.GPU += extra.GPU
		last.NICs += extra.NICs
		last.CPUMilli += extra.CPUMilli
		kept = kept[:len(kept)-1]
	}
	enc := make([]string, len(kept))
	for i, p := range kept {
		enc[i] = fmt.Sprintf("%d/%d/%d/%s", p.GPU, p.NICs, p.CPUMilli, strings.Join(p.Names, "+"))
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
		f := strings.SplitN(item, "/", 4)
		if len(f) != 4 {
			return nil // not SplitShape's encoding: the shape is one part
		}
		gpu, e1 := strconv.ParseInt(f[0], 10, 64)
		nics, e2 := strconv.ParseInt(f[1], 10, 64)
		cpu, e3 := strconv.ParseInt(f[2], 10, 64)
		if e1 != nil || e2 != nil || e3 != nil {
			return nil
		}
		out = append(out, Part{Names: strings.Split(f[3], "+"), GPU: gpu, NICs: nics, CPUMilli: cpu})
	}
	return out
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
// NICs that still has room (backtracking when a later part finds none),
// taking what it uses from the scratch view. The pod's zones are merged
// per zone; Containers says where each part went.
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
	at := make([]int, len(parts))
	steps := 0
	var assign func(k int) bool
	assign = func(k int) bool {
		if k == len(parts) {
			return true
		}
		p := parts[k]
		order := make([]int, 0, len(free))
		for i, f := range free {
			if f.gpu >= p.GPU && f.cpu >= p.CPUMilli && f.nics >= p.NICs {
				order = append(order, i)
			}
		}
		slices.SortStableFunc(order, func(a, b int) int {
			if free[a].nics != free[b].nics {
				if free[a].nics < free[b].nics {
					return -1
				}
				return 1
			}
			return 0
		})
		for _, i := range order {
			if steps++; steps > maxPartSteps {
				return false
			}
			free[i].gpu -= p.GPU
			free[i].cpu -= p.CPUMilli
			free[i].nics -= p.NICs
			at[k] = i
			if assign(k + 1) {
				return true
			}
			free[i].gpu += p.GPU
			free[i].cpu += p.CPUMilli
			free[i].nics += p.NICs
		}
		return false
	}
	if !assign(0) {
		return Assignment{}, false
	}
	a := Assignment{Node: w.name}
	for i := range w.zones {
		nics := w.freeNICs(i, ok)
		use := ledger.ZoneUse{NUMA: w.zones[i].id}
		used := false
		for k, p := range parts {
			if at[k] != i {
				continue
			}
			used = true
			var mine []topology.NICID
			if p.NICs > 0 {
				mine = slices.Clone(nics[:p.NICs])
				nics = nics[p.NICs:]
			}
			use.GPU += p.GPU
			use.CPUMilli += p.CPUMilli
			use.NICs = append(use.NICs, mine...)
			slices.Sort(mine)
			a.Containers = append(a.Containers, ledger.ContainerUse{Names: slices.Clone(p.Names), NUMA: use.NUMA, NICs: mine})
		}
		if !used {
			continue
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
