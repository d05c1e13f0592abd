package grade

import (
	"fmt"
	"math"
	"slices"
	"sort"

	"github.com/rdmatopo/rdmatopo/core/placement"
	"github.com/rdmatopo/rdmatopo/core/topology"
)

// This file models what a placement costs a training job: the time of one
// ring all-reduce over the gang's ranks. It is a model, not a measurement
// (docs/benchmarks.md, "All-reduce model").
//
// The ring. Rank r sends to rank r+1 and the last rank to rank 0. A ring
// all-reduce of M bytes over p ranks moves 2(p-1)/p·M bytes over every hop
// (p-1 reduce-scatter and p-1 all-gather steps of M/p each), all hops at
// once, so it takes 2(p-1)/p·M divided by the bandwidth of the slowest hop.
// Latency is left out: for the large messages of gradient all-reduce the
// bandwidth term dominates, and in a bandwidth model M cancels out of every
// ratio the benchmark reports.
//
// A hop. Ranks are pods. Two pods of one node are two NCCL hosts (their
// hostnames and IPC namespaces differ), so they talk NIC to NIC through the
// leaf like pods of two nodes: there is no faster intra-node class. NVLink
// carries the traffic between the GPUs inside one pod, which the model does
// not see. A pod's traffic is spread over its NICs, one channel per NIC
// pair: the hop between pods of a and b NICs uses min(a, b) pairs, the NICs
// matched under the same leaf first, then under the same S1, then the rest,
// as NCCL's rail-aligned channels do. Each pair is of a hop class: the same
// leaf (S0), two leaves of one S1, or two S1s (through the spine). The
// traffic is split evenly over the channels, so the hop's bandwidth is the
// number of pairs times the bandwidth of its slowest pair.
//
// A pair's bandwidth is the line rate of its class divided by the class's
// oversubscription: under a full load of the fabric, a flow through a tier
// oversubscribed k:1 gets 1/k of the rate.

// hopClass is the highest tier one NIC pair's traffic crosses.
type hopClass int

const (
	// HopS0: both NICs under one leaf.
	HopS0 hopClass = iota
	// HopS1: two leaves of one S1.
	HopS1
	// HopSpine: two S1s (or a leaf whose S1 is unknown).
	HopSpine
	NumHopClasses
)

// String names the class as the flags do.
func (c hopClass) String() string {
	switch c {
	case HopS0:
		return "s0"
	case HopS1:
		return "s1"
	case HopSpine:
		return "spine"
	}
	return fmt.Sprintf("class-%d", int(c))
}

// HopClassText says what each class's flags are about.
var HopClassText = [NumHopClasses]string{
	HopS0:    "under one leaf (S0)",
	HopS1:    "between two leaves of one S1",
	HopSpine: "between two S1s (through the spine)",
}

// FlagValues lists the model's rates and oversubscriptions by flag name.
func (m AllReduceModel) FlagValues() map[string]float64 {
	out := map[string]float64{}
	for c := HopS0; c < NumHopClasses; c++ {
		out["gbps-"+c.String()] = m.Gbps[c]
		out["oversub-"+c.String()] = m.Oversub[c]
	}
	return out
}

// AllReduceModel holds the link rates and oversubscriptions of the
// all-reduce model, per hop class (HopS0, HopS1, HopSpine).
type AllReduceModel struct {
	// Gbps is the line rate, per NIC, of the links a pair of each class
	// crosses: NIC to leaf; leaf to S1; S1 to spine.
	Gbps [NumHopClasses]float64
	// Oversub is the oversubscription a pair of each class sees end to end
	// (1 is non-blocking, 2 is 2:1).
	Oversub [NumHopClasses]float64
	// MessageBytes is the all-reduce's message size.
	MessageBytes float64
}

// DefaultAllReduceModel is 400 Gb/s links on every tier, non-blocking
// within a leaf, 2:1 to S1 and 4:1 to the spine, and a 1 GiB message.
func DefaultAllReduceModel() AllReduceModel {
	return AllReduceModel{
		Gbps:         [NumHopClasses]float64{400, 400, 400},
		Oversub:      [NumHopClasses]float64{1, 2, 4},
		MessageBytes: 1 << 30,
	}
}

// Validate checks that every rate, oversubscription and the message size
// are positive and finite.
func (m AllReduceModel) Validate() error {
	for c := HopS0; c < NumHopClasses; c++ {
		if !(m.Gbps[c] > 0) || math.IsInf(m.Gbps[c], 0) {
			return fmt.Errorf("--gbps-%s must be a positive number, got %v", c, m.Gbps[c])
		}
		if !(m.Oversub[c] >= 1) || math.IsInf(m.Oversub[c], 0) {
			return fmt.Errorf("--oversub-%s must be at least 1, got %v", c, m.Oversub[c])
		}
	}
	if !(m.MessageBytes > 0) || math.IsInf(m.MessageBytes, 0) {
		return fmt.Errorf("all-reduce message size must be positive, got %v", m.MessageBytes)
	}
	return nil
}

// pairGbps is the bandwidth one NIC pair of class c gets.
func (m AllReduceModel) pairGbps(c hopClass) float64 { return m.Gbps[c] / m.Oversub[c] }

