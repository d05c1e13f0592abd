package trace

import (
	"fmt"
	"math/rand/v2"

	schedulingv1 "k8s.io/api/scheduling/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rdmatopo/rdmatopo/core/placement"
)

// Loads of `rdmatopo-dev bench --load`.
const (
	// LoadNormal is the placement-quality trace (NewFabricTrace): gangs
	// arrive on a partly used cluster, one priority, no preemption needed.
	LoadNormal = "normal"
	// LoadHigh is the preemption trace (NewHighLoadTrace): the cluster kept
	// above 90% of its GPUs busy by many small low-priority jobs, large
	// hard gangs of higher priority arriving into it.
	LoadHigh = "high"
)

// CheckLoad reports whether load names a load of the benchmark.
func CheckLoad(load string) error {
	switch load {
	case LoadNormal, LoadHigh:
		return nil
	}
	return fmt.Errorf("--load must be %s or %s, got %q", LoadNormal, LoadHigh, load)
}

// Priority classes of the high-load trace, lowest first.
var loadClasses = []struct {
	name  string
	value int32
}{{"bench-low", 100}, {"bench-medium", 1000}, {"bench-high", 10000}}

// Indices into loadClasses.
const (
	ClassLow = iota
	ClassMedium
	ClassHigh
)

// PriorityClasses returns the trace's PriorityClasses.
func PriorityClasses() []*schedulingv1.PriorityClass {
	out := make([]*schedulingv1.PriorityClass, len(loadClasses))
	for i, c := range loadClasses {
		out[i] = &schedulingv1.PriorityClass{
			TypeMeta:   metav1.TypeMeta{APIVersion: "scheduling.k8s.io/v1", Kind: "PriorityClass"},
			ObjectMeta: metav1.ObjectMeta{Name: c.name},
			Value:      c.value,
		}
	}
	return out
}

// LoadGang is one gang of the high-load trace.
type LoadGang struct {
	GangSpec
	// Class indexes loadClasses.
	Class int
	// Big marks the large hard gangs whose waits the benchmark reports.
	Big bool
	// Queue names the gang's Queue (loadQueues; "" is the default queue).
	Queue string
	// NonPreemptable marks a gang whose pods carry
	// volcano.sh/preemptable: "false".
	NonPreemptable bool
	// Unannotated marks a gang whose pods, running after the first cycle,
	// are made pods rdmatopo did not place (loadReplay.reinstall).
	Unannotated bool
}

// PriorityClass is the gang's PriorityClass name.
func (g LoadGang) PriorityClass() string { return loadClasses[g.Class].name }

// Priority is the gang's priority value.
func (g LoadGang) Priority() int32 { return loadClasses[g.Class].value }

// LoadTrace is the high-load workload.
type LoadTrace struct {
	// Gangs are in arrival order.
	Gangs []LoadGang
	// Cycles is how many scheduling cycles a replay runs at least.
	Cycles int
	// SettleCycles is how many more cycles a replay may run, with no new
	// arrival, while a hard gang of the trace is not running: a gang still
	// waiting when they are spent is starved, not merely late.
	SettleCycles int
	// MeasureFrom and MeasureTo bound (inclusive) the cycles over which GPU
	// occupancy is averaged: from the first large gang's arrival to the
	// last arrival.
	MeasureFrom, MeasureTo int
}

// High-load trace parameters. The cluster is the provider's fabric with no
// pre-bound pods; low-priority jobs fill it in the first cycle and keep
// arriving faster than they finish, so a backlog waits throughout.
const (
	// loadArrivalCycles is the window of arrivals; loadDrainCycles run
	// after it so that late gangs get their chance.
	loadArrivalCycles = 60
	loadDrainCycles   = 30
	// loadSettleCycles bound the cycles after the drain that run while a
	// hard gang waits (LoadTrace.SettleCycles).
	loadSettleCycles = 60
	// loadFirstBig is the cycle of the first large gang: the cluster is
	// full by then.
	loadFirstBig = 4
	// loadInitialFill is the GPU demand of the low jobs submitted before
	// cycle 1, as a share of the cluster's GPUs; loadOversubscribe scales
	// the low arrivals per cycle against what finishes per cycle.
	loadInitialFill   = 1.0
	loadOversubscribe = 1.3
	// lowMinDuration..lowMaxDuration bound a low job's run time in cycles.
	lowMinDuration = 10
	lowMaxDuration = 50
	// bigEvery is the cycles between large gangs per loadUnitNodes nodes of
	// cluster (two S1s of the provider's fabric); mediumEvery the same for
	// medium gangs.
	loadUnitNodes = 256
	bigEvery      = 3
	mediumEvery   = 2
	// bigMinDuration..bigMaxDuration bound a large or medium gang's run
	// time.
	bigMinDuration = 15
	bigMaxDuration = 30
)

