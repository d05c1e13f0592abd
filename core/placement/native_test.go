package placement

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// nt builds a NetworkTopology; tier < 0 leaves highestTierAllowed unset.
func nt(mode string, tier int, name string) *NetworkTopology {
	n := &NetworkTopology{Mode: mode, HighestTierName: name}
	if tier >= 0 {
		n.HighestTierAllowed = &tier
	}
	return n
}

func i32(v int32) *int32 { return &v }

// partitioned builds n pods labelled as Volcano's job controller labels
// the pods of task "worker" with partitions of size.
func partitioned(n, size int) []MemberAnnotations {
	out := make([]MemberAnnotations, n)
	for i := range out {
		out[i] = MemberAnnotations{Name: "w-" + string(rune('a'+i)), Labels: map[string]string{
			"volcano.sh/task-spec": "worker", PartitionIDLabel: string(rune('0' + i/size))}}
	}
	return out
}

func TestReadGangContractNative(t *testing.T) {
	named := VolcanoTiers{Names: map[string]int{"leaf": 1, "spine": 2}}
	workers := &metav1.LabelSelector{MatchLabels: map[string]string{"volcano.sh/task-spec": "worker"}}
	cases := map[string]struct {
		in       ContractInput
		want     Contract
		wantErrs []string
	}{
		"spec hard at tier 1 is s0": {
			in:   ContractInput{Native: &NativeTopology{NetworkTopology: nt("hard", 1, "")}},
			want: Contract{Mode: ModeHard, HighestTier: TierS0},
		},
		"mode defaults to hard (the CRD default)": {
			in:   ContractInput{Native: &NativeTopology{NetworkTopology: nt("", 2, "")}},
			want: Contract{Mode: ModeHard, HighestTier: TierS1},
		},
		"hard without a tier limits nothing, as in Volcano": {
			in:   ContractInput{Native: &NativeTopology{NetworkTopology: nt("hard", -1, "")}},
			want: Contract{Mode: ModeHard, HighestTier: TierCluster},
		},
		"soft keeps the default tier": {
			in:   ContractInput{Native: &NativeTopology{NetworkTopology: nt("soft", -1, "")}},
			want: Contract{Mode: ModeSoft, HighestTier: TierS1},
		},
		"tier 0 is one node": {
			in:   ContractInput{Native: &NativeTopology{NetworkTopology: nt("hard", 0, "")}},
			want: Contract{Mode: ModeHard, HighestTier: TierNode},
		},
		"an S1 tier of 3 reads tier 2 as s0, never wider": {
			in:   ContractInput{Native: &NativeTopology{NetworkTopology: nt("hard", 2, "")}, Tiers: VolcanoTiers{S1Tier: 3}},
			want: Contract{Mode: ModeHard, HighestTier: TierS0},
		},
		"highestTierName resolved on the HyperNodes": {
			in:   ContractInput{Native: &NativeTopology{NetworkTopology: nt("hard", -1, "spine")}, Tiers: named},
			want: Contract{Mode: ModeHard, HighestTier: TierS1},
		},
		"unknown highestTierName": {
			in:       ContractInput{Native: &NativeTopology{NetworkTopology: nt("hard", -1, "rack")}, Tiers: named},
			want:     DefaultContract(),
			wantErrs: []string{`field spec.networkTopology.highestTierName: "rack" is the spec.tierName of no HyperNode (known: leaf=1, spine=2)`},
		},
		"both tier fields": {
			in:       ContractInput{Native: &NativeTopology{NetworkTopology: nt("hard", 1, "leaf")}, Tiers: named},
			want:     DefaultContract(),
			wantErrs: []string{"field spec.networkTopology.highestTierName: cannot be set together with highestTierAllowed"},
		},
		"mode in another case is refused in the spec (the CRD's enum)": {
			in:       ContractInput{Native: &NativeTopology{NetworkTopology: nt("Hard", 1, "")}},
			want:     DefaultContract(),
			wantErrs: []string{`field spec.networkTopology.mode: "Hard" is not a mode (want hard or soft)`},
		},
		"a lone Volcano tier annotation is hard": {
			in:   ContractInput{Group: map[string]string{AnnotationVolcanoHighestTier: "1"}},
			want: Contract{Mode: ModeHard, HighestTier: TierS0},
		},
		"a Volcano mode annotation is lower-cased": {
			in:   ContractInput{Group: map[string]string{AnnotationVolcanoMode: "Hard", AnnotationVolcanoHighestTier: "2"}},
			want: Contract{Mode: ModeHard, HighestTier: TierS1},
		},
		"the spec overrides Volcano's annotations, noted": {
			in: ContractInput{Group: map[string]string{AnnotationVolcanoMode: "soft", AnnotationVolcanoHighestTier: "2"},
				Native: &NativeTopology{NetworkTopology: nt("hard", 1, "")}},
			want: Contract{Mode: ModeHard, HighestTier: TierS0, Overridden: []string{
				`volcano.sh/network-topology-mode="soft" (spec.networkTopology.mode="hard" wins)`,
				`volcano.sh/network-topology-highest-tier="2" (spec.networkTopology.highestTierAllowed="1" wins)`}},
		},
		"rdmatopo.io overrides the spec, noted": {
			in: ContractInput{Group: map[string]string{"rdmatopo.io/highest-tier": "s1"},
				Native: &NativeTopology{NetworkTopology: nt("hard", 1, "")}},
			want: Contract{Mode: ModeHard, HighestTier: TierS1, Overridden: []string{
				`spec.networkTopology.highestTierAllowed="1" (rdmatopo.io/highest-tier="s1" wins)`}},
		},
		"a native spec is a contract: the pods are not read": {
			in: ContractInput{Native: &NativeTopology{NetworkTopology: nt("hard", 2, "")},
				Pods: members("p", 2, map[string]string{"rdmatopo.io/highest-tier": "s0"})},
			want: Contract{Mode: ModeHard, HighestTier: TierS1},
		},
		"unreadable field keeps its problem": {
			in:       ContractInput{Native: DecodeNativeTopology([]byte(`{"mode":"hard","highestTierAllowed":1,"maxHops":2}`), nil)},
			want:     DefaultContract(),
			wantErrs: []string{"field spec.networkTopology.maxHops: unknown field: rdmatopo cannot honour it"},
		},
		"a partition policy is a segment": {
			in: ContractInput{MinMember: 8, Pods: partitioned(8, 4), Native: &NativeTopology{SubGroupPolicy: []SubGroupPolicy{{
				Name: "worker", SubGroupSize: i32(4), MinSubGroups: i32(2), LabelSelector: workers,
				MatchLabelKeys: []string{PartitionIDLabel}, NetworkTopology: nt("hard", 1, "")}}}},
			want: Contract{Mode: DefaultMode, HighestTier: DefaultHighestTier, Segment: Segment{Size: 4, Tier: TierS0}},
		},
		"a soft sub-group adds no segment": {
			in: ContractInput{Pods: partitioned(4, 2), Native: &NativeTopology{SubGroupPolicy: []SubGroupPolicy{{
				SubGroupSize: i32(2), MatchLabelKeys: []string{PartitionIDLabel}, NetworkTopology: nt("soft", 1, "")}}}},
			want: DefaultContract(),
		},
		"our segment annotations win, noted": {
			in: ContractInput{Group: map[string]string{AnnotationSegmentSize: "2", AnnotationSegmentTier: "node"}, Pods: partitioned(4, 4),
				Native: &NativeTopology{SubGroupPolicy: []SubGroupPolicy{{SubGroupSize: i32(4), NetworkTopology: nt("hard", 2, "")}}}},
			want: Contract{Mode: DefaultMode, HighestTier: DefaultHighestTier, Segment: Segment{Size: 2, Tier: TierNode},
				Overridden: []string{"spec.subGroupPolicy=4 at s1 (rdmatopo.io/segment-size=2 at node wins)"}},
		},
		"a selector over part of the gang cannot be mapped": {
			in: ContractInput{Pods: append(partitioned(4, 2), MemberAnnotations{Name: "master", Labels: map[string]string{"volcano.sh/task-spec": "master"}}),
				Native: &NativeTopology{SubGroupPolicy: []SubGroupPolicy{{SubGroupSize: i32(2), LabelSelector: workers, NetworkTopology: nt("hard", 1, "")}}}},
			want:     DefaultContract(),
			wantErrs: []string{"field spec.subGroupPolicy[0].labelSelector: selects 4 of the gang's 5 pods: rdmatopo maps a sub-group policy over the whole gang only"},
		},
		"a grouping label we cannot map": {
			in: ContractInput{Pods: partitioned(4, 2), Native: &NativeTopology{SubGroupPolicy: []SubGroupPolicy{{
				SubGroupSize: i32(2), MatchLabelKeys: []string{"rack"}, NetworkTopology: nt("hard", 1, "")}}}},
			want:     DefaultContract(),
			wantErrs: []string{`field spec.subGroupPolicy[0].matchLabelKeys[0]: "rack": rdmatopo maps sub-groups of consecutive ranks only (grouped by volcano.sh/partition-id, or not grouped)`},
		},
		"two policies": {
			in:       ContractInput{Native: &NativeTopology{SubGroupPolicy: []SubGroupPolicy{{Name: "a"}, {Name: "b"}}}},
			want:     DefaultContract(),
			wantErrs: []string{"field spec.subGroupPolicy: 2 policies: rdmatopo maps one sub-group policy over the whole gang onto its segments, not several"},
		},
		"minSubGroups above minMember": {
			in: ContractInput{MinMember: 4, Pods: partitioned(8, 4), Native: &NativeTopology{SubGroupPolicy: []SubGroupPolicy{{
				SubGroupSize: i32(4), MinSubGroups: i32(2), NetworkTopology: nt("hard", 1, "")}}}},
			want:     DefaultContract(),
			wantErrs: []string{"field spec.subGroupPolicy[0].minSubGroups: 2 sub-groups of 4 pods exceed the PodGroup's minMember 4, which is the minimum rdmatopo places"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, problems := ReadGangContract(tc.in)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("contract (-want,+got):\n%s", diff)
			}
			var errs []string
			for _, p := range problems {
				errs = append(errs, p.String())
			}
			if diff := cmp.Diff(tc.wantErrs, errs); diff != "" {
				t.Errorf("problems (-want,+got):\n%s", diff)
			}
		})
	}
}

