package bench

import (
	"bytes"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/rdmatopo/rdmatopo/internal/sim/nodeagent"
)

func TestParseNodeAgentFlag(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want nodeagent.Mode
	}{
		{name: "default", args: nil, want: nodeagent.NUMA},
		{name: "numa", args: []string{"--node-agent", "numa"}, want: nodeagent.NUMA},
		{name: "exact", args: []string{"--node-agent", "exact"}, want: nodeagent.Exact},
		{name: "blind", args: []string{"--node-agent=blind"}, want: nodeagent.Blind},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var stderr bytes.Buffer
			c, code, done := parseArgs(tc.args, &stderr)
			if done {
				t.Fatalf("parseArgs(%q) stopped with code %d: %s", tc.args, code, stderr.String())
			}
			if diff := cmp.Diff(tc.want, c.opts.NodeAgent); diff != "" {
				t.Errorf("parseArgs(%q) node agent (-want +got):\n%s", tc.args, diff)
			}
		})
	}
}
