package rdmatopology

import (
	"errors"
	"strings"
	"testing"

	"volcano.sh/volcano/pkg/scheduler/api"
	"volcano.sh/volcano/pkg/scheduler/framework"

	"github.com/rdmatopo/rdmatopo/core/placement"
	"github.com/rdmatopo/rdmatopo/core/step"
	"github.com/rdmatopo/rdmatopo/core/topology"
	"github.com/rdmatopo/rdmatopo/internal/testing/builders"
)

// unknownStep is a step the plugin does not take.
type unknownStep struct{ step.Settle }

// TestApplyNamesWhatIsMissing: a step naming a job, pod or node the
// session does not have fails with an error that names it and changes
// nothing; a nil SessionState (no plugin) settles a statement and refuses every
// other step.
func TestApplyNamesWhatIsMissing(t *testing.T) {
	job := api.NewJobInfo("j1")
	job.Namespace, job.Name = "ns", "gang"
	job.AddTaskInfo(api.NewTaskInfo(builders.MakePod("ns", "gang-0").UID("p0").Obj()))
	ssn := &framework.Session{Jobs: map[api.JobID]*api.JobInfo{"j1": job}, Nodes: map[string]*api.NodeInfo{}}
	s := testSession(nil, ssn, nil)
	tests := []struct {
		name string
		step step.Step
		want string
	}{
		{"unknown job", step.Allocate{Job: "nope", Pod: "p0", Node: "n1"}, "job nope is not in the session"},
		{"unknown pod", step.Pipeline{Job: "j1", Pod: "nope", Node: "n1"}, "job ns/gang has no pod nope"},
		{"unknown node", step.Allocate{Job: "j1", Pod: "p0", Node: "n9"}, "node n9 of ns/gang-0 is not in the session"},
		{"victim of an unknown job", step.Evict{Job: "gone", Pod: "v"}, "job gone is not in the session"},
		{"hold of an unknown job", step.Hold{Job: "gone"}, "hold: job gone is not in the session"},
		{"unknown step", unknownStep{}, "unknown step"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := s.Apply(framework.NewStatement(ssn), tc.step)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Apply(%T) = %v, want an error naming %q", tc.step, err, tc.want)
			}
			if len(s.planned) != 0 {
				t.Errorf("planned assignments after a failed step: %v", s.planned)
			}
		})
	}

	var none *SessionState
	if err := none.Apply(framework.NewStatement(ssn), step.Settle{Commit: true}); err != nil {
		t.Errorf("Settle on a nil SessionState: %v", err)
	}
	if err := none.Apply(nil, step.RealizeHolds{}); !errors.Is(err, ErrNoPlugin) {
		t.Errorf("RealizeHolds on a nil SessionState = %v, want ErrNoPlugin", err)
	}
}

// TestApplyCountsRefusedPlans: a planned task whose node has too few idle
// resources is refused and counted on the runtime (Runtime.PlanRefused); a
// refused task without a plan is not.
func TestApplyCountsRefusedPlans(t *testing.T) {
	job := api.NewJobInfo("j1")
	job.Namespace, job.Name = "ns", "gang"
	job.AddTaskInfo(api.NewTaskInfo(builders.MakePod("ns", "gang-0").UID("p0").Req("cpu", "4").Obj()))
	node := api.NewNodeInfo(builders.MakeNode("n1").CPU("2").Obj())
	ssn := &framework.Session{Jobs: map[api.JobID]*api.JobInfo{"j1": job}, Nodes: map[string]*api.NodeInfo{"n1": node}}
	rt := NewRuntime(topology.Config{})
	s := testSession(rt, ssn, nil)

	if err := s.Apply(framework.NewStatement(ssn), step.Allocate{Job: "j1", Pod: "p0", Node: "n1"}); !errors.Is(err, errIdle) {
		t.Fatalf("Apply without a plan = %v, want the idle refusal", err)
	}
	if n := rt.PlanRefused(); n != 0 {
		t.Errorf("PlanRefused after an unplanned refusal = %d, want 0", n)
	}
	planned := &placement.Assignment{Node: "n1"}
	if err := s.Apply(framework.NewStatement(ssn), step.Allocate{Job: "j1", Pod: "p0", Node: "n1", Planned: planned}); !errors.Is(err, errIdle) {
		t.Fatalf("Apply with a plan = %v, want the idle refusal", err)
	}
	if n := rt.PlanRefused(); n != 1 {
		t.Errorf("PlanRefused after a planned refusal = %d, want 1", n)
	}
}
