package sim

import (
	"fmt"
	"regexp"
	"strings"

	"gopkg.in/yaml.v2"
	"volcano.sh/volcano/pkg/scheduler"
	"volcano.sh/volcano/pkg/scheduler/conf"
	"volcano.sh/volcano/pkg/scheduler/framework"

	// Register Volcano's stock actions and plugins.
	_ "volcano.sh/volcano/pkg/scheduler/actions"
	_ "volcano.sh/volcano/pkg/scheduler/plugins"

	"github.com/rdmatopo/rdmatopo/actions/topologyallocate"
	"github.com/rdmatopo/rdmatopo/framework/topology"
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

// ConfError is an unusable scheduler conf: Field is the YAML path (or
// line) of the problem.
type ConfError struct {
	Field string
	Msg   string
}

func (e *ConfError) Error() string {
	if e.Field == "" {
		return e.Msg
	}
	return e.Field + ": " + e.Msg
}

// yamlField matches yaml.v2's strict-mode unknown-field errors.
var yamlField = regexp.MustCompile(`line (\d+): field (\S+) not found in type \S+`)

// ParseConf parses a volcano-scheduler.conf with Volcano's own loader and
// validates what Volcano leaves to run time: every action and every plugin
// must be registered (Volcano only logs an unknown plugin), no plugin may
// appear twice, unknown keys are errors, the rdma-topology plugin's
// arguments must parse, and actions that need that plugin
// (topology-allocate, topology-preempt) must have it.
func ParseConf(text string) (*Conf, error) {
	ensureRegistered()
	var raw conf.SchedulerConfiguration
	if err := yaml.UnmarshalStrict([]byte(text), &raw); err != nil {
		msg := strings.TrimPrefix(err.Error(), "yaml: ")
		msg = strings.ReplaceAll(msg, "unmarshal errors:\n  ", "")
		if m := yamlField.FindStringSubmatch(msg); m != nil {
			return nil, &ConfError{Field: "line " + m[1], Msg: fmt.Sprintf("unknown field %q", m[2])}
		}
		return nil, &ConfError{Msg: "invalid YAML: " + strings.ReplaceAll(msg, "\n", " ")}
	}
	if strings.TrimSpace(raw.Actions) == "" {
		return nil, &ConfError{Field: "actions", Msg: "required: no action configured"}
	}
	for _, name := range strings.Split(raw.Actions, ",") {
		name = strings.TrimSpace(name)
		if name == "" {
			return nil, &ConfError{Field: "actions", Msg: fmt.Sprintf("empty action name in %q", raw.Actions)}
		}
		if _, ok := framework.GetAction(name); !ok {
			return nil, &ConfError{Field: "actions", Msg: fmt.Sprintf("unknown action %q", name)}
		}
	}
	if len(raw.Tiers) == 0 {
		return nil, &ConfError{Field: "tiers", Msg: "required: no plugin configured"}
	}
	seen := map[string]string{}
	c := &Conf{Text: text, Topology: topology.Config{}.WithDefaults()}
	for i, tier := range raw.Tiers {
		for j, p := range tier.Plugins {
			field := fmt.Sprintf("tiers[%d].plugins[%d]", i, j)
			if p.Name == "" {
				return nil, &ConfError{Field: field + ".name", Msg: "required"}
			}
			if _, ok := framework.GetPluginBuilder(p.Name); !ok || p.Name == tieBreakPluginName {
				return nil, &ConfError{Field: field + ".name", Msg: fmt.Sprintf("unknown plugin %q", p.Name)}
			}
			if prev, dup := seen[p.Name]; dup {
				return nil, &ConfError{Field: field + ".name", Msg: fmt.Sprintf("plugin %q is already configured at %s", p.Name, prev)}
			}
			seen[p.Name] = field
			if p.Name == rdmatopology.PluginName {
				args, err := rdmatopology.ParseArgs(p.Arguments)
				if err != nil {
					return nil, &ConfError{Field: field + ".arguments", Msg: err.Error()}
				}
				c.TopologyPlugin = true
				c.Topology = args.TopologyConfig().WithDefaults()
			}
		}
	}
	if cerr := checkTopologyPlugin(raw.Actions, c.TopologyPlugin); cerr != nil {
		return nil, cerr
	}
	actions, tiers, configurations, _, err := scheduler.UnmarshalSchedulerConf(text)
	if err != nil {
		return nil, &ConfError{Msg: err.Error()}
	}
	c.Actions, c.Tiers, c.Configurations = actions, tiers, configurations
	return c, nil
}

// TopologyArgs reads only the rdma-topology plugin's arguments of a conf:
// what a read-only view of the fabric needs (the resources, where S1 comes
// from), with no action or other plugin checked. It returns the defaults
// and false when no tier names the plugin; an error only when the YAML or
// the plugin's arguments cannot be read.
func TopologyArgs(text string) (topology.Config, bool, error) {
	var raw conf.SchedulerConfiguration
	if err := yaml.Unmarshal([]byte(text), &raw); err != nil {
		return topology.Config{}, false, &ConfError{Msg: "invalid YAML: " + strings.ReplaceAll(strings.TrimPrefix(err.Error(), "yaml: "), "\n", " ")}
	}
	for i, tier := range raw.Tiers {
		for j, p := range tier.Plugins {
			if p.Name != rdmatopology.PluginName {
				continue
			}
			args, err := rdmatopology.ParseArgs(p.Arguments)
			if err != nil {
				return topology.Config{}, false, &ConfError{Field: fmt.Sprintf("tiers[%d].plugins[%d].arguments", i, j), Msg: err.Error()}
			}
			return args.TopologyConfig().WithDefaults(), true, nil
		}
	}
	return topology.Config{}.WithDefaults(), false, nil
}
