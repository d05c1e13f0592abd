package sim

import "testing"

func TestSummary(t *testing.T) {
	cases := []struct {
		name string
		rep  Report
		want string
	}{
		{"one of each", Report{Cycles: 1, Jobs: []JobPlacement{{Placed: true, Tier: "s0", Pods: 1, BoundPods: 1, RDMA: true}}},
			"1 job: 1 placed (1 s0), 0 waiting; 1 of 1 pod bound in 1 scheduling cycle."},
		{"tiers, no RDMA, no NICs, waiting", Report{Cycles: 3, Jobs: []JobPlacement{
			{Placed: true, Tier: "s1", Pods: 4, BoundPods: 4, RDMA: true},
			{Placed: true, Pods: 2, BoundPods: 2},
			{Placed: true, Pods: 2, BoundPods: 2, RDMA: true},
			{Pods: 3, RDMA: true},
		}}, "4 jobs: 3 placed (1 s1, 1 no RDMA, 1 RDMA without NIC assignment), 1 waiting; 8 of 11 pods bound in 3 scheduling cycles."},
		{"nothing", Report{}, "0 jobs: 0 placed, 0 waiting; 0 of 0 pods bound in 0 scheduling cycles."},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := Summary(&tc.rep); got != tc.want {
				t.Errorf("Summary = %q, want %q", got, tc.want)
			}
		})
	}
}
