// Package schedconf reads a volcano-scheduler.conf without linking
// Volcano's scheduler: the conf's YAML shape (File, the shape of Volcano
// v1.10's conf.SchedulerConfiguration), the names of the actions and
// plugins the rdmatopo scheduler registers, and the checks that tell a
// conf the scheduler can run from one it cannot. The simulator builds
// Volcano's actions and tiers from a conf after Parse accepts it; the
// read-only kubectl views only need Parse's verdict and the rdma-topology
// plugin's arguments. The tests hold File and the names to Volcano's own.
package schedconf

import (
	"fmt"
	"regexp"
	"slices"
	"strings"

	"gopkg.in/yaml.v2"

	"github.com/rdmatopo/rdmatopo/core/pluginargs"
	"github.com/rdmatopo/rdmatopo/core/topology"
)

// File is a volcano-scheduler.conf as YAML: the keys and types of Volcano
// v1.10's conf.SchedulerConfiguration (TestFileMatchesVolcano).
type File struct {
	Actions        string            `yaml:"actions"`
	Tiers          []Tier            `yaml:"tiers"`
	Configurations []Configuration   `yaml:"configurations"`
	Metrics        map[string]string `yaml:"metrics"`
}

// Tier is one tier of plugins.
type Tier struct {
	Plugins []PluginOption `yaml:"plugins"`
}

// Configuration is an action's arguments.
type Configuration struct {
	Name      string         `yaml:"name"`
	Arguments map[string]any `yaml:"arguments"`
}

// PluginOption is a plugin of a tier, with the extension points it is
// enabled for. The keys are Volcano's, spelling included.
type PluginOption struct {
	Name                string         `yaml:"name"`
	EnabledJobOrder     *bool          `yaml:"enableJobOrder"`
	EnabledHierarchy    *bool          `yaml:"enableHierarchy"`
	EnabledJobReady     *bool          `yaml:"enableJobReady"`
	EnabledJobPipelined *bool          `yaml:"enableJobPipelined"`
	EnabledTaskOrder    *bool          `yaml:"enableTaskOrder"`
	EnabledPreemptable  *bool          `yaml:"enablePreemptable"`
	EnabledReclaimable  *bool          `yaml:"enableReclaimable"`
	EnablePreemptive    *bool          `yaml:"enablePreemptive"`
	EnabledQueueOrder   *bool          `yaml:"enableQueueOrder"`
	EnabledClusterOrder *bool          `yaml:"EnabledClusterOrder"`
	EnabledPredicate    *bool          `yaml:"enablePredicate"`
	EnabledBestNode     *bool          `yaml:"enableBestNode"`
	EnabledNodeOrder    *bool          `yaml:"enableNodeOrder"`
	EnabledTargetJob    *bool          `yaml:"enableTargetJob"`
	EnabledReservedNode *bool          `yaml:"enableReservedNodes"`
	EnabledJobEnqueued  *bool          `yaml:"enableJobEnqueued"`
	EnabledVictim       *bool          `yaml:"enabledVictim"`
	EnabledJobStarving  *bool          `yaml:"enableJobStarving"`
	EnabledOverused     *bool          `yaml:"enabledOverused"`
	EnabledAllocatable  *bool          `yaml:"enabledAllocatable"`
	Arguments           map[string]any `yaml:"arguments"`
}

// Actions are the actions the rdmatopo scheduler registers: Volcano
// v1.10's and rdmatopo's (TestNamesRegistered).
var Actions = []string{"enqueue", "allocate", "backfill", "preempt", "reclaim", "shuffle",
	"topology-allocate", "topology-preempt", "topology-reclaim"}

// Plugins are the plugins the rdmatopo scheduler registers: Volcano
// v1.10's and rdma-topology (TestNamesRegistered).
var Plugins = []string{"drf", "gang", "deviceshare", "predicates", "priority", "nodeorder", "conformance",
	"binpack", "tdm", "overcommit", "sla", "task-topology", "numa-aware", "cdp", "rescheduling", "usage", "pdb",
	"nodegroup", "proportion", "capacity", "extender", "resourcequota", pluginargs.PluginName}

// topologyActions are the actions that place RDMA pods through the
// rdma-topology plugin's session state and cannot work without it.
var topologyActions = []string{"topology-allocate", "topology-preempt", "topology-reclaim"}

