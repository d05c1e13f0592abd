package replay

import (
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/klog/v2"

	"github.com/rdmatopo/rdmatopo/core/ledger"
	"github.com/rdmatopo/rdmatopo/core/placement"
	"github.com/rdmatopo/rdmatopo/core/topology"
	"github.com/rdmatopo/rdmatopo/internal/devtools/bench/trace"
	"github.com/rdmatopo/rdmatopo/internal/sim"
	"github.com/rdmatopo/rdmatopo/internal/testing/builders"
	"github.com/rdmatopo/rdmatopo/internal/workload"
)

func TestMain(m *testing.M) {
	// Volcano logs every bind and revert through klog; keep test and
	// benchmark output (and timings) free of it.
	klog.SetLogger(logr.Discard())
	os.Exit(m.Run())
}

// benchSizes are the cluster sizes of the Go benchmarks.
var benchSizes = []int{1000, 4000, 10000}

// sessionBatch is the gangs one benchmarked session must place: the trace
// gangs of the first few arrival cycles (about 1 gang per 50 nodes).
func sessionBatch(nodes int) []trace.GangSpec {
	tc := trace.NewTrace(nodes/5, 1)
	var out []trace.GangSpec
	for _, g := range tc.Gangs {
		if g.Arrive <= trace.ArrivalCycles/10 {
			out = append(out, g)
		}
	}
	return out
}

// BenchmarkSession times one scheduling session (OpenSession, every action,
// CloseSession) of each conf on a cluster with ~40% of its NUMA zones taken
// and a batch of pending gangs. Building the simulator is not timed.
func BenchmarkSession(b *testing.B) {
	confs, err := Confs()
	if err != nil {
		b.Fatal(err)
	}
	for _, nodes := range benchSizes {
		batch := sessionBatch(nodes)
		for _, name := range ConfOrder {
			b.Run(fmt.Sprintf("nodes=%d/conf=%s", nodes, name), func(b *testing.B) {
				b.ReportAllocs()
				var session time.Duration
				binds := 0
				for i := 0; i < b.N; i++ {
					b.StopTimer()
					s := benchSim(b, confs[name], nodes, batch)
					b.StartTimer()
					rep, err := s.RunCycle()
					if err != nil {
						b.Fatal(err)
					}
					session += rep.Duration
					binds += len(rep.Binds)
				}
				b.ReportMetric(float64(binds)/float64(b.N), "binds/op")
				b.ReportMetric(session.Seconds()/float64(b.N), "session-s/op")
			})
		}
	}
}

// benchSim returns a simulator of conf over the benchmark cluster of nodes
// nodes with gangs submitted, a second apart.
func benchSim(b *testing.B, conf *sim.Conf, nodes int, gangs []trace.GangSpec) *sim.Simulator {
	b.Helper()
	s, err := sim.New(conf, trace.NewCluster(nodes, 1), SimOptions(0))
	if err != nil {
		b.Fatal(err)
	}
	for j, g := range gangs {
		if err := s.Submit(trace.GangSet(g, workload.Epoch.Add(time.Duration(j)*time.Second))); err != nil {
			b.Fatal(err)
		}
	}
	return s
}

// BenchmarkPlan times the placement planner alone on the benchmark cluster
// (S1s from the node label, pre-bound pods in the ledger) for one gang.
func BenchmarkPlan(b *testing.B) {
	gangs := []struct {
		name string
		pods int
		kind trace.PodKind
	}{
		{"half-x16", 16, trace.KindHalf},
		{"half-x64", 64, trace.KindHalf},
		{"small-x8", 8, trace.KindSmall},
		{"full-x8", 8, trace.KindFull},
	}
	for _, nodes := range benchSizes {
		cluster := trace.NewCluster(nodes, 1)
		cfg := topology.Config{S1NodeLabel: builders.S1Label}.WithDefaults()
		fabric := topology.Build(cfg, cluster.Nodes, cluster.CNRs)
		l, errs := ledger.Rebuild(cfg, cluster.Pods, fabric)
		if len(errs) > 0 {
			b.Fatal(errs[0])
		}
		for _, g := range gangs {
			b.Run(fmt.Sprintf("nodes=%d/gang=%s", nodes, g.name), func(b *testing.B) {
				gang := placement.Gang{Job: "default/bench", Need: g.pods, Mode: placement.ModeSoft, HighestTier: placement.TierCluster}
				for i := 0; i < g.pods; i++ {
					gang.Pods = append(gang.Pods, placement.Pod{UID: fmt.Sprint("p", i), Name: "default/bench", Shape: g.kind.Shape()})
				}
				b.ReportAllocs()
				for i := 0; i < b.N; i++ {
					// A fresh state per plan: the session builds one per cycle.
					st := placement.NewState(fabric, l)
					if plan, fail := st.Plan(gang); fail != nil || len(plan.Assignments) != g.pods {
						b.Fatalf("gang %s does not fit: %v", g.name, fail)
					}
				}
			})
		}
	}
}

