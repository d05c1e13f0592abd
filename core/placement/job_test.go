package placement

import "testing"

// TestJob: a job is an RDMA gang exactly when some pod requests RDMA, and
// only those pods are named.
func TestJob(t *testing.T) {
	tests := map[string]struct {
		job      Job
		rdma     bool
		requests map[string]bool
	}{
		"no pods":         {Job{}, false, map[string]bool{"a": false}},
		"empty set":       {Job{RDMA: map[string]bool{}}, false, map[string]bool{"a": false}},
		"one RDMA pod":    {Job{RDMA: map[string]bool{"a": true}}, true, map[string]bool{"a": true, "b": false}},
		"unknown pod uid": {Job{RDMA: map[string]bool{"a": true}}, true, map[string]bool{"": false, "A": false}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if got := tc.job.IsRDMA(); got != tc.rdma {
				t.Errorf("IsRDMA = %v, want %v", got, tc.rdma)
			}
			for uid, want := range tc.requests {
				if got := tc.job.Requests(uid); got != want {
					t.Errorf("Requests(%q) = %v, want %v", uid, got, want)
				}
			}
		})
	}
}
