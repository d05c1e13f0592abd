package registry_test

import (
	"testing"

	"volcano.sh/volcano/pkg/scheduler/framework"

	"github.com/rdmatopo/rdmatopo/actions/topologyallocate"
	"github.com/rdmatopo/rdmatopo/actions/topologypreempt"
	"github.com/rdmatopo/rdmatopo/actions/topologyreclaim"
	"github.com/rdmatopo/rdmatopo/core/topology"
	"github.com/rdmatopo/rdmatopo/plugins/rdmatopology"
	"github.com/rdmatopo/rdmatopo/registry"
)

// TestInstall: the plugin builder and the three actions are registered
// under their names, each action its own object, and a second Install
// replaces what the first registered.
func TestInstall(t *testing.T) {
	names := []string{topologyallocate.ActionName, topologypreempt.ActionName, topologyreclaim.ActionName}
	registered := func() map[string]framework.Action {
		t.Helper()
		out := map[string]framework.Action{}
		for _, name := range names {
			a, ok := framework.GetAction(name)
			if !ok || a.Name() != name {
				t.Fatalf("action %q not registered under its name (%v)", name, ok)
			}
			out[name] = a
		}
		if _, ok := framework.GetPluginBuilder(rdmatopology.PluginName); !ok {
			t.Fatalf("plugin %q has no builder", rdmatopology.PluginName)
		}
		return out
	}
	registry.Install(rdmatopology.NewRuntime(topology.Config{}))
	first := registered()
	if first[topologypreempt.ActionName] == first[topologyreclaim.ActionName] {
		t.Errorf("topology-preempt and topology-reclaim are the same object")
	}
	registry.Install(rdmatopology.NewRuntime(topology.Config{}))
	second := registered()
	for _, name := range names {
		if first[name] == second[name] {
			t.Errorf("action %q: a second Install kept the first one's", name)
		}
	}
}

// TestSetInstallKeepsActions: installing one Set again registers the same
// action objects (what they carry from one session to the next stays with
// them); another Set over the same runtime registers others.
func TestSetInstallKeepsActions(t *testing.T) {
	rt := rdmatopology.NewRuntime(topology.Config{})
	set := registry.New(rt)
	set.Install()
	first, _ := framework.GetAction(topologyallocate.ActionName)
	set.Install()
	again, _ := framework.GetAction(topologyallocate.ActionName)
	if first != again {
		t.Errorf("a second Install of one Set registered another topology-allocate")
	}
	registry.New(rt).Install()
	if other, _ := framework.GetAction(topologyallocate.ActionName); other == first {
		t.Errorf("a new Set registered the first Set's topology-allocate")
	}
}
