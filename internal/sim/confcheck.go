package sim

import (
	"fmt"
	"strings"

	"github.com/rdmatopo/rdmatopo/plugins/rdmatopology"
)

// topologyActions are the actions that place RDMA pods through the
// rdma-topology plugin's session state and cannot work without it.
var topologyActions = []string{"topology-allocate", "topology-preempt", "topology-reclaim"}

// checkTopologyPlugin reports a conf whose actions need the rdma-topology
// plugin while no tier enables it (the scheduler would refuse every RDMA
// pod).
func checkTopologyPlugin(actions string, hasPlugin bool) *ConfError {
	if hasPlugin {
		return nil
	}
	for _, name := range strings.Split(actions, ",") {
		name = strings.TrimSpace(name)
		for _, needs := range topologyActions {
			if name == needs {
				return &ConfError{Field: "tiers", Msg: fmt.Sprintf("plugin %q is missing: action %q needs it (without it no pod requesting RDMA is placed)",
					rdmatopology.PluginName, name)}
			}
		}
	}
	return nil
}