// ringSeconds is the time of the all-reduce over a ring whose hop i (rank
// i to rank i+1, the last to rank 0) has bandwidth gbps[i]. A ring of
// fewer than two ranks moves nothing.
func (m AllReduceModel) ringSeconds(gbps []float64) float64 {
	p := len(gbps)
	if p < 2 {
		return 0
	}
	slowest := slices.Min(gbps)
	bytes := 2 * float64(p-1) / float64(p) * m.MessageBytes
	return bytes * 8 / (slowest * 1e9)
}

// nicEnd is one NIC as the model sees it: its leaf and the leaf's S1 ("" if
// unknown).
type nicEnd struct {
	leaf topology.S0ID
	s1   topology.S1ID
}

// pairClass is the class of a pair of NICs.
func pairClass(a, b nicEnd) hopClass {
	switch {
	case a.leaf == b.leaf:
		return HopS0
	case a.s1 != "" && a.s1 == b.s1:
		return HopS1
	}
	return HopSpine
}

// hopGbps is the bandwidth of the hop between pods with NICs a and b:
// min(len(a), len(b)) pairs, matched under one leaf first, then under one
// S1, times the slowest pair. Pods without NICs have no RDMA hop (0).
func (m AllReduceModel) hopGbps(a, b []nicEnd) float64 {
	k := min(len(a), len(b))
	if k == 0 {
		return 0
	}
	left := append([]nicEnd(nil), a...)
	right := append([]nicEnd(nil), b...)
	worst := HopS0
	pairs := 0
	// match takes pairs whose class is at most c, greedily.
	match := func(c hopClass) {
		for i := 0; i < len(left) && pairs < k; i++ {
			for j := 0; j < len(right); j++ {
				if pairClass(left[i], right[j]) <= c {
					worst = max(worst, pairClass(left[i], right[j]))
					left = slices.Delete(left, i, i+1)
					right = slices.Delete(right, j, j+1)
					pairs++
					i--
					break
				}
			}
		}
	}
	for c := HopS0; c < NumHopClasses && pairs < k; c++ {
		match(c)
	}
	return float64(k) * m.pairGbps(worst)
}

// nicEnds lists the leaves (with their S1s) of an assignment's NICs,
// sorted, read from the benchmark's fabric. NICs the fabric does not know
// are left out.
func nicEnds(f *topology.Fabric, a placement.Assignment) []nicEnd {
	var out []nicEnd
	for _, nic := range a.NICs() {
		leaf, ok := f.NICLeaf(a.Node, nic)
		if !ok {
			continue
		}
		var s1 topology.S1ID
		if l, ok := f.Leaf(leaf); ok {
			s1 = l.S1
		}
		out = append(out, nicEnd{leaf: leaf, s1: s1})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].leaf < out[j].leaf })
	return out
}

// PlacedSeconds is the all-reduce time over a gang placed as byRank (its
// assignments in rank order). Pods without NICs take no part in the RDMA
// ring and are left out.
func (m AllReduceModel) PlacedSeconds(f *topology.Fabric, byRank []placement.Assignment) float64 {
	var ring [][]nicEnd
	for _, a := range byRank {
		if ends := nicEnds(f, a); len(ends) > 0 {
			ring = append(ring, ends)
		}
	}
	gbps := make([]float64, len(ring))
	for i := range ring {
		gbps[i] = m.hopGbps(ring[i], ring[(i+1)%len(ring)])
	}
	return m.ringSeconds(gbps)
}

// FloorRing describes a gang's floor placement to the model: the NICs of
// each RDMA pod in rank order, whether all of them can share one set of
// leaves (then every pair is under one leaf), and otherwise the class the
// hops between leaf sets cross (HopS1 when the gang fits in one S1).
type FloorRing struct {
	nics  []int64
	alike bool
	cross hopClass
}

// FloorSeconds is the all-reduce time of the gang on its floor placement,
// the fewest leaves the oracle finds on an empty fabric. When every pod can
// share those leaves, every pair is under one leaf. Otherwise the ring
// holds at least two leaf sets, so at least two hops cross between them;
// the floor puts those two crossings on the hops with the most NIC pairs
// and keeps every other hop under one leaf. It is a lower bound on the
// time of any placement on those leaves, not a placement one can always
// build.
func (m AllReduceModel) FloorSeconds(fr FloorRing) float64 {
	p := len(fr.nics)
	if p < 2 {
		return 0
	}
	pairs := make([]float64, p)
	for i := range pairs {
		pairs[i] = float64(min(fr.nics[i], fr.nics[(i+1)%p]))
	}
	gbps := make([]float64, p)
	for i, k := range pairs {
		gbps[i] = k * m.pairGbps(HopS0)
	}
	if !fr.alike {
		order := make([]int, p)
		for i := range order {
			order[i] = i
		}
		sort.SliceStable(order, func(a, b int) bool { return pairs[order[a]] > pairs[order[b]] })
		for _, i := range order[:2] {
			gbps[i] = pairs[i] * m.pairGbps(fr.cross)
		}
	}
	return m.ringSeconds(gbps)
}

// Quantile is the q-Quantile (0 < q <= 1) of xs by the nearest-rank rule:
// the smallest value at least a share q of the values are at most. It
// returns 0 for no values.
func Quantile(xs []float64, q float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	i := int(math.Ceil(q*float64(len(s)))) - 1
	return s[min(max(i, 0), len(s)-1)]
}
