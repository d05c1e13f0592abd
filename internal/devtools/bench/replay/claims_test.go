package replay

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/rdmatopo/rdmatopo/core/placement"
	"github.com/rdmatopo/rdmatopo/core/preemption"
	"github.com/rdmatopo/rdmatopo/core/topology"
	"github.com/rdmatopo/rdmatopo/internal/devtools/bench/grade"
	"github.com/rdmatopo/rdmatopo/internal/devtools/bench/trace"
	"github.com/rdmatopo/rdmatopo/internal/testing/builders"
)

// claimFabric is a fabric of two S1s of four leaves each.
func claimFabric(t *testing.T) *topology.Fabric {
	t.Helper()
	nodes, cnrs := builders.ClusterShape{Nodes: 64, ZonesPerLeaf: 16, LeavesPerS1: 4}.Generate()
	f := grade.NewTracker(nodes, cnrs).Fabric()
	if len(f.S1IDs()) != 2 {
		t.Fatalf("fabric has S1s %v, want two", f.S1IDs())
	}
	return f
}

// claimGangs returns trace gangs by "namespace/name", in trace order: a
// hard s1 gang, a hard s0 gang, a hard node gang and a soft one.
func claimGangs() map[string]*gangState {
	specs := []trace.GangSpec{
		{Name: "hard-s1", Mode: placement.ModeHard, HighestTier: placement.TierS1},
		{Name: "hard-s0", Mode: placement.ModeHard, HighestTier: placement.TierS0},
		{Name: "hard-node", Mode: placement.ModeHard, HighestTier: placement.TierNode},
		{Name: "soft", Mode: placement.ModeSoft, HighestTier: placement.TierS1},
		{Name: "young", Mode: placement.ModeSoft, HighestTier: placement.TierS1},
	}
	out := map[string]*gangState{}
	for i, g := range specs {
		out["default/"+g.Name] = &gangState{spec: g, index: i}
	}
	return out
}

// s1Claim is gang name's claim of every leaf of S1 id.
func s1Claim(f *topology.Fabric, name string, id topology.S1ID) preemption.Claim {
	c := preemption.Claim{Job: "uid-" + name, Name: "default/" + name, Room: "s1 " + string(id), S0s: map[topology.S0ID]bool{}}
	for _, leaf := range f.LeavesOf(id) {
		c.S0s[leaf] = true
	}
	return c
}

func TestCheckClaims(t *testing.T) {
	f := claimFabric(t)
	s1 := f.S1IDs()[0]
	leaf := f.LeavesOf(s1)[0]
	node := builders.NodeName(0)
	partial := s1Claim(f, "hard-s1", s1)
	delete(partial.S0s, leaf)
	tests := []struct {
		name    string
		claim   preemption.Claim
		bound   int
		wantErr string
	}{
		{name: "an S1 room", claim: s1Claim(f, "hard-s1", s1)},
		{name: "a leaf room", claim: preemption.Claim{Name: "default/hard-s0", Room: "s0 " + string(leaf), S0s: map[topology.S0ID]bool{leaf: true}}},
		{name: "a node room", claim: preemption.Claim{Name: "default/hard-node", Room: "node " + node, Nodes: map[string]bool{node: true}}},
		{name: "no trace gang", claim: preemption.Claim{Name: "default/other", Room: "node " + node}, wantErr: "no gang of the trace"},
		{name: "a soft gang", claim: s1Claim(f, "soft", s1), wantErr: "only hard gangs claim"},
		{name: "a gang with pods bound", claim: s1Claim(f, "hard-s1", s1), bound: 1, wantErr: "pods bound"},
		{name: "part of an S1", claim: partial, wantErr: "claims 3 leaves, the domain has 4"},
		{name: "a room wider than the tier", claim: s1Claim(f, "hard-s0", s1), wantErr: "not a domain of its highest tier"},
		{name: "an S1 the fabric lacks", claim: preemption.Claim{Name: "default/hard-s1", Room: "s1 nowhere"}, wantErr: "no leaf in the fabric"},
		{name: "another node's room", claim: preemption.Claim{Name: "default/hard-node", Room: "node " + node,
			Nodes: map[string]bool{builders.NodeName(1): true}}, wantErr: "want the one node"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			gangs := claimGangs()
			if g := gangs[tc.claim.Name]; g != nil {
				g.bound = tc.bound
			}
			err := checkClaims(f, []preemption.Claim{tc.claim}, gangs)
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatalf("checkClaims() = %v, want nil", err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Fatalf("checkClaims() = %v, want an error with %q", err, tc.wantErr)
			}
		})
	}
}

func TestKeptOffBy(t *testing.T) {
	f := claimFabric(t)
	s1 := f.S1IDs()[0]
	leaves := map[string]bool{}
	for _, leaf := range f.LeavesOf(s1) {
		leaves[string(leaf)] = true
	}
	node := builders.NodeName(40)
	nodeClaim := preemption.Claim{Name: "default/hard-node", Room: "node " + node, Nodes: map[string]bool{node: true}}
	claims := []preemption.Claim{s1Claim(f, "hard-s1", s1), nodeClaim}
	tests := []struct {
		name   string
		gang   string
		bound  map[string]int
		want   keptOff
		wantNo bool
	}{
		{name: "a younger gang is kept off both rooms", gang: "default/young", want: keptOff{leaves: leaves, nodes: map[string]bool{node: true}}},
		{name: "the claiming gang is not kept off its own room", gang: "default/hard-s1", wantNo: true},
		{name: "the S1 room only, for a gang older than the node claim", gang: "default/hard-s0", want: keptOff{leaves: leaves}},
		{name: "a claim whose gang is bound keeps nothing", gang: "default/young", bound: map[string]int{"default/hard-s1": 2},
			want: keptOff{nodes: map[string]bool{node: true}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			gangs := claimGangs()
			for name, n := range tc.bound {
				gangs[name].bound = n
			}
			got := keptOffBy(claims, gangs, gangs[tc.gang])
			if tc.wantNo {
				if !got.empty() {
					t.Fatalf("keptOffBy() = %+v, want nothing", got)
				}
				return
			}
			if diff := cmp.Diff(tc.want, got, cmp.AllowUnexported(keptOff{})); diff != "" {
				t.Errorf("keptOffBy() differs (-want +got):\n%s", diff)
			}
		})
	}
}
