package sim

import (
	"volcano.sh/volcano/pkg/scheduler"
	"volcano.sh/volcano/pkg/scheduler/conf"
	"volcano.sh/volcano/pkg/scheduler/framework"

	// Register Volcano's stock actions and plugins.
	_ "volcano.sh/volcano/pkg/scheduler/actions"
	_ "volcano.sh/volcano/pkg/scheduler/plugins"

	"github.com/rdmatopo/rdmatopo/actions/topologyallocate"
	"github.com/rdmatopo/rdmatopo/core/topology"
	"github.com/rdmatopo/rdmatopo/internal/schedconf"
	"github.com/rdmatopo/rdmatopo/plugins/rdmatopology"
	"github.com/rdmatopo/rdmatopo/registry"
)

// ensureRegistered registers rdmatopo's plugin and actions, for ParseConf
// to find them by name, when any of them is missing from Volcano's
// registries (nothing registered them yet, or a test cleared Volcano's
// plugin builders). The runtime it registers them over is one no cycle
// uses: every Simulator installs its own before each cycle (install) and
// runs the conf's actions as registered then.
func ensureRegistered() {
	cycleMu.Lock()
	defer cycleMu.Unlock()
	_, plugin := framework.GetPluginBuilder(rdmatopology.PluginName)
	_, action := framework.GetAction(topologyallocate.ActionName)
	if !plugin || !action {
		registry.Install(rdmatopology.NewRuntime(topology.Config{}))
	}
}

// Conf is a parsed and validated volcano-scheduler.conf.
type Conf struct {
	// Text is the conf as given.
	Text string
	// Actions run in order every cycle, as registered when the cycle
	// starts (rdmatopo's over the simulator's runtime).
	Actions []framework.Action
	// Tiers and Configurations are handed to every session.
	Tiers          []conf.Tier
	Configurations []conf.Configuration
	// TopologyPlugin reports whether the conf enables rdma-topology.
	TopologyPlugin bool
	// Topology is the fabric configuration read from the rdma-topology
	// plugin's arguments (defaults when the plugin is absent).
	Topology topology.Config
}

// ActionNames returns the names of the conf's actions, in order.
func (c *Conf) ActionNames() []string {
	names := make([]string, 0, len(c.Actions))
	for _, a := range c.Actions {
		names = append(names, a.Name())
	}
	return names
}

// ConfError is an unusable scheduler conf (schedconf.ConfError).
type ConfError = schedconf.ConfError

// ParseConf parses a volcano-scheduler.conf: schedconf.Parse checks it
// (what Volcano leaves to run time included), then Volcano's own loader
// builds its actions and tiers.
func ParseConf(text string) (*Conf, error) {
	checked, err := schedconf.Parse(text)
	if err != nil {
		return nil, err
	}
	ensureRegistered()
	actions, tiers, configurations, _, err := scheduler.UnmarshalSchedulerConf(text)
	if err != nil {
		return nil, &ConfError{Msg: err.Error()}
	}
	return &Conf{Text: text, Actions: actions, Tiers: tiers, Configurations: configurations,
		TopologyPlugin: checked.TopologyPlugin, Topology: checked.Topology}, nil
}