// Conf is a conf Parse accepted.
type Conf struct {
	// Text is the conf as given.
	Text string
	// File is the conf as read.
	File File
	// ActionNames are the conf's actions, in order.
	ActionNames []string
	// TopologyPlugin reports whether the conf enables rdma-topology.
	TopologyPlugin bool
	// Topology is the fabric configuration read from the rdma-topology
	// plugin's arguments (defaults when the plugin is absent).
	Topology topology.Config
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

// Parse reads a volcano-scheduler.conf as Volcano's loader does (yaml.v2
// into the conf's shape) and checks what Volcano leaves to run time: every
// action and every plugin must be one the scheduler registers (Volcano
// only logs an unknown plugin), no plugin may appear twice, unknown keys
// are errors, the rdma-topology plugin's arguments must parse, and actions
// that need that plugin (topology-allocate, topology-preempt,
// topology-reclaim) must have it. Its errors are *ConfError.
func Parse(text string) (*Conf, error) {
	var raw File
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
	c := &Conf{Text: text, File: raw, Topology: topology.Config{}.WithDefaults()}
	for _, name := range strings.Split(raw.Actions, ",") {
		name = strings.TrimSpace(name)
		if name == "" {
			return nil, &ConfError{Field: "actions", Msg: fmt.Sprintf("empty action name in %q", raw.Actions)}
		}
		if !slices.Contains(Actions, name) {
			return nil, &ConfError{Field: "actions", Msg: fmt.Sprintf("unknown action %q", name)}
		}
		c.ActionNames = append(c.ActionNames, name)
	}
	if len(raw.Tiers) == 0 {
		return nil, &ConfError{Field: "tiers", Msg: "required: no plugin configured"}
	}
	seen := map[string]string{}
	for i, tier := range raw.Tiers {
		for j, p := range tier.Plugins {
			field := fmt.Sprintf("tiers[%d].plugins[%d]", i, j)
			if p.Name == "" {
				return nil, &ConfError{Field: field + ".name", Msg: "required"}
			}
			if !slices.Contains(Plugins, p.Name) {
				return nil, &ConfError{Field: field + ".name", Msg: fmt.Sprintf("unknown plugin %q", p.Name)}
			}
			if prev, dup := seen[p.Name]; dup {
				return nil, &ConfError{Field: field + ".name", Msg: fmt.Sprintf("plugin %q is already configured at %s", p.Name, prev)}
			}
			seen[p.Name] = field
			if p.Name == pluginargs.PluginName {
				args, err := pluginargs.Parse(p.Arguments)
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
	return c, nil
}

// checkTopologyPlugin reports a conf whose actions need the rdma-topology
// plugin while no tier enables it (the scheduler would refuse every RDMA
// pod).
func checkTopologyPlugin(actions string, hasPlugin bool) *ConfError {
	if hasPlugin {
		return nil
	}
	for _, name := range strings.Split(actions, ",") {
		if name = strings.TrimSpace(name); slices.Contains(topologyActions, name) {
			return &ConfError{Field: "tiers", Msg: fmt.Sprintf("plugin %q is missing: action %q needs it (without it no pod requesting RDMA is placed)",
				pluginargs.PluginName, name)}
		}
	}
	return nil
}

// TopologyArgs reads only the rdma-topology plugin's arguments of a conf:
// what a read-only view of the fabric needs (the resources, where S1 comes
// from), with no action or other plugin checked. It returns the defaults
// and false when no tier names the plugin; an error only when the YAML or
// the plugin's arguments cannot be read.
func TopologyArgs(text string) (topology.Config, bool, error) {
	var raw File
	if err := yaml.Unmarshal([]byte(text), &raw); err != nil {
		return topology.Config{}, false, &ConfError{Msg: "invalid YAML: " + strings.ReplaceAll(strings.TrimPrefix(err.Error(), "yaml: "), "\n", " ")}
	}
	for i, tier := range raw.Tiers {
		for j, p := range tier.Plugins {
			if p.Name != pluginargs.PluginName {
				continue
			}
			args, err := pluginargs.Parse(p.Arguments)
			if err != nil {
				return topology.Config{}, false, &ConfError{Field: fmt.Sprintf("tiers[%d].plugins[%d].arguments", i, j), Msg: err.Error()}
			}
			return args.TopologyConfig().WithDefaults(), true, nil
		}
	}
	return topology.Config{}.WithDefaults(), false, nil
}
