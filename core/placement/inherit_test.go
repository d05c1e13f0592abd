package placement

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/rdmatopo/rdmatopo/core/ledger"
	"github.com/rdmatopo/rdmatopo/core/topology"
	"github.com/rdmatopo/rdmatopo/internal/testing/builders"
)

// sessionState builds a session's state as the plugin does: the fabric
// minus the ledger, every node capped, the unusable ones marked.
func sessionState(f *topology.Fabric, l *ledger.Ledger, caps map[string]Cap, unusable ...string) *State {
	s := NewState(f, l)
	for _, name := range f.NodeNames() {
		c, ok := caps[name]
		if !ok {
			c = Cap{GPU: 8, NICs: 4, CPUMilli: 128000}
		}
		s.SetCap(name, c)
	}
	for _, name := range unusable {
		s.SetUnusable(name)
	}
	return s
}

// zone is NUMA zone numa of a node held whole by one pod.
func zone(numa int) []ledger.ZoneUse {
	return []ledger.ZoneUse{{NUMA: numa, GPU: 4, CPUMilli: 8000, NICs: []topology.NICID{
		topology.NICID(builders.NUMANICs[numa][0]), topology.NICID(builders.NUMANICs[numa][1])}}}
}

// inheritShapes are the pod shapes the test plans, so the states cache leaf
// statistics for each.
var inheritShapes = []Shape{worker, master, whole}

// warm plans a gang of every shape so the state caches views and leaf
// statistics (a gang that does not fit computes them too).
func warm(s *State) {
	for _, sh := range inheritShapes {
		s.Plan(gang(2, sh))
	}
}

