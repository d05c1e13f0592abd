package rdmatopology

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/rdmatopo/rdmatopo/core/topology"
)

func TestMeasureFabric(t *testing.T) {
	cases := map[string]struct {
		reserve []string // "node/numa" zones reserved
		want    fabricUse
		wantFr  float64
	}{
		"empty fabric: every NIC free, no leaf partly used": {
			want: fabricUse{free: map[topology.S1ID]int{"": 8}, leaves: 2},
		},
		"one zone reserved: its leaf partly used": {
			reserve: []string{"n1/0"},
			want:    fabricUse{free: map[topology.S1ID]int{"": 6}, leaves: 2, partly: 1},
			wantFr:  0.5,
		},
		"leaf A full: not partly used": {
			reserve: []string{"n1/0", "n2/0"},
			want:    fabricUse{free: map[topology.S1ID]int{"": 4}, leaves: 2},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			s := reservationSession(t)
			for i, z := range tc.reserve {
				node, numa := z[:2], int(z[3]-'0')
				if err := s.reserve(zoneRes(string(rune('a'+i)), "ns/g", node, numa)); err != nil {
					t.Fatal(err)
				}
			}
			got := measureFabric(s.fabric, s.rt.Ledger)
			if diff := cmp.Diff(tc.want, got, cmp.AllowUnexported(fabricUse{})); diff != "" {
				t.Errorf("measureFabric (-want,+got):\n%s", diff)
			}
			observeFabric(s.fabric, s.rt.Ledger)
			if fr := testutil.ToFloat64(leafFragmentation); fr != tc.wantFr {
				t.Errorf("rdmatopo_leaf_fragmentation = %v, want %v", fr, tc.wantFr)
			}
			if n := testutil.ToFloat64(freeNICs.WithLabelValues("")); n != float64(tc.want.free[""]) {
				t.Errorf("rdmatopo_free_nics = %v, want %d", n, tc.want.free[""])
			}
		})
	}
}