// BenchmarkPreemptClaims times one session of the rdmatopo conf in which
// waiting hard gangs find no pod they may evict (the cluster's running
// pods are of their priority) and choose rooms to claim: each gang needs a
// whole S1 (tier s1) or more than a node (tier node: it fits no room, so
// every room tried is planned). An untimed first session places the gangs
// that fit (free S1s); the timed one runs with the others waiting.
// Building the simulator is not timed.
func BenchmarkPreemptClaims(b *testing.B) {
	confs, err := Confs()
	if err != nil {
		b.Fatal(err)
	}
	const submitted = 32
	for _, nodes := range []int{1000, 10000} {
		// Zones per S1: two per node.
		zonesPerS1 := map[string]int{}
		for _, n := range trace.NewCluster(nodes, 1).Nodes {
			zonesPerS1[n.Labels[builders.S1Label]] += 2
		}
		maxS1 := 0
		for _, z := range zonesPerS1 {
			maxS1 = max(maxS1, z)
		}
		for _, tc := range []struct {
			tier placement.Tier
			pods int
		}{
			{placement.TierS1, maxS1},
			{placement.TierNode, 3},
		} {
			b.Run(fmt.Sprintf("nodes=%d/tier=%s", nodes, tc.tier), func(b *testing.B) {
				b.ReportAllocs()
				var session time.Duration
				binds, waiting := 0, 0
				gangs := make([]trace.GangSpec, submitted)
				for j := range gangs {
					gangs[j] = trace.GangSpec{Name: fmt.Sprintf("wait-%02d", j), Pods: tc.pods, Kind: trace.KindHalf,
						Mode: placement.ModeHard, HighestTier: tc.tier}
				}
				for i := 0; i < b.N; i++ {
					b.StopTimer()
					s := benchSim(b, confs[ConfRDMATopo], nodes, gangs)
					first, err := s.RunCycle()
					if err != nil {
						b.Fatal(err)
					}
					waiting += submitted - len(first.Binds)/tc.pods
					b.StartTimer()
					rep, err := s.RunCycle()
					if err != nil {
						b.Fatal(err)
					}
					session += rep.Duration
					binds += len(rep.Binds)
				}
				if binds != 0 || waiting < b.N*submitted/2 {
					b.Fatalf("%d binds, %d gangs waiting over %d sessions: the benchmark no longer times claims", binds, waiting, b.N)
				}
				b.ReportMetric(float64(waiting)/float64(b.N), "waiting/op")
				b.ReportMetric(session.Seconds()/float64(b.N), "session-s/op")
			})
		}
	}
}

// BenchmarkNextSession times rdmatopo's second session on a simulator whose
// first session placed a batch of gangs, with a new batch pending: what a
// session costs once state is carried from the last one (the actions' node
// sets of the predicates, the planner's node views and leaf statistics in
// the plugin's runtime, where nothing changed).
func BenchmarkNextSession(b *testing.B) {
	confs, err := Confs()
	if err != nil {
		b.Fatal(err)
	}
	for _, nodes := range benchSizes {
		batch := sessionBatch(nodes)
		half := len(batch) / 2
		b.Run(fmt.Sprintf("nodes=%d", nodes), func(b *testing.B) {
			b.ReportAllocs()
			var session time.Duration
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				s := benchSim(b, confs[ConfRDMATopo], nodes, batch[:half])
				if _, err := s.RunCycle(); err != nil {
					b.Fatal(err)
				}
				for j, g := range batch[half:] {
					if err := s.Submit(trace.GangSet(g, workload.Epoch.Add(time.Duration(half+j)*time.Second))); err != nil {
						b.Fatal(err)
					}
				}
				b.StartTimer()
				rep, err := s.RunCycle()
				if err != nil {
					b.Fatal(err)
				}
				session += rep.Duration
			}
			b.ReportMetric(session.Seconds()/float64(b.N), "session-s/op")
		})
	}
}
