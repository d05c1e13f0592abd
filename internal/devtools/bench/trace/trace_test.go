package trace

import (
	"fmt"
	"testing"

	"github.com/rdmatopo/rdmatopo/core/placement"
	"github.com/rdmatopo/rdmatopo/core/topology"
	"github.com/rdmatopo/rdmatopo/internal/testing/builders"
)

func TestHardTier(t *testing.T) {
	for _, tc := range []struct {
		fabric   string
		kind     PodKind
		pods     int
		wantTier placement.Tier
		wantHard bool
	}{
		{FabricProvider, KindHalf, 1, placement.TierS0, true},
		{FabricProvider, KindHalf, 8, placement.TierS0, true},
		{FabricProvider, KindHalf, 9, placement.TierS1, true},
		{FabricProvider, KindHalf, 64, placement.TierS1, true},
		{FabricProvider, KindSmall, 16, placement.TierS0, true},
		{FabricProvider, KindSmall, 17, placement.TierS1, true},
		// A whole-node pod's NICs hang off two S0s.
		{FabricProvider, KindFull, 1, placement.TierS1, true},
		{FabricProvider, KindFull, 8, placement.TierS1, true},
		{FabricProvider, KindFull, 9, placement.TierCluster, false},
		{FabricProvider, KindCPU, 64, placement.TierS1, true},
		// A rail zone's NICs hang off one rail each: 2-NIC pods never
		// share one S0, 1-NIC pods do.
		{FabricRail, KindHalf, 1, placement.TierS1, true},
		{FabricRail, KindHalf, 64, placement.TierS1, true},
		{FabricRail, KindSmall, 16, placement.TierS0, true},
		{FabricRail, KindSmall, 17, placement.TierS1, true},
		{FabricRail, KindFull, 8, placement.TierS1, true},
		{FabricRail, KindFull, 9, placement.TierCluster, false},
		{FabricMixed, KindHalf, 8, placement.TierS1, true},
		{FabricMixed, KindSmall, 16, placement.TierS0, true},
	} {
		t.Run(fmt.Sprintf("%s/%s-x%d", tc.fabric, tc.kind, tc.pods), func(t *testing.T) {
			tier, hard := hardTier(tc.fabric, tc.kind, tc.pods)
			if tier != tc.wantTier || hard != tc.wantHard {
				t.Errorf("hardTier() = %v, %v; want %v, %v", tier, hard, tc.wantTier, tc.wantHard)
			}
		})
	}
}

// TestHardGangsFitEmptyFabric checks that every hard-mode gang of generated
// traces can meet its tier limit on an empty benchmark fabric of each kind.
func TestHardGangsFitEmptyFabric(t *testing.T) {
	for _, tc := range []struct {
		fabric string
		nodes  int
	}{
		{FabricProvider, 256}, // two S1s of 8 S0s
		{FabricRail, 256},     // four S1s of two units
		{FabricMixed, 384},    // two S1s of each part
	} {
		t.Run(tc.fabric, func(t *testing.T) {
			cluster, err := NewFabricCluster(tc.fabric, tc.nodes, 1)
			if err != nil {
				t.Fatal(err)
			}
			cfg := topology.Config{S1NodeLabel: builders.S1Label}.WithDefaults()
			fabric := topology.Build(cfg, cluster.Nodes, cluster.CNRs)
			checked := map[[2]int]bool{}
			for seed := uint64(1); seed <= 5; seed++ {
				for _, g := range NewFabricTrace(tc.fabric, 400, seed).Gangs {
					key := [2]int{int(g.Kind), g.Pods}
					if g.Mode != placement.ModeHard || g.Kind == KindCPU || checked[key] {
						continue
					}
					checked[key] = true
					gang := placement.Gang{Job: "default/" + g.Name, Need: g.Pods, Mode: g.Mode, HighestTier: g.HighestTier}
					for i := 0; i < g.Pods; i++ {
						gang.Pods = append(gang.Pods, placement.Pod{UID: fmt.Sprint(g.Name, "-", i), Name: g.Name, Shape: g.Kind.Shape()})
					}
					if _, fail := placement.NewState(fabric, nil).Plan(gang); fail != nil {
						t.Errorf("hard gang of %d %s pods under %s does not fit an empty fabric: %v", g.Pods, g.Kind, g.HighestTier, fail)
					}
				}
			}
			if len(checked) < 10 {
				t.Errorf("only %d hard gang shapes checked, want at least 10", len(checked))
			}
		})
	}
}

// TestPodKindTextRoundTrip: every kind reads back as MarshalText writes
// it (the plot reads the committed bench JSON); an unknown name is an
// error.
func TestPodKindTextRoundTrip(t *testing.T) {
	for k := KindHalf; k <= KindGPUOnly+1; k++ {
		b, err := k.MarshalText()
		if err != nil {
			t.Fatal(err)
		}
		var got PodKind
		if err := got.UnmarshalText(b); err != nil || got != k {
			t.Errorf("%s: read back %v, %v", b, got, err)
		}
	}
	var k PodKind
	if err := k.UnmarshalText([]byte("9gpu")); err == nil {
		t.Error("UnmarshalText(9gpu) succeeded")
	}
}
