package bench

import (
	"fmt"
	"testing"

	"github.com/rdmatopo/rdmatopo/framework/placement"
	"github.com/rdmatopo/rdmatopo/framework/topology"
	"github.com/rdmatopo/rdmatopo/internal/testing/builders"
)

func TestHardTier(t *testing.T) {
	for _, tc := range []struct {
		kind     PodKind
		pods     int
		wantTier placement.Tier
		wantHard bool
	}{
		{KindHalf, 1, placement.TierS0, true},
		{KindHalf, 8, placement.TierS0, true},
		{KindHalf, 9, placement.TierS1, true},
		{KindHalf, 64, placement.TierS1, true},
		{KindSmall, 16, placement.TierS0, true},
		{KindSmall, 17, placement.TierS1, true},
		// A whole-node pod's NICs hang off two S0s.
		{KindFull, 1, placement.TierS1, true},
		{KindFull, 8, placement.TierS1, true},
		{KindFull, 9, placement.TierCluster, false},
		{KindCPU, 64, placement.TierS1, true},
	} {
		t.Run(fmt.Sprintf("%s-x%d", tc.kind, tc.pods), func(t *testing.T) {
			tier, hard := hardTier(tc.kind, tc.pods)
			if tier != tc.wantTier || hard != tc.wantHard {
				t.Errorf("hardTier() = %v, %v; want %v, %v", tier, hard, tc.wantTier, tc.wantHard)
			}
		})
	}
}

// TestHardGangsFitEmptyFabric checks that every hard-mode gang of generated
// traces can meet its tier limit on an empty benchmark fabric.
func TestHardGangsFitEmptyFabric(t *testing.T) {
	cluster := NewCluster(256, 1) // two S1s of 8 S0s
	cfg := topology.Config{S1NodeLabel: builders.S1Label}.WithDefaults()
	fabric := topology.Build(cfg, cluster.Nodes, cluster.CNRs)
	checked := map[[2]int]bool{}
	for seed := uint64(1); seed <= 5; seed++ {
		for _, g := range NewTrace(400, seed).Gangs {
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
}
