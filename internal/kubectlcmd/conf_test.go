package kubectlcmd

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rdmatopo/rdmatopo/core/topology"
	"github.com/rdmatopo/rdmatopo/internal/live"
)

// TestViewConf: a conf the scheduler cannot run stops simulate with an
// error naming --scheduler-conf, while the read-only views go on with the
// conf's rdma-topology arguments (the defaults when it has none) and say
// so on stderr; arguments that cannot be read stop both.
func TestViewConf(t *testing.T) {
	const tail = "tiers:\n- plugins:\n  - name: priority\n  - name: gang\n"
	cases := []struct {
		name      string
		conf      string
		wantLabel string // the view's S1 label; "" with wantErr
		wantWarn  string
		wantErr   string
	}{
		{name: "usable", conf: "actions: \"enqueue, topology-allocate\"\n" + tail + "  - name: rdma-topology\n    arguments: {s1NodeLabel: pod}\n", wantLabel: "pod"},
		{name: "topology-allocate without rdma-topology", conf: "actions: \"enqueue, topology-allocate\"\n" + tail,
			wantLabel: "", wantWarn: "rdma-topology's default arguments"},
		{name: "unknown action, plugin arguments kept", conf: "actions: \"enqueue, allocat\"\n" + tail + "  - name: rdma-topology\n    arguments: {s1NodeLabel: pod}\n",
			wantLabel: "pod", wantWarn: "its rdma-topology arguments"},
		{name: "invalid arguments", conf: "actions: \"enqueue, topology-allocate\"\n" + tail + "  - name: rdma-topology\n    arguments: {s1NodeLable: pod}\n",
			wantErr: "s1NodeLable"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			file := filepath.Join(t.TempDir(), "volcano-scheduler.conf")
			if err := os.WriteFile(file, []byte(tc.conf), 0o644); err != nil {
				t.Fatal(err)
			}
			var stderr bytes.Buffer
			o := &Options{confFile: file, stderr: &stderr}
			_, _, strictErr := o.Conf(context.Background(), &live.Clients{})
			conf, _, err := o.viewConf(context.Background(), &live.Clients{})
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) || !strings.Contains(err.Error(), "--scheduler-conf") {
					t.Fatalf("viewConf error %v, want one naming %q and --scheduler-conf", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("viewConf: %v", err)
			}
			if got := conf.Topology.S1NodeLabel; got != tc.wantLabel {
				t.Errorf("S1 label %q, want %q", got, tc.wantLabel)
			}
			if conf.Topology != conf.Topology.WithDefaults() && conf.Topology.RDMAResource != (topology.Config{}).WithDefaults().RDMAResource {
				t.Errorf("topology config %+v lacks the defaults", conf.Topology)
			}
			if tc.wantWarn == "" {
				if strictErr != nil || stderr.Len() > 0 {
					t.Errorf("usable conf: error %v, stderr %q", strictErr, stderr.String())
				}
				return
			}
			if strictErr == nil || !strings.Contains(strictErr.Error(), "--scheduler-conf") {
				t.Errorf("simulate's conf error %v does not name --scheduler-conf", strictErr)
			}
			if !strings.Contains(stderr.String(), tc.wantWarn) || !strings.Contains(stderr.String(), "--scheduler-conf") {
				t.Errorf("stderr %q does not say %q and --scheduler-conf", stderr.String(), tc.wantWarn)
			}
		})
	}
}