// bigSizes are the sizes of the large hard gangs of 4-GPU pods, with
// weights: 128 such pods fill an S1 of the provider's fabric.
var bigSizes = []struct {
	pods   int
	weight float64
}{{32, 0.30}, {48, 0.20}, {64, 0.25}, {96, 0.15}, {128, 0.10}}

// bigSmallShare is the share of large gangs made of 32 1-GPU pods held
// under one S0 (they fill a leaf's 32 NICs).
const bigSmallShare = 0.2

// NewHighLoadTrace generates the high-load trace for a provider cluster of
// nodes nodes from seed. It is deterministic and does not depend on any
// scheduler: both confs replay the same arrivals.
//
//   - low priority: jobs of 1 to 4 pods (4-GPU or 1-GPU), soft, running
//     lowMinDuration..lowMaxDuration cycles; enough before cycle 1 to ask
//     for every GPU, then each cycle loadOversubscribe times what finishes
//     per cycle on average;
//   - medium priority: soft gangs of 8 to 16 4-GPU pods, and half the large
//     gangs;
//   - high priority: the other half of the large gangs. A large gang is 32
//     to 128 4-GPU pods held to one S1, or 32 1-GPU pods held to one S0:
//     limits an empty cluster meets.
func NewHighLoadTrace(nodes int, seed uint64) *LoadTrace {
	rng := rand.New(rand.NewPCG(seed, 0x6869676c))
	t := &LoadTrace{Cycles: loadArrivalCycles + loadDrainCycles, SettleCycles: loadSettleCycles, MeasureFrom: loadFirstBig, MeasureTo: loadArrivalCycles}
	gpus := float64(nodes) * GPUsPerNode
	n := 0
	add := func(g LoadGang) {
		g.Name = fmt.Sprintf("%s-%05d", loadClasses[g.Class].name[len("bench-"):], n)
		n++
		t.Gangs = append(t.Gangs, g)
	}
	lowJob := func(arrive int) float64 {
		g := LoadGang{Class: ClassLow, GangSpec: GangSpec{Kind: KindHalf, Pods: 1 + rng.IntN(4), Arrive: arrive,
			Duration: lowMinDuration + rng.IntN(lowMaxDuration-lowMinDuration+1),
			Mode:     placement.ModeSoft, HighestTier: placement.TierS1}}
		if rng.IntN(3) == 0 {
			g.Kind = KindSmall
		}
		add(g)
		return float64(int64(g.Pods) * g.Kind.Shape().GPU)
	}
	for demand := 0.0; demand < loadInitialFill*gpus; {
		demand += lowJob(1)
	}
	// Low GPU demand arriving per cycle: what finishes per cycle on a full
	// cluster, oversubscribed.
	perCycle := loadOversubscribe * gpus / float64(lowMinDuration+lowMaxDuration) * 2
	scale := float64(nodes) / loadUnitNodes
	var lowDebt, bigDebt, mediumDebt float64
	for cycle := 2; cycle <= loadArrivalCycles; cycle++ {
		for lowDebt += perCycle; lowDebt > 0; {
			lowDebt -= lowJob(cycle)
		}
		if cycle >= loadFirstBig {
			for bigDebt += scale / bigEvery; bigDebt >= 1; bigDebt-- {
				add(bigGang(rng, cycle))
			}
		}
		for mediumDebt += scale / mediumEvery; mediumDebt >= 1; mediumDebt-- {
			add(LoadGang{Class: ClassMedium, GangSpec: GangSpec{Kind: KindHalf, Pods: 8 + rng.IntN(9), Arrive: cycle,
				Duration: bigMinDuration + rng.IntN(bigMaxDuration-bigMinDuration+1),
				Mode:     placement.ModeSoft, HighestTier: placement.TierS1}})
		}
	}
	assignQueues(t)
	return t
}

// bigGang draws one large hard gang arriving before cycle.
func bigGang(rng *rand.Rand, cycle int) LoadGang {
	g := LoadGang{Big: true, Class: ClassMedium, GangSpec: GangSpec{Arrive: cycle,
		Duration: bigMinDuration + rng.IntN(bigMaxDuration-bigMinDuration+1), Mode: placement.ModeHard}}
	if rng.IntN(2) == 0 {
		g.Class = ClassHigh
	}
	if rng.Float64() < bigSmallShare {
		g.Kind, g.Pods, g.HighestTier = KindSmall, nicsPerLeaf, placement.TierS0
		return g
	}
	g.Kind, g.HighestTier = KindHalf, placement.TierS1
	x := rng.Float64()
	g.Pods = bigSizes[len(bigSizes)-1].pods
	for _, b := range bigSizes {
		if x < b.weight {
			g.Pods = b.pods
			break
		}
		x -= b.weight
	}
	return g
}

// GPUsPerNode is the GPUs of a generated node (two NUMA zones of four).
const GPUsPerNode = 8
