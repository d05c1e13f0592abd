package ledger

import (
	"strings"
	"testing"

	"github.com/rdmatopo/rdmatopo/core/topology"
)

// TestCheckInvariantsDetectsCorruption breaks each index in turn and expects
// CheckInvariants to name the problem.
func TestCheckInvariantsDetectsCorruption(t *testing.T) {
	cases := map[string]struct {
		corrupt func(l *Ledger)
		want    string
	}{
		"NIC index entry missing": {
			corrupt: func(l *Ledger) { delete(l.holder, nicKey{"n1", "0000:1a:00.0"}) },
			want:    "is indexed as held by",
		},
		"NIC index points at another pod": {
			corrupt: func(l *Ledger) { l.holder[nicKey{"n1", "0000:1a:00.0"}] = []string{"u-b"} },
			want:    "is indexed as held by [\"u-b\"]",
		},
		"stray NIC index entry": {
			corrupt: func(l *Ledger) { l.holder[nicKey{"n9", "0000:ff:00.0"}] = []string{"gone"} },
			want:    "indexed to pod UID \"gone\"",
		},
		"NIC holders not a sorted set": {
			corrupt: func(l *Ledger) {
				k := nicKey{"n1", "0000:1a:00.0"}
				l.holder[k] = append(l.holder[k], l.holder[k]...)
			},
			want: "not a sorted set of UIDs",
		},
		"node index missing": {
			corrupt: func(l *Ledger) { delete(l.byNode["n1"], "u-a") },
			want:    "missing from the index of node n1",
		},
		"stored under the wrong UID": {
			corrupt: func(l *Ledger) { l.byUID["u-b"].UID = "u-x" },
			want:    "stored under UID \"u-b\"",
		},
		"zones out of order": {
			corrupt: func(l *Ledger) {
				r := l.byUID["u-b"]
				r.Zones = append(r.Zones, ZoneUse{NUMA: 0})
			},
			want: "zones not strictly sorted",
		},
		"empty node entry": {
			corrupt: func(l *Ledger) { l.byNode["n7"] = map[string]struct{}{} },
			want:    "node n7 has an empty index entry",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			l := New()
			for _, r := range []Reservation{
				{UID: "u-a", Namespace: "ns", Name: "a", Node: "n1",
					Zones: []ZoneUse{{NUMA: 0, NICs: []topology.NICID{"0000:1a:00.0"}}}},
				{UID: "u-b", Namespace: "ns", Name: "b", Node: "n1",
					Zones: []ZoneUse{{NUMA: 1, NICs: []topology.NICID{"0000:d1:00.0"}}}},
			} {
				if err := l.Reserve(r); err != nil {
					t.Fatal(err)
				}
			}
			if err := l.CheckInvariants(); err != nil {
				t.Fatalf("healthy ledger: %v", err)
			}
			tc.corrupt(l)
			err := l.CheckInvariants()
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("CheckInvariants = %v, want an error containing %q", err, tc.want)
			}
		})
	}
}
