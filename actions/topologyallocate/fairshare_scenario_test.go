package topologyallocate_test

import (
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// withMinMember sets the minMember of the cluster's PodGroup name.
func withMinMember(c *cluster, name string, min int32) {
	for _, pg := range c.pgs {
		if pg.Name == name {
			pg.Spec.MinMember = min
		}
	}
}

// TestBeyondMinMember: once a gang's minMember is placed, its other pods
// compete pod by pod as allocate's do (the job is pushed back after each),
// and RDMA pods among them still get NICs next to the gang.
func TestBeyondMinMember(t *testing.T) {
	cases := map[string]struct {
		build      func(c *cluster)
		wantBound  map[string]int
		wantLeaves map[string][]string
	}{
		"pods beyond minMember join their gang's leaf": {
			build: func(c *cluster) {
				for i := 1; i <= 4; i++ {
					c.addNode(fmt.Sprintf("n%d", i), "A", "B")
				}
				c.addJob("wide", 4, 4, 2, nil)
				withMinMember(c, "wide", 2)
			},
			wantBound:  map[string]int{"wide": 4},
			wantLeaves: map[string][]string{"wide": {"A"}},
		},
		"two RDMA gangs of minMember 1 share one node": {
			build: func(c *cluster) {
				c.addNode("n1", "A", "B")
				c.addJob("one", 2, 4, 2, nil)
				c.addJob("two", 2, 4, 2, nil)
				withMinMember(c, "one", 1)
				withMinMember(c, "two", 1)
			},
			wantBound: map[string]int{"one": 1, "two": 1},
		},
		// The project's conf has no drf: once both jobs are ready, the job
		// order (priority, then gang: unready first, then creation) keeps
		// the first job first, as it does under allocate.
		"a CPU job gets its minMember before another job's pods beyond it": {
			build: func(c *cluster) {
				c.addNode("n1", "A", "B") // 128 CPUs
				c.addJob("one", 32, 0, 0, nil)
				c.addJob("two", 32, 0, 0, nil)
				withMinMember(c, "one", 1)
				withMinMember(c, "two", 1)
			},
			wantBound: map[string]int{"one": 31, "two": 1},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			c := &cluster{}
			tc.build(c)
			o := runSession(t, c)
			got := map[string]int{}
			for job := range tc.wantBound {
				got[job] = o.binds.Count("ns", job)
			}
			if diff := cmp.Diff(tc.wantBound, got); diff != "" {
				t.Errorf("pods bound per job (-want,+got):\n%s", diff)
			}
			for job, want := range tc.wantLeaves {
				if diff := cmp.Diff(want, o.binds.Leaves("ns", job)); diff != "" {
					t.Errorf("job %s leaves (-want,+got):\n%s", job, diff)
				}
			}
			checkBinds(t, o)
		})
	}
}
