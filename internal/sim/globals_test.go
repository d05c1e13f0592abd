package sim

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"volcano.sh/volcano/cmd/scheduler/app/options"
	volcanoconf "volcano.sh/volcano/pkg/scheduler/conf"

	"github.com/rdmatopo/rdmatopo/config"
)

// TestCycleSetsVolcanoGlobals: whatever the process-wide state a test or
// another simulator left, each session runs with the enabled-action map of
// its own conf and vc-scheduler's default options.
func TestCycleSetsVolcanoGlobals(t *testing.T) {
	savedOpts, savedActions := options.ServerOpts, volcanoconf.EnabledActionMap
	t.Cleanup(func() { options.ServerOpts, volcanoconf.EnabledActionMap = savedOpts, savedActions })

	cases := map[string]struct {
		conf        string
		percent     int32
		wantActions map[string]bool
		wantPercent int32
	}{
		"project conf": {
			conf: config.SchedulerConf,
			wantActions: map[string]bool{"enqueue": true, "topology-allocate": true, "topology-preempt": true,
				"topology-reclaim": true, "backfill": true},
			wantPercent: 100,
		},
		"without enqueue, Volcano's adaptive node search": {
			conf:        strings.Replace(topoConf, "enqueue, ", "", 1),
			percent:     -1,
			wantActions: map[string]bool{"topology-allocate": true, "backfill": true},
			wantPercent: 0,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var seen map[string]bool
			var opts options.ServerOption
			s := newSim(t, tc.conf, fourNodes(), Options{NodesToFindPercent: tc.percent, OnCycle: func(*CycleReport) {
				seen, opts = volcanoconf.EnabledActionMap, *options.ServerOpts
			}})
			// What another harness may have left: options without the
			// flags' defaults, an action map of other actions.
			options.ServerOpts = &options.ServerOption{}
			volcanoconf.EnabledActionMap = map[string]bool{"allocate": true}
			if _, err := s.RunCycle(); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.wantActions, seen); diff != "" {
				t.Errorf("EnabledActionMap (-want,+got):\n%s", diff)
			}
			// vc-scheduler's flag defaults (Volcano's options.go).
			got := map[string]any{"priority-class": opts.EnablePriorityClass, "minimum-feasible-nodes": opts.MinNodesToFind,
				"minimum-percentage-nodes-to-find": opts.MinPercentageOfNodesToFind,
				"percentage-nodes-to-find":         opts.PercentageOfNodesToFind, "scheduler-name": opts.SchedulerNames}
			want := map[string]any{"priority-class": true, "minimum-feasible-nodes": int32(100),
				"minimum-percentage-nodes-to-find": int32(5),
				"percentage-nodes-to-find":         tc.wantPercent, "scheduler-name": []string{"volcano"}}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("ServerOpts (-want,+got):\n%s", diff)
			}
		})
	}
}
