package schedconf

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestCheckTopologyPlugin(t *testing.T) {
	cases := map[string]struct {
		actions   string
		hasPlugin bool
		want      string
	}{
		"stock actions need nothing":    {actions: "enqueue, allocate, preempt, backfill"},
		"topology-allocate with plugin": {actions: "enqueue, topology-allocate, backfill", hasPlugin: true},
		"topology-preempt with plugin":  {actions: "enqueue, topology-allocate, topology-preempt", hasPlugin: true},
		"topology-allocate without plugin": {
			actions: "enqueue, topology-allocate, backfill",
			want:    `tiers: plugin "rdma-topology" is missing: action "topology-allocate" needs it (without it no pod requesting RDMA is placed)`,
		},
		"topology-preempt without plugin": {
			actions: "enqueue, allocate,topology-preempt",
			want:    `tiers: plugin "rdma-topology" is missing: action "topology-preempt" needs it (without it no pod requesting RDMA is placed)`,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := ""
			if err := checkTopologyPlugin(tc.actions, tc.hasPlugin); err != nil {
				got = err.Error()
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("error (-want,+got):\n%s", diff)
			}
		})
	}
}
