package gangfit

import (
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"volcano.sh/volcano/pkg/scheduler/api"
	"volcano.sh/volcano/pkg/scheduler/framework"

	"github.com/rdmatopo/rdmatopo/actions/internal/plugin"
	"github.com/rdmatopo/rdmatopo/core/ledger"
	"github.com/rdmatopo/rdmatopo/core/placement"
	"github.com/rdmatopo/rdmatopo/core/preemption"
	"github.com/rdmatopo/rdmatopo/core/topology"
	"github.com/rdmatopo/rdmatopo/internal/testing/builders"
)

// claimJob builds a job of priority prio created at minute min, with ready
// of minMember pods running.
func claimJob(uid string, prio int32, min int, ready, minMember int32) *api.JobInfo {
	j := api.NewJobInfo(api.JobID(uid))
	j.Namespace, j.Name, j.Priority, j.MinAvailable = "ns", uid, prio, minMember
	j.CreationTimestamp = metav1.NewTime(time.Date(2025, 1, 1, 0, min, 0, 0, time.UTC))
	for i := int32(0); i < ready; i++ {
		p := builders.MakePod("ns", fmt.Sprintf("%s-%d", uid, i)).Node("n1").Obj()
		p.Status.Phase = corev1.PodRunning
		j.AddTaskInfo(api.NewTaskInfo(p))
	}
	return j
}

// noPlugin is a session without the rdma-topology plugin's checks: only
// the calls gangfit makes to walk a node set are answered.
type noPlugin struct{ plugin.Topology }

// WithoutNICCheck runs fn: there are no plugin checks to leave out.
func (noPlugin) WithoutNICCheck(_ *api.TaskInfo, fn func()) { fn() }

// newAccess returns a preemption access without fabric, reservations or
// holds: claims only.
func newAccess() *preemption.Access {
	return preemption.NewAccess(nil, ledger.New(), &preemption.Store{}, nil)
}

// TestClaimedAgainst: a claim keeps out only jobs of the claiming gang's
// priority created after it with nothing placed, and lapses once the
// claiming gang is placed or gone.
func TestClaimedAgainst(t *testing.T) {
	claimer := claimJob("claimer", 100, 10, 0, 4)
	tests := []struct {
		name    string
		claimer *api.JobInfo // nil: gone from the session
		job     *api.JobInfo
		want    bool
	}{
		{"younger, same priority", claimer, claimJob("young", 100, 11, 0, 2), true},
		{"same age, larger UID", claimer, claimJob("zz", 100, 10, 0, 2), true},
		{"same age, smaller UID", claimer, claimJob("aa", 100, 10, 0, 2), false},
		{"older, same priority", claimer, claimJob("old", 100, 9, 0, 2), false},
		{"younger, lower priority (the claimer may evict it)", claimer, claimJob("low", 10, 11, 0, 2), false},
		{"younger, higher priority", claimer, claimJob("top", 1000, 11, 0, 2), false},
		{"younger, with pods placed", claimer, claimJob("running", 100, 11, 1, 2), false},
		{"the claimer itself", claimer, claimer, false},
		{"claimer placed", claimJob("claimer", 100, 10, 4, 4), claimJob("young", 100, 11, 0, 2), false},
		{"claimer priority changed", claimJob("claimer", 500, 10, 0, 4), claimJob("young", 100, 11, 0, 2), false},
		{"claimer gone", nil, claimJob("young", 100, 11, 0, 2), false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			jobs := map[api.JobID]*api.JobInfo{tc.job.UID: tc.job}
			if tc.claimer != nil {
				jobs[tc.claimer.UID] = tc.claimer
			}
			ssn, p := &framework.Session{Jobs: jobs}, newAccess()
			p.Claim(&preemption.Claim{Job: "claimer", Name: "ns/claimer", Priority: 100, Created: claimer.CreationTimestamp,
				Room: "s0 A", S0s: map[topology.S0ID]bool{"A": true}, Nodes: map[string]bool{"n1": true, "n2": true}})
			got := len(ClaimedAgainst(ssn, p, tc.job)) > 0
			if got != tc.want {
				t.Errorf("claimed against %s = %v, want %v", tc.job.Name, got, tc.want)
			}
		})
	}
}

// TestKeepOffClaims: a leaf or S1 room excludes its leaves from the gang
// (its nodes stay usable on other leaves), a node room the node; pods
// without RDMA are kept off every room's nodes; RetainClaims drops the
// claims not renewed.
func TestKeepOffClaims(t *testing.T) {
	young := claimJob("young", 100, 20, 0, 2)
	jobs := map[api.JobID]*api.JobInfo{young.UID: young}
	for _, id := range []string{"c1", "c2"} {
		jobs[api.JobID(id)] = claimJob(id, 100, 10, 0, 4)
	}
	ssn, p := &framework.Session{Jobs: jobs}, newAccess()
	p.Claim(&preemption.Claim{Job: "c1", Name: "ns/c1", Priority: 100, Created: jobs["c1"].CreationTimestamp,
		Room: "s0 A", S0s: map[topology.S0ID]bool{"A": true}, Nodes: map[string]bool{"n1": true}})
	p.Claim(&preemption.Claim{Job: "c2", Name: "ns/c2", Priority: 100, Created: jobs["c2"].CreationTimestamp,
		Room: "node n9", Nodes: map[string]bool{"n9": true}})

	g := placement.Gang{}
	by, n := preemption.KeepOff(&g, ClaimedAgainst(ssn, p, young))
	if by != "ns/c1" || n != 2 {
		t.Errorf("KeepOff = %q, %d; want ns/c1, 2", by, n)
	}
	if diff := cmp.Diff(map[topology.S0ID]bool{"A": true}, g.ExcludeS0s); diff != "" {
		t.Errorf("excluded S0s (-want,+got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]bool{"n9": true}, g.Exclude); diff != "" {
		t.Errorf("excluded nodes (-want,+got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]string{"n1": "ns/c1", "n9": "ns/c2"}, preemption.ClaimedNodes(ClaimedAgainst(ssn, p, young))); diff != "" {
		t.Errorf("claimed nodes (-want,+got):\n%s", diff)
	}
	f := preemption.ClaimedFailure(&placement.Failure{Code: placement.ReasonNoCapacity, Message: "no S0 holds 2 pods"}, by, n)
	if want := "no S0 holds 2 pods (2 rooms kept for ns/c1, an older waiting gang of the same priority)"; f.Message != want {
		t.Errorf("failure message %q, want %q", f.Message, want)
	}

	p.RetainClaims(func(c *preemption.Claim) bool { return c.Job == "c2" })
	if got := p.Claims(); len(got) != 1 || got[0].Name != "ns/c2" {
		t.Errorf("claims after RetainClaims(c2): %v, want only ns/c2", got)
	}
}
