package grade

import (
	"testing"

	"github.com/rdmatopo/rdmatopo/core/ledger"
	"github.com/rdmatopo/rdmatopo/core/placement"
	"github.com/rdmatopo/rdmatopo/core/topology"
	"github.com/rdmatopo/rdmatopo/internal/testing/builders"
)

func TestRingLeaves(t *testing.T) {
	tr := smallTracker(t)
	// spanning is node 0 (a spanning node) taking one NIC of each zone:
	// its pod's NICs hang off leaves 0 and 1.
	spanning := placement.Assignment{Node: builders.NodeName(0), Zones: []ledger.ZoneUse{
		{NUMA: 0, GPU: 2, NICs: []topology.NICID{topology.NICID(builders.NUMANICs[0][0])}},
		{NUMA: 1, GPU: 2, NICs: []topology.NICID{topology.NICID(builders.NUMANICs[1][0])}},
	}}
	cases := map[string]struct {
		ring               []placement.Assignment
		crossings, minimum int
	}{
		"one pod":                        {ring: []placement.Assignment{zoneUse(1, 0)}},
		"one leaf":                       {ring: []placement.Assignment{zoneUse(1, 0), zoneUse(2, 0), zoneUse(3, 0)}},
		"two leaves in order":            {ring: []placement.Assignment{zoneUse(1, 0), zoneUse(2, 0), zoneUse(1, 1), zoneUse(2, 1)}, crossings: 2, minimum: 2},
		"two leaves alternating":         {ring: []placement.Assignment{zoneUse(1, 0), zoneUse(1, 1), zoneUse(2, 0), zoneUse(2, 1)}, crossings: 4, minimum: 2},
		"three leaves, one revisited":    {ring: []placement.Assignment{zoneUse(1, 0), zoneUse(17, 0), zoneUse(2, 0), zoneUse(1, 1)}, crossings: 4, minimum: 3},
		"a pod on two leaves is its own": {ring: []placement.Assignment{zoneUse(1, 0), spanning, zoneUse(2, 0)}, crossings: 2, minimum: 2},
		"two pods alike on two leaves":   {ring: []placement.Assignment{spanning, spanning}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			c, m := RingLeaves(tr.Fabric(), tc.ring)
			if c != tc.crossings || m != tc.minimum {
				t.Errorf("RingLeaves = %d crossings, minimum %d; want %d, %d", c, m, tc.crossings, tc.minimum)
			}
		})
	}
}
