package placement

import (
	"fmt"
	"math/rand"
	"testing"

	"github.com/rdmatopo/rdmatopo/core/ledger"
	"github.com/rdmatopo/rdmatopo/core/topology"
	"github.com/rdmatopo/rdmatopo/internal/testing/builders"
)

// benchState builds a provider-shaped fabric (16 NUMA zones per S0, 8 S0s per
// S1, NUMA-0 and NUMA-1 NICs on different S0s) with a share of zones
// already taken at random, deterministically.
func benchState(b *testing.B, nodes int, taken float64) *State {
	b.Helper()
	ns, cnrs := builders.GenerateCluster(nodes, 16, 8)
	f := topology.Build(topology.Config{S1NodeLabel: builders.S1Label}.WithDefaults(), ns, cnrs)
	l := ledger.New()
	rng := rand.New(rand.NewSource(1))
	for i, n := range ns {
		for numa := 0; numa < 2; numa++ {
			if rng.Float64() >= taken {
				continue
			}
			nics := []topology.NICID{topology.NICID(builders.NUMANICs[numa][0]), topology.NICID(builders.NUMANICs[numa][1])}
			if err := l.Reserve(ledger.Reservation{UID: fmt.Sprintf("busy-%d-%d", i, numa), Namespace: "ns", Name: "busy",
				Node: n.Name, Zones: []ledger.ZoneUse{{NUMA: numa, GPU: 4, NICs: nics}}}); err != nil {
				b.Fatal(err)
			}
		}
	}
	return NewState(f, l)
}

// coldState returns a state with base's reservations and caps (shared, not
// copied: the benchmark plans without changing them) and none of its
// cached node views and leaf statistics.
func coldState(base *State) *State {
	return &State{fabric: base.fabric, taken: base.taken, used: base.used, caps: base.caps,
		views: map[string]*nodeFree{}, leafCache: map[Shape]map[topology.S0ID]*leafStat{}, unusable: map[string]bool{}}
}

// BenchmarkPlan times one gang's plan. mode=warm reuses the state's leaf
// statistics (every gang after the first in a session); mode=cold starts
// from a fresh state (the first gang of a session: every leaf counted).
func BenchmarkPlan(b *testing.B) {
	for _, nodes := range []int{1000, 4000, 10000} {
		for _, size := range []int{8, 64} {
			b.Run(fmt.Sprintf("nodes=%d/gang=%d/mode=cold", nodes, size), func(b *testing.B) {
				base := benchState(b, nodes, 0.3)
				g := gang(size, worker)
				b.ReportAllocs()
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					b.StopTimer()
					s := coldState(base)
					b.StartTimer()
					if p, f := s.Plan(g); p == nil {
						b.Fatalf("gang not placed: %v", f)
					}
				}
			})
			b.Run(fmt.Sprintf("nodes=%d/gang=%d/mode=warm", nodes, size), func(b *testing.B) {
				s := benchState(b, nodes, 0.3)
				g := gang(size, worker)
				// Correctness before timing: the gang must be placeable.
				if p, f := s.Plan(g); p == nil {
					b.Fatalf("gang not placed: %v", f)
				}
				b.ReportAllocs()
				b.ResetTimer()
				for b.Loop() {
					s.Plan(g)
				}
			})
		}
	}
}
