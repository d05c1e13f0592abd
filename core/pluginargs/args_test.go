package pluginargs

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestParseArgs(t *testing.T) {
	defaults := Args{RDMAResource: "vke.volcengine.com/rdma", GPUResource: "nvidia.com/gpu", Weight: 1, S1Source: "label", S1HyperNodeTier: 2}
	cases := map[string]struct {
		in      map[string]any
		want    *Args
		wantErr string
	}{
		"empty gives defaults": {in: nil, want: &defaults},
		"all set": {
			in:   map[string]any{"rdmaResource": "example.com/rdma", "gpuResource": "example.com/gpu", "s1NodeLabel": "example.com/minipod", "weight": 3},
			want: &Args{RDMAResource: "example.com/rdma", GPUResource: "example.com/gpu", S1NodeLabel: "example.com/minipod", Weight: 3, S1Source: "label", S1HyperNodeTier: 2},
		},
		"S1 from HyperNodes of tier 3": {
			in:   map[string]any{"s1Source": "hypernode", "s1HyperNodeTier": 3},
			want: &Args{RDMAResource: defaults.RDMAResource, GPUResource: defaults.GPUResource, Weight: 1, S1Source: "hypernode", S1HyperNodeTier: 3},
		},
		"unknown S1 source": {
			in:      map[string]any{"s1Source": "HyperNode"},
			wantErr: `plugins[rdma-topology].arguments.s1Source: Unsupported value: "HyperNode": supported values: "label", "hypernode"`,
		},
		"an S1 label with HyperNodes": {
			in:      map[string]any{"s1Source": "hypernode", "s1NodeLabel": "rdmatopo.io/minipod"},
			wantErr: "plugins[rdma-topology].arguments.s1NodeLabel: Invalid value: \"rdmatopo.io/minipod\": must be empty with s1Source: hypernode",
		},
		"tier not positive": {
			in:      map[string]any{"s1HyperNodeTier": -1},
			wantErr: "plugins[rdma-topology].arguments.s1HyperNodeTier: Invalid value: -1: must be >= 1",
		},
		"weight as a whole float (JSON)": {
			in:   map[string]any{"weight": float64(2)},
			want: &Args{RDMAResource: defaults.RDMAResource, GPUResource: defaults.GPUResource, Weight: 2, S1Source: "label", S1HyperNodeTier: 2},
		},
		"unknown key": {
			in:      map[string]any{"s1Label": "x"},
			wantErr: `plugins[rdma-topology].arguments.s1Label: Unsupported value: "s1Label"`,
		},
		"wrong type": {
			in:      map[string]any{"weight": "2"},
			wantErr: `plugins[rdma-topology].arguments.weight: Invalid value: "2": must be an integer, not string`,
		},
		"fractional weight": {
			in:      map[string]any{"weight": 1.5},
			wantErr: "plugins[rdma-topology].arguments.weight: Invalid value: 1.5: must be a whole number",
		},
		"weight out of range": {
			in:      map[string]any{"weight": 101},
			wantErr: "plugins[rdma-topology].arguments.weight: Invalid value: 101: must be between 1 and 100",
		},
		"negative weight is not clamped": {
			in:      map[string]any{"weight": -1},
			wantErr: "plugins[rdma-topology].arguments.weight: Invalid value: -1: must be between 1 and 100",
		},
		"empty resource name": {
			in:      map[string]any{"rdmaResource": " "},
			wantErr: "plugins[rdma-topology].arguments.rdmaResource: Invalid value",
		},
		"same resource twice": {
			in:      map[string]any{"rdmaResource": "nvidia.com/gpu"},
			wantErr: "must differ from rdmaResource",
		},
		"bad label": {
			in:      map[string]any{"s1NodeLabel": "no spaces allowed"},
			wantErr: "plugins[rdma-topology].arguments.s1NodeLabel: Invalid value",
		},
		"fault arguments set": {
			in: map[string]any{"nicFlapCount": 2, "nicFlapWindow": "5m", "nicCooldown": "90s", "replacementHold": "30s"},
			want: &Args{RDMAResource: defaults.RDMAResource, GPUResource: defaults.GPUResource, Weight: 1, S1Source: "label", S1HyperNodeTier: 2,
				NICFlapCount: 2, NICFlapWindow: 5 * time.Minute, NICCooldown: 90 * time.Second, ReplacementHold: 30 * time.Second},
		},
		"cool-down as a bare number": {
			in:      map[string]any{"nicCooldown": 600},
			wantErr: "plugins[rdma-topology].arguments.nicCooldown: Invalid value: 600: must be a string, not int",
		},
		"cool-down not a duration": {
			in:      map[string]any{"nicCooldown": "ten minutes"},
			wantErr: `plugins[rdma-topology].arguments.nicCooldown: Invalid value: "ten minutes": must be a duration such as 90s or 15m`,
		},
		"negative window": {
			in:      map[string]any{"nicFlapWindow": "-1m"},
			wantErr: `plugins[rdma-topology].arguments.nicFlapWindow: Invalid value: "-1m": must be positive`,
		},
		"hold below a second": {
			in:      map[string]any{"replacementHold": "10ms"},
			wantErr: `plugins[rdma-topology].arguments.replacementHold: Invalid value: "10ms": must be between 1s and 168h0m0s`,
		},
		"cool-down beyond a week": {
			in:      map[string]any{"nicCooldown": "200h"},
			wantErr: `plugins[rdma-topology].arguments.nicCooldown: Invalid value: "200h0m0s": must be between 1s and 168h0m0s`,
		},
		"flap count out of range": {
			in:      map[string]any{"nicFlapCount": 101},
			wantErr: "plugins[rdma-topology].arguments.nicFlapCount: Invalid value: 101: must be between 1 and 100",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := Parse(tc.in)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("Parse() error = %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("Parse() error = %v", err)
			}
			want := *tc.want
			want.SetDefaults() // the fault arguments' defaults, where a case leaves them out
			if diff := cmp.Diff(&want, got); diff != "" {
				t.Errorf("Parse() (-want,+got):\n%s", diff)
			}
		})
	}
}
