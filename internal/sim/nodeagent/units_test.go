package nodeagent

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/kubewharf/katalyst-api/pkg/apis/node/v1alpha1"

	"github.com/rdmatopo/rdmatopo/core/ledger"
	"github.com/rdmatopo/rdmatopo/core/topology"
	"github.com/rdmatopo/rdmatopo/internal/testing/builders"
)

// TestAllotUnits: the agents hand a NIC of several RDMA units to pods up
// to its units, one unit per pod and NIC; Record lists each pod with one
// unit there, so the KCNR's free units count them.
func TestAllotUnits(t *testing.T) {
	nic := builders.NUMANICs
	// unitsCNR is agentCNR with zone 0's first NIC of 2 units; listed
	// consumers hold one unit of it each.
	unitsCNR := func(listed ...string) *v1alpha1.CustomNodeResource {
		w := builders.MakeCNR("n1").Policy(v1alpha1.TopologyPolicyNone).
			Zone(0, 4, 16000).Zone(1, 4, 16000).
			NIC(nic[0][0], 0, "A").NIC(nic[0][1], 0, "A").
			NIC(nic[1][0], 1, "B").NIC(nic[1][1], 1, "B").Units(nic[0][0], 2)
		for _, c := range listed {
			w.UseNIC(nic[0][0], c)
		}
		return w.Obj()
	}
	held := func(uid string, nics ...string) ledger.Reservation {
		return ledger.Reservation{UID: uid, Node: "n1", Zones: []ledger.ZoneUse{use(0, 1, 1000, nics...)}}
	}
	cases := []struct {
		name  string
		agent Mode
		cnr   *v1alpha1.CustomNodeResource
		held  []ledger.Reservation
		pod   string // NICs asked
		want  []ledger.ZoneUse
	}{
		{
			name: "numa: a NIC another pod holds still has a unit", agent: NUMA,
			cnr: unitsCNR(), held: []ledger.Reservation{held("u-q", nic[0][0])}, pod: "1",
			want: []ledger.ZoneUse{use(0, 1, 4000, nic[0][0])},
		},
		{
			name: "numa: both units taken (one listed, one held): the next NIC", agent: NUMA,
			cnr: unitsCNR("ns/r/u-r"), held: []ledger.Reservation{held("u-q", nic[0][0])}, pod: "1",
			want: []ledger.ZoneUse{use(0, 1, 4000, nic[0][1])},
		},
		{
			name: "numa: a 2-unit pod takes two distinct NICs, not two units of one", agent: NUMA,
			cnr: unitsCNR(), pod: "2",
			want: []ledger.ZoneUse{use(0, 1, 4000, nic[0][0], nic[0][1])},
		},
		{
			name: "numa: the NIC with the most free units first", agent: NUMA,
			cnr: builders.MakeCNR("n1").Policy(v1alpha1.TopologyPolicyNone).Zone(0, 4, 16000).
				NIC(nic[0][0], 0, "A").NIC(nic[0][1], 0, "A").Units(nic[0][0], 2).Units(nic[0][1], 3).Obj(),
			pod:  "1",
			want: []ledger.ZoneUse{use(0, 1, 4000, nic[0][1])},
		},
		{
			name: "blind: the listed unit leaves one for the pod", agent: Blind,
			cnr: unitsCNR("ns/r/u-r"), pod: "1",
			want: []ledger.ZoneUse{use(0, 1, 4000, nic[0][0])},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := Allot(tc.agent, topology.Config{}, tc.cnr, tc.held, agentPod("1", tc.pod, "0"))
			if !ok {
				t.Fatalf("nothing allotted")
			}
			if diff := cmp.Diff(tc.want, got.Zones); diff != "" {
				t.Errorf("zones (-want +got):\n%s", diff)
			}
		})
	}
}

// TestRecordSharedNIC: two pods recorded on one NIC of 2 units use it up.
func TestRecordSharedNIC(t *testing.T) {
	nic := topology.NICID(builders.NUMANICs[0][0])
	cnr := builders.MakeCNR("n1").Zone(0, 4, 16000).NIC(string(nic), 0, "A").Units(string(nic), 2).Obj()
	free := func() int64 {
		n := topology.BuildNode(topology.Config{}.WithDefaults(), nil, cnr)
		return n.Zones[0].NICs[0].FreeUnits
	}
	for i, c := range []string{"ns/a/u-a", "ns/b/u-b"} {
		if !Record(cnr, topology.Config{}, c, ledger.Reservation{Zones: []ledger.ZoneUse{{NUMA: 0, NICs: []topology.NICID{nic}}}}) {
			t.Fatalf("Record %s wrote nothing", c)
		}
		if got, want := free(), int64(1-i); got != want {
			t.Errorf("after recording %s: %d free units, want %d", c, got, want)
		}
	}
	if got := ListedNICs(cnr); len(got["ns/a/u-a"]) != 1 || len(got["ns/b/u-b"]) != 1 {
		t.Errorf("ListedNICs = %v, want each pod on %s", got, nic)
	}
}
