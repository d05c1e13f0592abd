package replay

import (
	"fmt"
	"maps"
	"strings"

	"github.com/rdmatopo/rdmatopo/core/placement"
	"github.com/rdmatopo/rdmatopo/core/preemption"
	"github.com/rdmatopo/rdmatopo/core/topology"
)

// keptOff is what the claims of waiting hard gangs keep one gang off when
// it is placed: the NICs under leaves and, for node rooms, whole nodes.
// The scheduler does this by design (a claim keeps younger gangs of the
// claiming gang's priority out of its room, so that a large hard gang is
// not starved by smaller ones), so the gang is graded against the fewest
// leaves outside those rooms.
type keptOff struct {
	leaves map[string]bool
	nodes  map[string]bool
}

// empty reports whether nothing is kept off.
func (k keptOff) empty() bool { return len(k.leaves) == 0 && len(k.nodes) == 0 }

// checkClaims checks the claims the scheduler keeps at the start of a cycle
// against what a claim is documented to be, using the trace and the fabric
// only: the claiming job is a trace gang, hard, not yet placed, and its room
// is one whole domain of its highest tier (every leaf of one S1 for s1, one
// leaf for s0, one node for node). A claim that is not is an error naming
// it: grading a gang against a room the scheduler invented would hide a
// wrong exclusion.
func checkClaims(f *topology.Fabric, claims []preemption.Claim, byName map[string]*gangState) error {
	for _, c := range claims {
		g := byName[c.Name]
		if g == nil {
			return fmt.Errorf("claim of %s (room %q): no gang of the trace", c.Name, c.Room)
		}
		if g.spec.Mode != placement.ModeHard {
			return fmt.Errorf("claim of %s (room %q): the gang is %s, only hard gangs claim", c.Name, c.Room, g.spec.Mode)
		}
		if g.bound > 0 {
			return fmt.Errorf("claim of %s (room %q): the gang has %d pods bound", c.Name, c.Room, g.bound)
		}
		kind, id, _ := strings.Cut(c.Room, " ")
		var wantS0s map[topology.S0ID]bool
		var wantNodes map[string]bool
		switch {
		case kind == "s1" && g.spec.HighestTier == placement.TierS1:
			wantS0s = map[topology.S0ID]bool{}
			for _, leaf := range f.LeavesOf(topology.S1ID(id)) {
				wantS0s[leaf] = true
			}
		case kind == "s0" && g.spec.HighestTier == placement.TierS0:
			wantS0s = map[topology.S0ID]bool{topology.S0ID(id): true}
		case kind == "node" && g.spec.HighestTier == placement.TierNode:
			wantNodes = map[string]bool{id: true}
		default:
			return fmt.Errorf("claim of %s: room %q is not a domain of its highest tier %s", c.Name, c.Room, g.spec.HighestTier)
		}
		if len(wantS0s) == 0 && wantNodes == nil {
			return fmt.Errorf("claim of %s: room %q has no leaf in the fabric", c.Name, c.Room)
		}
		if !maps.Equal(c.S0s, wantS0s) {
			return fmt.Errorf("claim of %s: room %q claims %d leaves, the domain has %d", c.Name, c.Room, len(c.S0s), len(wantS0s))
		}
		if wantNodes != nil && !maps.Equal(c.Nodes, wantNodes) {
			return fmt.Errorf("claim of %s: room %q claims %d nodes, want the one node", c.Name, c.Room, len(c.Nodes))
		}
	}
	return nil
}

// keptOffBy returns what the claims (checked by checkClaims) keep gang g
// off: the rooms of claims made by gangs older than g (an earlier trace
// index: every trace gang has one priority) with no pod bound yet. A
// claiming gang bound earlier in the same cycle no longer keeps g off,
// which grades g against the wider optimum when the scheduler still kept
// it off that room.
func keptOffBy(claims []preemption.Claim, byName map[string]*gangState, g *gangState) keptOff {
	var k keptOff
	for _, c := range claims {
		by := byName[c.Name]
		if by == nil || by == g || by.index >= g.index || by.bound > 0 {
			continue
		}
		for id := range c.S0s {
			if k.leaves == nil {
				k.leaves = map[string]bool{}
			}
			k.leaves[string(id)] = true
		}
		if len(c.S0s) == 0 {
			for n := range c.Nodes {
				if k.nodes == nil {
					k.nodes = map[string]bool{}
				}
				k.nodes[n] = true
			}
		}
	}
	return k
}
