package grade

// Grading a placed gang against the oracle's optimum, and the floor a gang
// has on an empty fabric.

import (
	"fmt"

	"github.com/rdmatopo/rdmatopo/core/placement"
	"github.com/rdmatopo/rdmatopo/internal/devtools/bench/oracle"
	"github.com/rdmatopo/rdmatopo/internal/devtools/bench/trace"
)

// GangFloor is what the benchmark knows of a gang's floor placement on an
// empty fabric: the fewest leaves the oracle finds, and the ring the
// all-reduce model times on it.
type GangFloor struct {
	Leaves int
	Ring   FloorRing
}

// FloorOf asks the oracle, on the empty fabric of empty, for gang g's
// fewest leaves; whether every RDMA pod of g can use the same leaves (the
// fewest leaves of the gang are no more than the fewest one pod of its
// widest shape needs: then each pod spans all of them); and whether the
// gang fits within one S1.
func FloorOf(empty *Tracker, g trace.GangSpec) (GangFloor, error) {
	o := empty.OptimumOf(g)
	if o.Status != oracle.OracleExact {
		return GangFloor{}, fmt.Errorf("gang %s was placed but the oracle finds no floor on an empty fabric: %s %s", g.Name, o.Status, o.Reason)
	}
	fl := GangFloor{Leaves: o.Leaves, Ring: FloorRing{cross: HopSpine}}
	widest := 0
	// The fewest leaves of one pod, by shape (a gang has one or two).
	ones := map[placement.Shape]oracle.OracleResult{}
	for i := 0; i < g.Pods; i++ {
		sh := g.ShapeOf(i)
		if sh.NICs == 0 {
			continue
		}
		fl.Ring.nics = append(fl.Ring.nics, sh.NICs)
		one, ok := ones[sh]
		if !ok {
			one = empty.Optimum(1, sh)
			ones[sh] = one
		}
		if one.Status != oracle.OracleExact {
			return GangFloor{}, fmt.Errorf("gang %s: the oracle finds no leaves for one pod of %s on an empty fabric: %s %s", g.Name, sh, one.Status, one.Reason)
		}
		widest = max(widest, one.Leaves)
	}
	fl.Ring.alike = o.Leaves <= widest
	if !fl.Ring.alike && empty.FitsOneS1(g) {
		fl.Ring.cross = HopS1
	}
	return fl, nil
}

// FloorKey identifies the gangs that share an optimum on the empty fabric:
// the same pods, shapes and constraints.
func FloorKey(g trace.GangSpec) string {
	master := "-"
	if g.Master != nil {
		master = g.Master.String()
	}
	return fmt.Sprintf("%d/%s/%s/%t/%t/%d/%t", g.Pods, g.Kind, master, g.Tolerates, g.Pools, g.MemoryGi, g.HostPort != 0)
}

// Grade is how a placed gang compares with the optimum.
type Grade int

const (
	// GradeOneNode: the whole gang is on one node with its NICs under one
	// leaf (tier node): at the optimum whatever the oracle says. One node
	// whose NICs hang off several leaves is graded by its leaves like any
	// other placement.
	GradeOneNode Grade = iota
	// GradeAt: it spanned the oracle's minimum of S0s.
	GradeAt
	// GradeBelow: it spanned fewer (the state changed between its binds,
	// or its pods were placed NUMA-misaligned); counted as at the optimum.
	GradeBelow
	// GradeOff: it spanned more S0s than the minimum.
	GradeOff
	// GradeInfeasible: the oracle found no NUMA-aligned placement on the
	// state it saw; not at the optimum.
	GradeInfeasible
	// GradeUnknown: the oracle could not decide (or was not asked); left
	// out of atOptimumFrac.
	GradeUnknown
)

// GradeGang grades a gang that spanned s0 S0s, all on one node or not,
// against the oracle's answer at its first bind (nil: none).
func GradeGang(s0 int, oneNode bool, opt *oracle.OracleResult) Grade {
	switch {
	case oneNode && s0 <= 1:
		return GradeOneNode
	case opt == nil || opt.Status == oracle.OracleUnknown:
		return GradeUnknown
	case opt.Status == oracle.OracleInfeasible:
		return GradeInfeasible
	case s0 == opt.Leaves:
		return GradeAt
	case s0 < opt.Leaves:
		return GradeBelow
	}
	return GradeOff
}

// GradeGangS1 grades a gang that spanned s0 S0s in s1 S1s against the
// oracle's fewest leaves and, among those, fewest S1s, at its first bind
// (nil: none): at the optimum when it is on one node under one leaf, when
// it spanned fewer leaves than the minimum, or the minimum of leaves in no
// more S1s than the oracle's fewest; off when it spanned more leaves, or
// the minimum of leaves in more S1s. Undecided S1s (the oracle's S1Reason)
// are GradeUnknown.
func GradeGangS1(s0, s1 int, oneNode bool, opt *oracle.OracleResult) Grade {
	gr := GradeGang(s0, oneNode, opt)
	if gr != GradeAt {
		return gr
	}
	switch {
	case opt.S1Reason != "":
		return GradeUnknown
	case s1 < opt.S1s:
		return GradeBelow
	case s1 > opt.S1s:
		return GradeOff
	}
	return GradeAt
}

// Tally counts a run's gangs by grade.
type Tally struct{ At, OneNode, Below, Unknown, Infeasible int }

// Add counts one gang's grade and returns it. A gang on one node, at or
// below the optimum is at the optimum.
func (t *Tally) Add(gr Grade) Grade {
	switch gr {
	case GradeOneNode:
		t.At++
		t.OneNode++
	case GradeAt:
		t.At++
	case GradeBelow:
		t.At++
		t.Below++
	case GradeUnknown:
		t.Unknown++
	case GradeInfeasible:
		t.Infeasible++
	}
	return gr
}

// AtFrac is the share of the gangs the oracle decided that are at the
// optimum (0 when it decided none).
func (t *Tally) AtFrac(gangs int) float64 {
	if decided := gangs - t.Unknown; decided > 0 {
		return float64(t.At) / float64(decided)
	}
	return 0
}

// OneNode reports whether every assignment is on one node.
func OneNode(assign []placement.Assignment) bool {
	if len(assign) == 0 {
		return false
	}
	for _, a := range assign[1:] {
		if a.Node != assign[0].Node {
			return false
		}
	}
	return true
}
