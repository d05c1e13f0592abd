package sim

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/require"

	"github.com/rdmatopo/rdmatopo/config"
)

// stockConf is Volcano's usual gang conf without rdmatopo.
const stockConf = `
actions: "enqueue, allocate, backfill"
tiers:
- plugins:
  - name: priority
  - name: gang
  - name: conformance
- plugins:
  - name: predicates
  - name: proportion
  - name: nodeorder
  - name: binpack
`

// topoConf is a conf with rdmatopo's action and plugin, at fixed
// positions (the built-in conf may move them).
const topoConf = `
actions: "enqueue, topology-allocate, backfill"
tiers:
- plugins:
  - name: priority
  - name: gang
  - name: conformance
  - name: rdma-topology
- plugins:
  - name: predicates
  - name: proportion
  - name: nodeorder
  - name: binpack
`

// confWith returns topoConf with the rdma-topology plugin's arguments set
// to args (YAML lines indented for the plugin entry).
func confWith(args string) string {
	return strings.Replace(topoConf, "  - name: rdma-topology\n", "  - name: rdma-topology\n    arguments:\n"+args, 1)
}

func TestParseConf(t *testing.T) {
	cases := map[string]struct {
		text        string
		wantActions []string
		wantPlugin  bool
		wantS1Label string
	}{
		"built-in conf": {
			text:        config.SchedulerConf,
			wantActions: []string{"enqueue", "topology-allocate", "topology-preempt", "topology-reclaim", "backfill"},
			wantPlugin:  true,
			wantS1Label: "rdmatopo.io/minipod",
		},
		"stock conf": {
			text:        stockConf,
			wantActions: []string{"enqueue", "allocate", "backfill"},
		},
		"S1 label argument": {
			text:        confWith("      s1NodeLabel: rdmatopo.io/minipod\n"),
			wantActions: []string{"enqueue", "topology-allocate", "backfill"},
			wantPlugin:  true,
			wantS1Label: "rdmatopo.io/minipod",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			c, err := ParseConf(tc.text)
			require.NoError(t, err)
			if diff := cmp.Diff(tc.wantActions, c.ActionNames()); diff != "" {
				t.Errorf("actions (-want +got):\n%s", diff)
			}
			require.Equal(t, tc.wantPlugin, c.TopologyPlugin)
			require.Equal(t, tc.wantS1Label, c.Topology.S1NodeLabel)
			require.Equal(t, "vke.volcengine.com/rdma", c.Topology.RDMAResource)
		})
	}
}

func TestParseConfErrors(t *testing.T) {
	cases := map[string]struct {
		text      string
		wantField string
		wantMsg   string
	}{
		"unknown action": {
			text:      strings.Replace(stockConf, "allocate,", "alocate,", 1),
			wantField: "actions",
			wantMsg:   `unknown action "alocate"`,
		},
		"no action": {
			text:      strings.Replace(stockConf, `"enqueue, allocate, backfill"`, `""`, 1),
			wantField: "actions",
			wantMsg:   "required",
		},
		"unknown plugin": {
			text:      strings.Replace(stockConf, "name: binpack", "name: binpak", 1),
			wantField: "tiers[1].plugins[3].name",
			wantMsg:   `unknown plugin "binpak"`,
		},
		"plugin twice": {
			text:      strings.Replace(stockConf, "name: binpack", "name: gang", 1),
			wantField: "tiers[1].plugins[3].name",
			wantMsg:   "already configured at tiers[0].plugins[1]",
		},
		"the simulator's own plugin": {
			text:      strings.Replace(stockConf, "name: binpack", "name: "+tieBreakPluginName, 1),
			wantField: "tiers[1].plugins[3].name",
			wantMsg:   "unknown plugin",
		},
		"unknown plugin argument": {
			text:      confWith("      s1Label: x\n"),
			wantField: "tiers[0].plugins[3].arguments",
			wantMsg:   "s1Label",
		},
		"wrongly typed plugin argument": {
			text:      confWith("      weight: heavy\n"),
			wantField: "tiers[0].plugins[3].arguments",
			wantMsg:   "weight",
		},
		"unknown key": {
			text:      stockConf + "tier: []\n",
			wantField: "line 13",
			wantMsg:   `unknown field "tier"`,
		},
		"topology-allocate without rdma-topology": {
			text:      strings.Replace(topoConf, "  - name: rdma-topology\n", "", 1),
			wantField: "tiers",
			wantMsg:   `plugin "rdma-topology" is missing: action "topology-allocate" needs it`,
		},
		"not YAML": {
			text:    "actions: [unclosed\n",
			wantMsg: "invalid YAML",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := ParseConf(tc.text)
			require.Error(t, err)
			var ce *ConfError
			require.True(t, errors.As(err, &ce), "want *ConfError, got %T", err)
			require.Equal(t, tc.wantField, ce.Field)
			require.Contains(t, ce.Msg, tc.wantMsg)
		})
	}
}
