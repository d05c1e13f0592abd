package rdmatopology

import (
	"testing"
	"time"

	"volcano.sh/volcano/pkg/scheduler/framework"

	"github.com/rdmatopo/rdmatopo/core/preemption"
	"github.com/rdmatopo/rdmatopo/core/topology"
)

// TestClusterRuntimeRebuild: the cluster runtime is built by the first
// session, kept while the plugin's topology arguments stay the same, and
// rebuilt in place (new fabric, ledger, holds and claims; the options
// kept) when they change. A runtime from NewRuntime is never rebuilt.
func TestClusterRuntimeRebuild(t *testing.T) {
	args := func(label string) *Args {
		a, err := ParseArgs(framework.Arguments{"s1NodeLabel": label})
		if err != nil {
			t.Fatal(err)
		}
		return a
	}
	ssn := &framework.Session{}
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	rt := NewClusterRuntime(WithClock(func() time.Time { return now }))

	rt.ensure(ssn, args("rack"))
	fabric, ledger := rt.Fabric, rt.Ledger
	if got := rt.cfg.S1NodeLabel; got != "rack" {
		t.Fatalf("first session: S1 label %q, want rack", got)
	}
	rt.preemption.Holds.Put("ns/g", &preemption.Hold{Job: "ns/g"})
	rt.preemption.Claims.Put("ns/c", &preemption.Claim{Job: "ns/c"})

	rt.ensure(ssn, args("rack"))
	if rt.Fabric != fabric || rt.Ledger != ledger || !rt.preemption.Holds.Has("ns/g") || !rt.preemption.Claims.Has("ns/c") {
		t.Errorf("same arguments: runtime rebuilt")
	}

	rt.ensure(ssn, args("zone"))
	if rt.Fabric == fabric || rt.Ledger == ledger {
		t.Errorf("changed arguments: fabric or ledger kept")
	}
	if rt.preemption.Holds.Has("ns/g") || rt.preemption.Claims.Has("ns/c") {
		t.Errorf("changed arguments: holds or claims kept")
	}
	if got := rt.cfg.S1NodeLabel; got != "zone" {
		t.Errorf("changed arguments: S1 label %q, want zone", got)
	}
	if !rt.Now().Equal(now) {
		t.Errorf("rebuilt runtime lost its clock: %v", rt.Now())
	}

	ext := NewRuntime(topology.Config{S1NodeLabel: "rack"})
	fabric = ext.Fabric
	ext.ensure(ssn, args("zone"))
	if ext.Fabric != fabric || ext.cfg.S1NodeLabel != "rack" {
		t.Errorf("a runtime the caller feeds was rebuilt")
	}
}

// TestLogArgs: the arguments are logged again when they change.
func TestLogArgs(t *testing.T) {
	rt := NewClusterRuntime()
	for _, tc := range []struct {
		label string
		want  bool
	}{{"rack", true}, {"rack", false}, {"zone", true}, {"rack", true}} {
		a, err := ParseArgs(framework.Arguments{"s1NodeLabel": tc.label})
		if err != nil {
			t.Fatal(err)
		}
		before := rt.loggedArgs
		rt.logArgs(a)
		if logged := rt.loggedArgs != before; logged != tc.want {
			t.Errorf("args %s: logged %v, want %v", tc.label, logged, tc.want)
		}
	}
}