func TestDecodeNativeTopology(t *testing.T) {
	cases := map[string]struct {
		nt, sgp  string
		wantSet  bool
		wantKeys []string
	}{
		"absent":                 {},
		"null":                   {nt: "null", sgp: "null"},
		"full":                   {nt: `{"mode":"soft","highestTierName":"leaf"}`, sgp: `[{"name":"w","subGroupSize":2,"minSubGroups":1,"labelSelector":{"matchLabels":{"a":"b"}},"matchLabelKeys":["volcano.sh/partition-id"],"networkTopology":{"mode":"hard","highestTierAllowed":1}}]`, wantSet: true},
		"typo in a sub-group":    {sgp: `[{"subGroupSise":2}]`, wantSet: true, wantKeys: []string{"spec.subGroupPolicy.subGroupSise"}},
		"wrong type of the tier": {nt: `{"highestTierAllowed":"1"}`, wantSet: true, wantKeys: []string{"spec.networkTopology.highestTierAllowed"}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var a, b []byte
			if tc.nt != "" {
				a = []byte(tc.nt)
			}
			if tc.sgp != "" {
				b = []byte(tc.sgp)
			}
			n := DecodeNativeTopology(a, b)
			if n.Set() != tc.wantSet {
				t.Errorf("Set() = %v, want %v", n.Set(), tc.wantSet)
			}
			var keys []string
			for _, p := range n.Problems {
				keys = append(keys, p.Key)
				if !strings.HasPrefix(p.String(), "field ") {
					t.Errorf("problem %q does not name a field", p.String())
				}
			}
			if diff := cmp.Diff(tc.wantKeys, keys); diff != "" {
				t.Errorf("problem keys (-want,+got):\n%s", diff)
			}
		})
	}
}
