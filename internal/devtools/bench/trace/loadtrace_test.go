package trace

import (
	"reflect"
	"testing"

	"github.com/rdmatopo/rdmatopo/core/placement"
	"github.com/rdmatopo/rdmatopo/core/topology"
	"github.com/rdmatopo/rdmatopo/internal/testing/builders"
)

func TestNewHighLoadTrace(t *testing.T) {
	const nodes = 1000
	a, b := NewHighLoadTrace(nodes, 7), NewHighLoadTrace(nodes, 7)
	if !reflect.DeepEqual(a, b) {
		t.Fatal("the same seed gave two traces")
	}
	if reflect.DeepEqual(a, NewHighLoadTrace(nodes, 8)) {
		t.Fatal("two seeds gave the same trace")
	}
	cluster := NewCluster(nodes, 7)
	// Zones per S1 of the generated cluster, read off its nodes (two NUMA
	// zones of 4 GPUs each), and NICs per S0 off its KCNRs' fabric.
	zonesPerS1 := map[string]int{}
	for _, n := range cluster.Nodes {
		zonesPerS1[n.Labels[builders.S1Label]] += 2
	}
	maxS1 := 0
	for _, z := range zonesPerS1 {
		maxS1 = max(maxS1, z)
	}
	f := topology.Build(topology.Config{S1NodeLabel: builders.S1Label}.WithDefaults(), cluster.Nodes, cluster.CNRs)
	maxLeafNICs := 0
	for _, id := range f.LeafIDs() {
		l, _ := f.Leaf(id)
		n := 0
		for _, slot := range l.Slots {
			n += len(slot.NICs)
		}
		maxLeafNICs = max(maxLeafNICs, n)
	}

	var lowGPU int64
	classes := map[int]int{}
	names := map[string]bool{}
	big := 0
	for i, g := range a.Gangs {
		if names[g.Name] {
			t.Fatalf("gang name %s twice", g.Name)
		}
		names[g.Name] = true
		classes[g.Class]++
		if i > 0 && g.Arrive < a.Gangs[i-1].Arrive {
			t.Fatalf("gang %s arrives before the gang ahead of it", g.Name)
		}
		if g.Class == ClassLow {
			if g.Pods < 1 || g.Pods > 4 || g.Mode != placement.ModeSoft {
				t.Errorf("low gang %s: %d pods, mode %s; want 1..4 soft", g.Name, g.Pods, g.Mode)
			}
			if g.Arrive == 1 {
				lowGPU += int64(g.Pods) * g.Kind.Shape().GPU
			}
		}
		if !g.Big {
			continue
		}
		big++
		if g.Class == ClassLow || g.Mode != placement.ModeHard || g.Pods < 32 || g.Pods > 128 {
			t.Errorf("large gang %s: class %d, mode %s, %d pods; want medium or high, hard, 32..128", g.Name, g.Class, g.Mode, g.Pods)
		}
		// The limit holds on an empty cluster.
		switch g.HighestTier {
		case placement.TierS1:
			if g.Kind != KindHalf || g.Pods > maxS1 {
				t.Errorf("large gang %s: %d pods of %s held to one S1 of at most %d zones", g.Name, g.Pods, g.Kind, maxS1)
			}
		case placement.TierS0:
			if int64(g.Pods)*g.Kind.Shape().NICs > int64(maxLeafNICs) {
				t.Errorf("large gang %s: %d pods of %s held to one S0 of at most %d NICs", g.Name, g.Pods, g.Kind, maxLeafNICs)
			}
		default:
			t.Errorf("large gang %s: tier %s", g.Name, g.HighestTier)
		}
	}
	if got := lowGPU; got < nodes*GPUsPerNode {
		t.Errorf("low jobs before cycle 1 ask for %d GPUs, want at least the cluster's %d", got, nodes*GPUsPerNode)
	}
	for c := range loadClasses {
		if classes[c] == 0 {
			t.Errorf("no gang of class %s", loadClasses[c].name)
		}
	}
	if big < 10 {
		t.Errorf("%d large gangs on %d nodes, want at least 10", big, nodes)
	}
	if a.MeasureFrom < 1 || a.MeasureTo > a.Cycles || a.MeasureFrom > a.MeasureTo {
		t.Errorf("occupancy window %d..%d outside 1..%d", a.MeasureFrom, a.MeasureTo, a.Cycles)
	}
}
