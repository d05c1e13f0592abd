package gangfit

import (
	"testing"

	"volcano.sh/volcano/pkg/scheduler/conf"
	"volcano.sh/volcano/pkg/scheduler/framework"
)

// TestCarryFollowsConf: the node sets an action carries are kept from one
// session to the next while the conf's tiers stay as they were, and
// emptied when a plugin, its predicates or its arguments change.
func TestCarryFollowsConf(t *testing.T) {
	on, off := true, false
	tiers := func(predicates *bool, args map[string]interface{}) []conf.Tier {
		return []conf.Tier{{Plugins: []conf.PluginOption{
			{Name: "gang"},
			{Name: "predicates", EnabledPredicate: predicates, Arguments: args},
		}}}
	}
	base := tiers(&on, map[string]interface{}{"predicate.CacheEnable": true})
	tests := []struct {
		name string
		next []conf.Tier
		kept bool
	}{
		{"same conf", tiers(&on, map[string]interface{}{"predicate.CacheEnable": true}), true},
		{"argument changed", tiers(&on, map[string]interface{}{"predicate.CacheEnable": false}), false},
		{"predicates disabled", tiers(&off, map[string]interface{}{"predicate.CacheEnable": true}), false},
		{"plugin added", append(tiers(&on, map[string]interface{}{"predicate.CacheEnable": true}),
			conf.Tier{Plugins: []conf.PluginOption{{Name: "binpack"}}}), false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var c Carry
			first := (&Nodes{ssn: &framework.Session{Tiers: base}}).openCarry(&c)
			if first != &c {
				t.Fatalf("openCarry did not take the action's carry")
			}
			c.sets[[32]byte{1}] = &carriedSet{allowed: map[string]bool{"n1": true}}
			(&Nodes{ssn: &framework.Session{Tiers: tc.next}}).openCarry(&c)
			if _, kept := c.sets[[32]byte{1}]; kept != tc.kept {
				t.Errorf("set kept = %v, want %v", kept, tc.kept)
			}
		})
	}
}
