package simulatecmd

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/rdmatopo/rdmatopo/config"
	"github.com/rdmatopo/rdmatopo/examples"
	"github.com/rdmatopo/rdmatopo/internal/explain"
	"github.com/rdmatopo/rdmatopo/internal/live"
	"github.com/rdmatopo/rdmatopo/internal/sim"
	"github.com/rdmatopo/rdmatopo/internal/workload"
)

// sampleInputs are the project's conf and the sample cluster and workload.
func sampleInputs(t *testing.T) (*sim.Conf, *workload.Cluster, *workload.Set) {
	t.Helper()
	conf, err := sim.ParseConf(config.SchedulerConf)
	if err != nil {
		t.Fatal(err)
	}
	cluster, err := workload.LoadCluster("cluster.yaml", examples.Cluster)
	if err != nil {
		t.Fatal(err)
	}
	set, err := workload.LoadWorkload("workload.yaml", examples.Workload)
	if err != nil {
		t.Fatal(err)
	}
	return conf, cluster, set
}

// TestExplainAgreesWithSimulate: with the sample's six gangs all waiting
// in a cluster, explain's "Would be placed now at" for each is where
// simulate (the scheduler's sessions) puts it: the gangs ahead of it in
// Volcano's order take their room first. Planned alone, several would be
// placed elsewhere (mpi-allreduce under the leaf llm-pretrain takes), and
// vision-hard, which the scheduler leaves waiting, would get a plan.
func TestExplainAgreesWithSimulate(t *testing.T) {
	conf, cluster, set := sampleInputs(t)
	snap := &live.Snapshot{Cluster: cluster, Pending: set.Pods, PodGroups: set.PodGroups, Queues: set.Queues, VolcanoJobTasks: set.VolcanoJobTasks}
	res, _, err := simulate(conf, snap, nil, true, 100)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := nextSession(conf, snap)
	if err != nil {
		t.Fatal(err)
	}
	disagreedAlone := 0
	for _, pg := range set.PodGroups {
		e := explain.Explain(conf.Topology, snap, pg)
		alone := e.Plan
		js := sim.JSONReport(rep)
		e.WithSession(&js)
		for _, j := range res.Jobs {
			if j.Namespace != pg.Namespace || j.Name != pg.Name || len(j.S0) == 0 && j.Placed {
				continue // not this gang, or no RDMA
			}
			if !j.Placed {
				if e.Plan != nil {
					t.Errorf("%s: simulate leaves it waiting, explain would place it at %+v", pg.Name, *e.Plan)
				}
				if alone != nil {
					disagreedAlone++
				}
				continue
			}
			if e.Plan == nil {
				t.Errorf("%s: simulate places it at %v, explain has no plan (notes %q)", pg.Name, j.S0, e.Notes)
				continue
			}
			if diff := cmp.Diff(j.S0, e.Plan.S0); diff != "" {
				t.Errorf("%s: explain's S0s differ from simulate's (-simulate,+explain):\n%s", pg.Name, diff)
			}
			if diff := cmp.Diff(j.S1, e.Plan.S1); diff != "" {
				t.Errorf("%s: explain's S1s differ from simulate's (-simulate,+explain):\n%s", pg.Name, diff)
			}
			if alone != nil && !cmp.Equal(alone.S0, j.S0) {
				disagreedAlone++
			}
		}
	}
	if disagreedAlone == 0 {
		t.Error("every gang planned alone agrees with simulate: the case does not test the session order")
	}
}
