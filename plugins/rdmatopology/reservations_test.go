package rdmatopology

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/kubewharf/katalyst-api/pkg/apis/node/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	"volcano.sh/volcano/pkg/scheduler/api"

	"github.com/rdmatopo/rdmatopo/core/ledger"
	"github.com/rdmatopo/rdmatopo/core/topology"
	"github.com/rdmatopo/rdmatopo/internal/testing/builders"
)

// reservationSession is a session over two provider-shaped nodes (leaf A on
// NUMA 0, B on NUMA 1) without a Volcano session: reserve and release touch
// only the ledger and the session's views.
func reservationSession(t *testing.T) *SessionState {
	t.Helper()
	cfg := topology.Config{}.WithDefaults()
	var nodes []*corev1.Node
	var cnrs []*v1alpha1.CustomNodeResource
	for _, n := range []string{"n1", "n2"} {
		nodes = append(nodes, builders.MakeNode(n).Shared().GPU(8).RDMA(4).CPU("128").Obj())
		cnrs = append(cnrs, builders.MakeCNR(n).Policy(v1alpha1.TopologyPolicySingleNUMANodeContainerLevel).
			Zone(0, 4, 64000).Zone(1, 4, 64000).
			NIC(builders.NUMANICs[0][0], 0, "A").NIC(builders.NUMANICs[0][1], 0, "A").
			NIC(builders.NUMANICs[1][0], 1, "B").NIC(builders.NUMANICs[1][1], 1, "B").Obj())
	}
	f := topology.Build(cfg, nodes, cnrs)
	rt := NewRuntime(cfg)
	return testSession(rt, nil, f)
}

func zoneRes(uid, job, node string, numa int) ledger.Reservation {
	nics := builders.NUMANICs[numa]
	return ledger.Reservation{UID: uid, Namespace: "ns", Name: uid, Job: job, Node: node,
		Zones: []ledger.ZoneUse{{NUMA: numa, GPU: 4, CPUMilli: 4000, NICs: []topology.NICID{topology.NICID(nics[0]), topology.NICID(nics[1])}}}}
}

// views summarizes what the session's views say: the holder of every NIC
// in the free view, and each job's held nodes and leaves.
type views struct {
	Holders   map[string]string
	Occupancy map[string][]string
}

func viewsOf(s *SessionState, jobs ...string) views {
	v := views{Holders: map[string]string{}, Occupancy: map[string][]string{}}
	for _, n := range s.fabric.NodeNames() {
		node, _ := s.fabric.Node(n)
		for _, z := range node.Zones {
			for _, nic := range z.NICs {
				if uid, ok := s.state.HolderOf(n, nic.ID); ok {
					v.Holders[n+"/"+string(nic.ID)] = uid
				}
			}
		}
	}
	for _, j := range jobs {
		h := s.occupancy(api.JobID(j))
		var out []string
		for n := range h.Nodes {
			out = append(out, "node:"+n)
		}
		for id := range h.S0s {
			out = append(out, "s0:"+string(id))
		}
		if len(out) > 0 {
			v.Occupancy[j] = sortedStrings(out)
		}
	}
	return v
}

func sortedStrings(in []string) []string {
	m := map[string]bool{}
	for _, s := range in {
		m[s] = true
	}
	return sortedKeys(m)
}

// rebuiltViews derives the views afresh from the ledger, as the next
// session would: the session's views must always equal them.
func rebuiltViews(s *SessionState, jobs ...string) views {
	fresh := testSession(s.rt, nil, s.fabric)
	return viewsOf(fresh, jobs...)
}

func TestReserveRelease(t *testing.T) {
	type step struct {
		reserve *ledger.Reservation
		release string
		job     string
		wantErr bool
	}
	r := func(uid, job, node string, numa int) *ledger.Reservation {
		res := zoneRes(uid, job, node, numa)
		return &res
	}
	cases := map[string]struct {
		steps []step
		want  views
	}{
		"reserve two pods of one gang": {
			steps: []step{{reserve: r("p1", "ns/g", "n1", 0)}, {reserve: r("p2", "ns/g", "n2", 0)}},
			want: views{
				Holders:   map[string]string{"n1/0000:1a:00.0": "p1", "n1/0000:3f:00.0": "p1", "n2/0000:1a:00.0": "p2", "n2/0000:3f:00.0": "p2"},
				Occupancy: map[string][]string{"ns/g": {"node:n1", "node:n2", "s0:A"}},
			},
		},
		"a held NIC is refused and changes nothing": {
			steps: []step{{reserve: r("p1", "ns/g", "n1", 0)}, {reserve: r("p2", "ns/h", "n1", 0), wantErr: true}},
			want: views{
				Holders:   map[string]string{"n1/0000:1a:00.0": "p1", "n1/0000:3f:00.0": "p1"},
				Occupancy: map[string][]string{"ns/g": {"node:n1", "s0:A"}},
			},
		},
		"release frees the NICs and the job's held placement": {
			steps: []step{{reserve: r("p1", "ns/g", "n1", 0)}, {reserve: r("p2", "ns/g", "n2", 1)}, {release: "p1", job: "ns/g"}},
			want: views{
				Holders:   map[string]string{"n2/0000:d1:00.0": "p2", "n2/0000:e7:00.0": "p2"},
				Occupancy: map[string][]string{"ns/g": {"node:n2", "s0:B"}},
			},
		},
		"release of an unknown pod is a no-op": {
			steps: []step{{reserve: r("p1", "ns/g", "n1", 0)}, {release: "nope", job: "ns/g"}},
			want: views{
				Holders:   map[string]string{"n1/0000:1a:00.0": "p1", "n1/0000:3f:00.0": "p1"},
				Occupancy: map[string][]string{"ns/g": {"node:n1", "s0:A"}},
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			s := reservationSession(t)
			for i, st := range tc.steps {
				if st.reserve != nil {
					err := s.reserve(*st.reserve)
					if (err != nil) != st.wantErr {
						t.Fatalf("step %d: reserve error %v, want error %v", i, err, st.wantErr)
					}
					continue
				}
				s.release(st.release, api.JobID(st.job))
			}
			got := viewsOf(s, "ns/g", "ns/h")
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("views (-want,+got):\n%s", diff)
			}
			if diff := cmp.Diff(rebuiltViews(s, "ns/g", "ns/h"), got); diff != "" {
				t.Errorf("views differ from a rebuild from the ledger (-rebuilt,+session):\n%s", diff)
			}
			if err := s.rt.Ledger.CheckInvariants(); err != nil {
				t.Errorf("ledger invariants: %v", err)
			}
		})
	}
}
