package preemption

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rdmatopo/rdmatopo/core/topology"
)

// TestClaimsRoundTrip: what EncodeClaims writes, DecodeClaims reads back
// unchanged, and the same claims always give the same bytes.
func TestClaimsRoundTrip(t *testing.T) {
	created := metav1.NewTime(time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC))
	claims := []*Claim{
		{Job: "uid-a", Name: "ns/a", Priority: 100, Created: created, Room: "s0 leaf-1",
			S0s: map[topology.S0ID]bool{"leaf-1": true}, Nodes: map[string]bool{"n2": true, "n1": true}},
		{Job: "uid-b", Name: "ns/b", Priority: -5, Created: created, Room: "node n9", Nodes: map[string]bool{"n9": true}},
	}
	data, err := EncodeClaims(claims)
	if err != nil {
		t.Fatal(err)
	}
	again, _ := EncodeClaims(claims)
	if string(again) != string(data) {
		t.Errorf("two encodings differ:\n%s\n%s", data, again)
	}
	got, err := DecodeClaims(data)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(claims, got); diff != "" {
		t.Errorf("round trip (-want,+got):\n%s", diff)
	}
	empty, _ := EncodeClaims(nil)
	if got, err := DecodeClaims(empty); err != nil || len(got) != 0 {
		t.Errorf("DecodeClaims(%s) = %v, %v; want no claim", empty, got, err)
	}
}

// TestDecodeClaimsRefuses: a record DecodeClaims cannot trust is an error
// naming what is wrong, and gives no claim.
func TestDecodeClaimsRefuses(t *testing.T) {
	room := `"room":"s0 A","s0s":{"A":true},"nodes":{"n1":true}`
	for _, tc := range []struct {
		name, data, want string
	}{
		{"not json", `{`, "unexpected EOF"},
		{"other version", `{"version":2,"claims":[]}`, "version 2"},
		{"unknown field", `{"version":1,"claims":[],"extra":1}`, `unknown field "extra"`},
		{"trailing data", `{"version":1,"claims":[]} {}`, "data after the record"},
		{"null claim", `{"version":1,"claims":[null]}`, "claims[0]: null"},
		{"no job", `{"version":1,"claims":[{"name":"ns/a",` + room + `}]}`, "claims[0].job: empty"},
		{"no name", `{"version":1,"claims":[{"job":"u",` + room + `}]}`, "claims[0].name: empty"},
		{"no room", `{"version":1,"claims":[{"job":"u","name":"ns/a"}]}`, "claims[0].room: empty"},
		{"room without nodes", `{"version":1,"claims":[{"job":"u","name":"ns/a","room":"s0 A"}]}`, "neither nodes nor s0s"},
		{"claims twice", `{"version":1,"claims":[{"job":"u","name":"ns/a",` + room + `},{"job":"u","name":"ns/a",` + room + `}]}`, "claims[1].job: u claims twice"},
		{"bad time", `{"version":1,"claims":[{"job":"u","name":"ns/a","created":"yesterday",` + room + `}]}`, "parsing time"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := DecodeClaims([]byte(tc.data))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("DecodeClaims(%s) error = %v, want one containing %q", tc.data, err, tc.want)
			}
			if got != nil {
				t.Errorf("DecodeClaims(%s) gave claims %v with its error", tc.data, got)
			}
		})
	}
}
