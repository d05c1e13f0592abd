package placement

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// members builds a gang's pods named name-0, name-1, ... each with ann.
func members(name string, n int, ann map[string]string) []MemberAnnotations {
	out := make([]MemberAnnotations, n)
	for i := range out {
		out[i] = MemberAnnotations{Name: name + "-" + string(rune('0'+i)), Annotations: ann}
	}
	return out
}

func TestParseGangContract(t *testing.T) {
	hardS0 := map[string]string{"rdmatopo.io/mode": "hard", "rdmatopo.io/highest-tier": "s0"}
	cases := map[string]struct {
		group   map[string]string
		pods    []MemberAnnotations
		want    Contract
		wantErr string
	}{
		"nothing anywhere: defaults": {
			pods: members("p", 2, nil),
			want: DefaultContract(),
		},
		"from the pods when the PodGroup has none": {
			group: map[string]string{"rdmatopo.io/placement": "{}", "other.io/x": "y"},
			pods:  members("p", 3, hardS0),
			want:  Contract{Mode: ModeHard, HighestTier: TierS0},
		},
		"the PodGroup wins": {
			group: map[string]string{"rdmatopo.io/mode": "soft"},
			pods:  members("p", 2, hardS0),
			want:  DefaultContract(),
		},
		"a Volcano key on the PodGroup wins too": {
			group: map[string]string{"volcano.sh/network-topology-mode": "soft"},
			pods:  members("p", 2, hardS0),
			want:  DefaultContract(),
		},
		"pods' own annotations are no contract": {
			pods: members("p", 2, map[string]string{"rdmatopo.io/nics": "0000:1a:00.0", "rdmatopo.io/s0": "a"}),
			want: DefaultContract(),
		},
		"a bad value on the pods": {
			pods:    members("p", 2, map[string]string{"rdmatopo.io/highest-tier": "rack"}),
			want:    DefaultContract(),
			wantErr: `annotation rdmatopo.io/highest-tier: "rack" is not a tier (want node, s0, s1 or cluster)`,
		},
		"pods disagree on a value": {
			pods: append(members("a", 2, hardS0),
				MemberAnnotations{Name: "b-0", Annotations: map[string]string{"rdmatopo.io/mode": "hard", "rdmatopo.io/highest-tier": "s1"}}),
			want:    Contract{Mode: ModeHard, HighestTier: TierS1},
			wantErr: `annotation rdmatopo.io/highest-tier: the gang's pods disagree: "s0" on a-0, a-1; "s1" on b-0`,
		},
		"a key set on some pods only": {
			pods: append(members("a", 5, hardS0),
				MemberAnnotations{Name: "b-0", Annotations: map[string]string{"rdmatopo.io/highest-tier": "s0"}}),
			want:    Contract{Mode: ModeSoft, HighestTier: TierS0},
			wantErr: `annotation rdmatopo.io/mode: the gang's pods disagree: "hard" on a-0, a-1, a-2 and 2 more; unset on b-0`,
		},
		"empty is not unset": {
			pods: []MemberAnnotations{
				{Name: "p-0", Annotations: map[string]string{"volcano.sh/network-topology-mode": ""}},
				{Name: "p-1"},
			},
			want:    DefaultContract(),
			wantErr: `annotation volcano.sh/network-topology-mode: the gang's pods disagree: "" on p-0; unset on p-1`,
		},
		"pods in any order: named sorted": {
			pods: []MemberAnnotations{
				{Name: "p-1", Annotations: map[string]string{"rdmatopo.io/mode": "soft"}},
				{Name: "p-0", Annotations: map[string]string{"rdmatopo.io/mode": "hard"}},
			},
			want:    DefaultContract(),
			wantErr: `annotation rdmatopo.io/mode: the gang's pods disagree: "hard" on p-0; "soft" on p-1`,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := ParseGangContract(tc.group, tc.pods)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("contract (-want,+got):\n%s", diff)
			}
			checkContractError(t, err, tc.wantErr)
			if n := len(GangContractProblems(tc.group, tc.pods)); (n > 0) != (tc.wantErr != "") {
				t.Errorf("GangContractProblems: %d problems, want error %q", n, tc.wantErr)
			}
		})
	}
}
