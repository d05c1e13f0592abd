package schedconf_test

import (
	"fmt"
	"reflect"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	"volcano.sh/volcano/pkg/scheduler/conf"
	"volcano.sh/volcano/pkg/scheduler/framework"

	// Register Volcano's stock actions and plugins, as the scheduler does.
	_ "volcano.sh/volcano/pkg/scheduler/actions"
	"volcano.sh/volcano/pkg/scheduler/plugins/binpack"
	"volcano.sh/volcano/pkg/scheduler/plugins/capacity"
	"volcano.sh/volcano/pkg/scheduler/plugins/cdp"
	"volcano.sh/volcano/pkg/scheduler/plugins/conformance"
	"volcano.sh/volcano/pkg/scheduler/plugins/deviceshare"
	"volcano.sh/volcano/pkg/scheduler/plugins/drf"
	"volcano.sh/volcano/pkg/scheduler/plugins/extender"
	"volcano.sh/volcano/pkg/scheduler/plugins/gang"
	"volcano.sh/volcano/pkg/scheduler/plugins/nodegroup"
	"volcano.sh/volcano/pkg/scheduler/plugins/nodeorder"
	"volcano.sh/volcano/pkg/scheduler/plugins/numaaware"
	"volcano.sh/volcano/pkg/scheduler/plugins/overcommit"
	"volcano.sh/volcano/pkg/scheduler/plugins/pdb"
	"volcano.sh/volcano/pkg/scheduler/plugins/predicates"
	"volcano.sh/volcano/pkg/scheduler/plugins/priority"
	"volcano.sh/volcano/pkg/scheduler/plugins/proportion"
	"volcano.sh/volcano/pkg/scheduler/plugins/rescheduling"
	"volcano.sh/volcano/pkg/scheduler/plugins/resourcequota"
	"volcano.sh/volcano/pkg/scheduler/plugins/sla"
	tasktopology "volcano.sh/volcano/pkg/scheduler/plugins/task-topology"
	"volcano.sh/volcano/pkg/scheduler/plugins/tdm"
	"volcano.sh/volcano/pkg/scheduler/plugins/usage"

	_ "volcano.sh/volcano/pkg/scheduler/plugins"

	"github.com/rdmatopo/rdmatopo/actions/topologyallocate"
	"github.com/rdmatopo/rdmatopo/actions/topologypreempt"
	"github.com/rdmatopo/rdmatopo/actions/topologyreclaim"
	"github.com/rdmatopo/rdmatopo/core/topology"
	"github.com/rdmatopo/rdmatopo/internal/schedconf"
	"github.com/rdmatopo/rdmatopo/plugins/rdmatopology"
	"github.com/rdmatopo/rdmatopo/registry"
)

// yamlShape lists a struct's YAML keys with their Go kinds, recursively.
func yamlShape(t reflect.Type) map[string]string {
	out := map[string]string{}
	for i := range t.NumField() {
		f := t.Field(i)
		key := f.Tag.Get("yaml")
		ft := f.Type
		kind := ft.String()
		switch {
		case ft.Kind() == reflect.Slice && ft.Elem().Kind() == reflect.Struct:
			kind = "[]" + fmt.Sprint(yamlShape(ft.Elem())) // fmt sorts map keys
		case ft.Kind() == reflect.Map:
			kind = "map[" + ft.Key().Kind().String() + "]" + ft.Elem().Kind().String()
		case ft.Kind() == reflect.Pointer:
			kind = "*" + ft.Elem().Kind().String()
		default:
			kind = ft.Kind().String()
		}
		out[key] = kind
	}
	return out
}

// TestFileMatchesVolcano: File has the YAML keys and types of Volcano's
// conf.SchedulerConfiguration, so that Parse's strict read accepts and
// refuses what Volcano's loader does.
func TestFileMatchesVolcano(t *testing.T) {
	want := yamlShape(reflect.TypeOf(conf.SchedulerConfiguration{}))
	got := yamlShape(reflect.TypeOf(schedconf.File{}))
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("schedconf.File differs from Volcano's conf.SchedulerConfiguration (-volcano,+schedconf):\n%s", diff)
	}
	if len(want) != 4 {
		t.Errorf("Volcano's conf has %d keys, want 4: %v", len(want), want)
	}
}

// TestNamesRegistered: the action and plugin names Parse knows are the
// ones the scheduler registers: Volcano's stock plugins (each named here
// through its package's PluginName) and actions, and rdmatopo's.
func TestNamesRegistered(t *testing.T) {
	registry.Install(rdmatopology.NewRuntime(topology.Config{}))
	for _, name := range schedconf.Actions {
		if _, ok := framework.GetAction(name); !ok {
			t.Errorf("action %q is not registered", name)
		}
	}
	for _, name := range schedconf.Plugins {
		if _, ok := framework.GetPluginBuilder(name); !ok {
			t.Errorf("plugin %q is not registered", name)
		}
	}
	stock := []string{drf.PluginName, gang.PluginName, deviceshare.PluginName, predicates.PluginName, priority.PluginName,
		nodeorder.PluginName, conformance.PluginName, binpack.PluginName, tdm.PluginName, overcommit.PluginName, sla.PluginName,
		tasktopology.PluginName, numaaware.PluginName, cdp.PluginName, rescheduling.PluginName, usage.PluginName, pdb.PluginName,
		nodegroup.PluginName, proportion.PluginName, capacity.PluginName, extender.PluginName, resourcequota.PluginName,
		rdmatopology.PluginName}
	slices.Sort(stock)
	got := slices.Sorted(slices.Values(schedconf.Plugins))
	if diff := cmp.Diff(stock, got); diff != "" {
		t.Errorf("plugins (-registered,+schedconf):\n%s", diff)
	}
	ours := []string{topologyallocate.ActionName, topologypreempt.ActionName, topologyreclaim.ActionName}
	for _, name := range append([]string{"enqueue", "allocate", "backfill", "preempt", "reclaim", "shuffle"}, ours...) {
		if !slices.Contains(schedconf.Actions, name) {
			t.Errorf("action %q is registered but unknown to schedconf", name)
		}
	}
	if len(schedconf.Actions) != 9 {
		t.Errorf("schedconf knows %d actions, want 9: %v", len(schedconf.Actions), schedconf.Actions)
	}
}
