package simulatecmd

import (
	"encoding/json"
	"slices"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/rdmatopo/rdmatopo/internal/live"
)

// TestSimulateResultShape: `kubectl rdmatopo simulate -o json|yaml` prints
// the keys `rdmatopo simulate -o json` prints (pods, jobs with
// waitedSeconds and ringCrossings, evictions) at the top level, beside its
// own schedulerConf, waiting and cycles.
func TestSimulateResultShape(t *testing.T) {
	conf, cluster, set := sampleInputs(t)
	snap := &live.Snapshot{Cluster: cluster}
	res, _, err := simulate(conf, snap, set, true, 100)
	if err != nil {
		t.Fatal(err)
	}
	for _, marshal := range []func(any) ([]byte, error){json.Marshal, func(v any) ([]byte, error) { return yaml.Marshal(v) }} {
		data, err := marshal(res)
		if err != nil {
			t.Fatal(err)
		}
		var top map[string]any
		if err := yaml.Unmarshal(data, &top); err != nil {
			t.Fatal(err)
		}
		var keys []string
		for k := range top {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		if want := []string{"cycles", "evictions", "jobs", "pods", "schedulerConf", "waiting"}; !slices.Equal(keys, want) {
			t.Errorf("top-level keys %v, want %v", keys, want)
		}
		jobs, _ := top["jobs"].([]any)
		if len(jobs) == 0 {
			t.Fatalf("no jobs in %s", data)
		}
		for _, k := range []string{"waitedSeconds", "ringCrossings", "reason", "tier"} {
			if _, ok := jobs[0].(map[string]any)[k]; !ok {
				t.Errorf("job without %q: %v", k, jobs[0])
			}
		}
	}
}