// TestInherit: a session's state takes over the last session's views and
// leaf statistics of nodes nothing changed on, and only those: after a
// KCNR update (n2), a new reservation (n3), a new cap (n4), a node turned
// unusable (m3) and a pod allocated in the last session that is now bound
// (m2, also capped anew), every view and leaf statistic of the new state equals a fresh
// state's, and so does every plan.
func TestInherit(t *testing.T) {
	cfg := topology.Config{S1NodeLabel: builders.S1Label}.WithDefaults()
	c := topology.NewCache(cfg)
	f := &fixture{}
	f.std(4, "n", "s1-0", "A", "B")
	f.std(4, "m", "s1-0", "C", "D")
	f.std(2, "k", "s1-1", "E", "F")
	for i, n := range f.nodes {
		c.UpsertNode(n)
		c.UpsertCNR(f.cnrs[i])
	}
	l := ledger.New()
	if err := l.Reserve(ledger.Reservation{UID: "u-old", Namespace: "ns", Name: "old", Node: "m1", Zones: zone(0)}); err != nil {
		t.Fatal(err)
	}
	prev := sessionState(c.Snapshot(), l, nil)
	warm(prev)
	// A pod allocated in the last session (the state learns of it through
	// Apply), bound and reserved by the next one.
	allocated := Assignment{PodUID: "u-new", Node: "m2", Zones: zone(1)}
	prev.Apply("u-new", allocated)
	warm(prev)

	// What changed before the next session.
	c.UpsertCNR(usedZone(f.node("n2", "s1-0", "A", "B"), 1).Obj())
	if err := l.Reserve(ledger.Reservation{UID: "u-n3", Namespace: "ns", Name: "n3-pod", Node: "n3", Zones: zone(0)}); err != nil {
		t.Fatal(err)
	}
	if err := l.Reserve(ledger.Reservation{UID: "u-new", Namespace: "ns", Name: "new", Node: "m2", Zones: zone(1)}); err != nil {
		t.Fatal(err)
	}
	caps := map[string]Cap{"n4": {GPU: 4, NICs: 2, CPUMilli: 64000}, "m2": {GPU: 4, NICs: 2, CPUMilli: 120000}}
	f2 := c.Snapshot()

	next := sessionState(f2, l, caps, "m3")
	views, leaves := next.Inherit(prev)
	fresh := sessionState(f2, l, caps, "m3")

	for _, name := range []string{"n2", "n3", "n4", "m3"} {
		if v, ok := next.views[name]; ok && v == prev.views[name] {
			t.Errorf("view of changed node %s was taken over", name)
		}
	}
	// m2's pod is now in the ledger and its cap counts it as the last
	// session's state did after Apply: nothing changed there.
	for _, name := range []string{"n1", "m2", "k1"} {
		if next.views[name] == nil || next.views[name] != prev.views[name] {
			t.Errorf("view of unchanged node %s was not taken over", name)
		}
	}
	if views == 0 || leaves == 0 {
		t.Errorf("Inherit took %d views and %d leaf statistics, want some of each", views, leaves)
	}
	// Leaves E and F (k1, k2) are unchanged, every other has a changed
	// node under it: what was taken over must equal what a fresh state
	// computes.
	for _, sh := range inheritShapes {
		for _, id := range []topology.S0ID{"A", "B", "C", "D"} {
			if st, ok := next.leafCache[sh][id]; ok && st == prev.leafCache[sh][id] {
				t.Errorf("statistics of leaf %s for %v were taken over though a node under it changed", id, sh)
			}
		}
		if _, ok := prev.leafCache[sh]["E"]; ok {
			if st, ok := next.leafCache[sh]["E"]; !ok || st != prev.leafCache[sh]["E"] {
				t.Errorf("statistics of unchanged leaf E for %v were not taken over", sh)
			}
		}
	}
	opts := cmp.Options{cmp.AllowUnexported(nodeFree{}, zoneFree{}, leafStat{}), cmpopts.EquateEmpty()}
	for _, name := range f2.NodeNames() {
		if diff := cmp.Diff(fresh.view(name), next.view(name), opts); diff != "" {
			t.Errorf("view of %s differs from a fresh state's (-fresh +inherited):\n%s", name, diff)
		}
	}
	for _, sh := range inheritShapes {
		g := gang(2, sh)
		pf := &planner{s: fresh, g: &g, main: mainShape(g.Pods), groups: groupsOf(g.Pods)}
		pn := &planner{s: next, g: &g, main: mainShape(g.Pods), groups: groupsOf(g.Pods)}
		if diff := cmp.Diff(pf.leafStats(), pn.leafStats(), opts); diff != "" {
			t.Errorf("leaf statistics for %v differ from a fresh state's (-fresh +inherited):\n%s", sh, diff)
		}
	}
	for i, g := range []Gang{gang(2, worker), gang(6, worker), hard(gang(4, worker), TierS0), gang(3, whole), gang(5, master)} {
		want, wantFail := fresh.Plan(g)
		got, gotFail := next.Plan(g)
		if diff := cmp.Diff(summarize(want, wantFail), summarize(got, gotFail)); diff != "" {
			t.Errorf("gang %d: plan differs from a fresh state's (-fresh +inherited):\n%s", i, diff)
		}
	}
}

// TestInheritNothing: no earlier state, the state itself, or an earlier
// state over a fabric rebuilt from scratch (other node objects) gives
// nothing.
func TestInheritNothing(t *testing.T) {
	f := &fixture{}
	f.std(4, "n", "s1-0", "A", "B")
	prev := sessionState(f.fabric(), ledger.New(), nil)
	warm(prev)
	for name, tc := range map[string]struct{ s, prev *State }{
		"no earlier state":  {s: sessionState(f.fabric(), ledger.New(), nil)},
		"itself":            {s: prev, prev: prev},
		"rebuilt fabric":    {s: sessionState(f.fabric(), ledger.New(), nil), prev: prev},
		"same, other state": {s: sessionState(prev.fabric, ledger.New(), nil, "n1", "n2", "n3", "n4"), prev: prev},
	} {
		if v, l := tc.s.Inherit(tc.prev); v != 0 || l != 0 {
			t.Errorf("%s: Inherit took %d views and %d leaf statistics, want none", name, v, l)
		}
	}
}
