package rdmatopology

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kubewharf/katalyst-api/pkg/apis/node/v1alpha1"
	"k8s.io/client-go/tools/record"

	"github.com/rdmatopo/rdmatopo/core/placement"
	"github.com/rdmatopo/rdmatopo/core/topology"
	"github.com/rdmatopo/rdmatopo/internal/testing/builders"
)

// faultStep is one session's view of a two-node cluster whose NUMA-0 NICs
// are under leaf A and NUMA-1 NICs under leaf B.
type faultStep struct {
	// at is the time since the first step.
	at time.Duration
	// gone and zero name "node/pci" NICs gone from the zones or at
	// allocatable 0; without lists n2 is absent.
	gone, zero []string
	without    bool
	// want: the NICs cooling down, the failed leaves, and the Events
	// recorded by this step (reasons).
	wantCooling []string
	wantLeaves  []topology.S0ID
	wantEvents  []string
}

func faultFabric(st faultStep) *topology.Fabric {
	c := topology.NewCache(topology.Config{}.WithDefaults())
	for _, name := range []string{"n1", "n2"} {
		if name == "n2" && st.without {
			continue
		}
		c.UpsertNode(builders.MakeNode(name).Shared().GPU(8).RDMA(4).CPU("128").Obj())
		w := builders.MakeCNR(name).Policy(v1alpha1.TopologyPolicySingleNUMANodeContainerLevel).Zone(0, 4, 64000).Zone(1, 4, 64000)
		for numa, leaf := range []string{"A", "B"} {
			for _, pci := range builders.NUMANICs[numa] {
				key := name + "/" + pci
				if contains(st.gone, key) {
					continue
				}
				w.NIC(pci, numa, leaf)
				if contains(st.zero, key) {
					w.Units(pci, 0)
				}
			}
		}
		c.UpsertCNR(w.Obj())
	}
	return c.Snapshot()
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func TestFaultTracker(t *testing.T) {
	nic := "n1/" + builders.NUMANICs[0][0]
	args := &Args{NICFlapCount: 3, NICFlapWindow: 10 * time.Minute, NICCooldown: 30 * time.Minute}
	cases := map[string][]faultStep{
		"a NIC failing three times in the window cools down once back": {
			{},
			{at: time.Minute, gone: []string{nic}},
			{at: 2 * time.Minute},
			{at: 3 * time.Minute, zero: []string{nic}},
			{at: 4 * time.Minute},
			{at: 5 * time.Minute, gone: []string{nic}},
			{at: 6 * time.Minute, wantCooling: []string{nic}, wantEvents: []string{ReasonNICCoolingDown}},
			{at: 35 * time.Minute, wantCooling: []string{nic}},
			{at: 37 * time.Minute},
		},
		"failures spread beyond the window do not cool a NIC down": {
			{},
			{at: time.Minute, gone: []string{nic}},
			{at: 2 * time.Minute},
			{at: 8 * time.Minute, gone: []string{nic}},
			{at: 9 * time.Minute},
			{at: 15 * time.Minute, gone: []string{nic}},
			{at: 16 * time.Minute},
		},
		"every NIC of a leaf failing is reported once, until one is back": {
			{},
			{at: time.Minute, gone: []string{"n1/" + builders.NUMANICs[0][0], "n1/" + builders.NUMANICs[0][1]},
				zero:       []string{"n2/" + builders.NUMANICs[0][0], "n2/" + builders.NUMANICs[0][1]},
				wantLeaves: []topology.S0ID{"A"}, wantEvents: []string{ReasonLeafFailed}},
			{at: 2 * time.Minute, gone: []string{"n1/" + builders.NUMANICs[0][0], "n1/" + builders.NUMANICs[0][1]},
				zero:       []string{"n2/" + builders.NUMANICs[0][0], "n2/" + builders.NUMANICs[0][1]},
				wantLeaves: []topology.S0ID{"A"}},
			{at: 3 * time.Minute, gone: []string{"n1/" + builders.NUMANICs[0][0], "n1/" + builders.NUMANICs[0][1]}},
		},
		"some NICs of a leaf failing is not a failed leaf": {
			{},
			{at: time.Minute, gone: []string{"n1/" + builders.NUMANICs[0][0], "n1/" + builders.NUMANICs[0][1]}},
		},
		"a node leaving the fabric is drained, not failed": {
			{},
			{at: time.Minute, without: true},
			{at: 2 * time.Minute},
			{at: 3 * time.Minute, without: true},
			{at: 4 * time.Minute},
			{at: 5 * time.Minute, without: true},
			{at: 6 * time.Minute},
		},
	}
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for name, steps := range cases {
		t.Run(name, func(t *testing.T) {
			ft := newFaultTracker()
			rec := record.NewFakeRecorder(100)
			for i, st := range steps {
				now := start.Add(st.at)
				f := faultFabric(st)
				ft.observe(now, f, args, rec)
				var events []string
				for len(rec.Events) > 0 {
					events = append(events, strings.Fields(<-rec.Events)[1])
				}
				if !slices.Equal(events, st.wantEvents) {
					t.Errorf("step %d: events %v, want %v", i, events, st.wantEvents)
				}
				var cooling []string
				for _, n := range []string{"n1", "n2"} {
					for _, zone := range builders.NUMANICs {
						for _, pci := range zone {
							if ft.cooling(now, n, topology.NICID(pci)) {
								cooling = append(cooling, n+"/"+pci)
							}
						}
					}
				}
				if !slices.Equal(cooling, st.wantCooling) {
					t.Errorf("step %d: cooling %v, want %v", i, cooling, st.wantCooling)
				}
				if got := ft.failedLeafIDs(); !slices.Equal(got, st.wantLeaves) {
					t.Errorf("step %d: failed leaves %v, want %v", i, got, st.wantLeaves)
				}
				// A cooling NIC is kept out of the planner's free view.
				state := placement.NewState(f, nil)
				ft.keepOut(now, state)
				for _, c := range cooling {
					node, pci, _ := strings.Cut(c, "/")
					if holder, held := state.HolderOf(node, topology.NICID(pci)); !held || !strings.HasPrefix(holder, "out/") {
						t.Errorf("step %d: cooling NIC %s not kept out of the state (holder %q)", i, c, holder)
					}
				}
			}
		})
	}
}
