package rdmatopology

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"volcano.sh/apis/pkg/apis/scheduling"
	"volcano.sh/volcano/pkg/scheduler/api"
	"volcano.sh/volcano/pkg/scheduler/framework"

	"github.com/rdmatopo/rdmatopo/core/ledger"
	"github.com/rdmatopo/rdmatopo/core/placement"
)

// TestHeldKeepsThePlanOfAHardGang: a hard gang the node agent realized
// wider than planned keeps planning its remaining pods next to the leaves
// of its plan (else no leaf would hold them within its tier and the gang
// would stay partial); a soft gang, and a gang whose plan is unknown, plan
// next to what they hold.
func TestHeldKeepsThePlanOfAHardGang(t *testing.T) {
	hard := map[string]string{ledger.AnnotationMode: "hard", ledger.AnnotationHighestTier: "s0"}
	cases := map[string]struct {
		annotations map[string]string
		plan        *PlannedPlacement
		wantHeld    []string
		wantReal    []string
	}{
		"hard, realized wider than planned: the plan's leaves": {
			annotations: hard,
			plan:        &PlannedPlacement{Tier: "s0", S0: []string{"A"}, S1: []string{}},
			wantHeld:    []string{"node:n1", "node:n2", "s0:A"},
			wantReal:    []string{"node:n1", "node:n2", "s0:A", "s0:B"},
		},
		"hard, no plan recorded: what it holds": {
			annotations: hard,
			wantHeld:    []string{"node:n1", "node:n2", "s0:A", "s0:B"},
			wantReal:    []string{"node:n1", "node:n2", "s0:A", "s0:B"},
		},
		"soft: what it holds": {
			plan:     &PlannedPlacement{Tier: "s0", S0: []string{"A"}, S1: []string{}},
			wantHeld: []string{"node:n1", "node:n2", "s0:A", "s0:B"},
			wantReal: []string{"node:n1", "node:n2", "s0:A", "s0:B"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			s := reservationSession(t)
			const job = "ns/g"
			pg := &api.PodGroup{PodGroup: scheduling.PodGroup{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "g", Annotations: tc.annotations}}}
			s.ssn = &framework.Session{Jobs: map[api.JobID]*api.JobInfo{job: {UID: job, Namespace: "ns", Name: "g", PodGroup: pg}}}
			for _, r := range []ledger.Reservation{zoneRes("p0", job, "n1", 0), zoneRes("p1", job, "n2", 1)} {
				if err := s.rt.Ledger.Reserve(r); err != nil {
					t.Fatal(err)
				}
				s.indexLocked(r)
			}
			if tc.plan != nil {
				s.rt.truth.planned[job] = *tc.plan
			}
			if diff := cmp.Diff(tc.wantHeld, heldStrings(s.occupancy(job))); diff != "" {
				t.Errorf("Occupancy (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantReal, heldStrings(s.realized(job))); diff != "" {
				t.Errorf("Realized (-want +got):\n%s", diff)
			}
		})
	}
}

func heldStrings(h *placement.Occupancy) []string {
	var out []string
	for n := range h.Nodes {
		out = append(out, "node:"+n)
	}
	for id := range h.S0s {
		out = append(out, "s0:"+string(id))
	}
	return sortedStrings(out)
}
