package topology

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// hyperNode builds a HyperNode of a tier with members.
func hyperNode(name string, tier int, members ...HyperNodeMember) *HyperNode {
	return &HyperNode{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: HyperNodeSpec{Tier: tier, Members: members}}
}

// byLabel selects nodes whose label key has value v.
func byLabel(key, v string) HyperNodeMember {
	return HyperNodeMember{Type: MemberNode, Selector: HyperNodeMemberSelector{LabelMatch: &metav1.LabelSelector{MatchLabels: map[string]string{key: v}}}}
}

// byName selects members of type typ by exact name.
func byName(typ, name string) HyperNodeMember {
	return HyperNodeMember{Type: typ, Selector: HyperNodeMemberSelector{ExactMatch: &HyperNodeExactMatch{Name: name}}}
}

// byRegex selects members of type typ whose names match pattern.
func byRegex(typ, pattern string) HyperNodeMember {
	return HyperNodeMember{Type: typ, Selector: HyperNodeMemberSelector{RegexMatch: &HyperNodeRegexMatch{Pattern: pattern}}}
}

func labelledNode(name string, lbls map[string]string) *corev1.Node {
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: lbls}}
}

func TestHyperNodeS1(t *testing.T) {
	// Two racks (tier 1, by label) under spine-a, a third rack under
	// spine-b by name, and spine-c claiming rack-1 as well.
	racks := []*HyperNode{
		hyperNode("rack-1", 1, byLabel("rack", "1")),
		hyperNode("rack-2", 1, byLabel("rack", "2")),
		hyperNode("rack-3", 1, byRegex(MemberNode, "^n3-")),
		hyperNode("spine-a", 2, byName(MemberHyperNode, "rack-1"), byName(MemberHyperNode, "rack-2")),
		hyperNode("spine-b", 2, byRegex(MemberHyperNode, "^rack-3$")),
	}
	type result struct {
		S1   S1ID
		Code ReasonCode
	}
	cases := map[string]struct {
		hns  []*HyperNode
		tier int
		node *corev1.Node
		want result
	}{
		"through a tier-1 HyperNode by label":    {hns: racks, node: labelledNode("n1", map[string]string{"rack": "1"}), want: result{S1: "spine-a"}},
		"through another rack of the same spine": {hns: racks, node: labelledNode("n2", map[string]string{"rack": "2"}), want: result{S1: "spine-a"}},
		"through a rack by regex":                {hns: racks, node: labelledNode("n3-0", nil), want: result{S1: "spine-b"}},
		"in no rack":                             {hns: racks, node: labelledNode("n9", nil), want: result{Code: ReasonNoS1HyperNode}},
		"in two spines": {
			hns:  append(append([]*HyperNode(nil), racks...), hyperNode("spine-c", 2, byName(MemberHyperNode, "rack-1"))),
			node: labelledNode("n1", map[string]string{"rack": "1"}), want: result{Code: ReasonTwoS1HyperNodes},
		},
		"tier 1 as S1": {hns: racks, tier: 1, node: labelledNode("n1", map[string]string{"rack": "1"}), want: result{S1: "rack-1"}},
		"a node member directly in the S1 tier": {
			hns: []*HyperNode{hyperNode("spine-x", 2, byName(MemberNode, "n1"))}, node: labelledNode("n1", nil), want: result{S1: "spine-x"},
		},
		"a HyperNode member of the same tier does not count": {
			hns:  []*HyperNode{hyperNode("a", 2, byName(MemberNode, "n1")), hyperNode("b", 2, byName(MemberHyperNode, "a"))},
			node: labelledNode("n1", nil), want: result{S1: "a"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			idx, problems := NewHyperNodeIndex(tc.tier, tc.hns)
			if len(problems) > 0 {
				t.Fatalf("problems: %+v", problems)
			}
			s1, r := idx.S1Of(tc.node)
			got := result{S1: s1}
			if r != nil {
				got.Code = r.Code
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("S1 (-want,+got):\n%s", diff)
			}
		})
	}
}

func TestHyperNodeProblems(t *testing.T) {
	hns := []*HyperNode{
		hyperNode("r", 1,
			byRegex(MemberNode, "("),
			HyperNodeMember{Type: "Rack", Selector: HyperNodeMemberSelector{ExactMatch: &HyperNodeExactMatch{Name: "x"}}},
			HyperNodeMember{Type: MemberNode},
			byName(MemberNode, "n1")),
	}
	idx, problems := NewHyperNodeIndex(1, hns)
	var fields []string
	for _, p := range problems {
		fields = append(fields, p.HyperNode+" "+p.Field)
	}
	if diff := cmp.Diff([]string{"r spec.members[0]", "r spec.members[1]", "r spec.members[2]"}, fields); diff != "" {
		t.Errorf("problems (-want,+got):\n%s", diff)
	}
	if s1, _ := idx.S1Of(labelledNode("n1", nil)); s1 != "r" {
		t.Errorf("the readable member still counts: S1 %q, want r", s1)
	}
}

// TestBuildWithHyperNodesMatchesLabel: S1s from HyperNodes give the fabric
// the equivalent node label gives.
func TestBuildWithHyperNodesMatchesLabel(t *testing.T) {
	var nodes []*corev1.Node
	for i, s1 := range []string{"a", "a", "b", "b"} {
		nodes = append(nodes, labelledNode(string(rune('0'+i)), map[string]string{"minipod": s1, "rack": string(rune('0' + i/2))}))
	}
	idx, _ := NewHyperNodeIndex(2, []*HyperNode{
		hyperNode("r0", 1, byLabel("rack", "0")),
		hyperNode("r1", 1, byLabel("rack", "1")),
		hyperNode("a", 2, byName(MemberHyperNode, "r0")),
		hyperNode("b", 2, byName(MemberHyperNode, "r1")),
	})
	byLabelFabric := Build(Config{S1NodeLabel: "minipod"}, nodes, nil)
	byHyper := BuildWithHyperNodes(Config{S1Source: S1FromHyperNode}, idx, nodes, nil)
	for _, n := range nodes {
		a, _ := byLabelFabric.Node(n.Name)
		b, _ := byHyper.Node(n.Name)
		if a.S1 != b.S1 || a.S1 == "" {
			t.Errorf("node %s: S1 %q from the label, %q from HyperNodes", n.Name, a.S1, b.S1)
		}
	}
	cache := NewCache(Config{S1Source: S1FromHyperNode})
	for _, n := range nodes {
		cache.UpsertNode(n)
	}
	if n, _ := cache.Snapshot().Node("0"); n.S1 != "" {
		t.Errorf("before HyperNodes: S1 %q, want the default", n.S1)
	}
	cache.SetHyperNodes(idx)
	if n, _ := cache.Snapshot().Node("0"); n.S1 != "a" {
		t.Errorf("after SetHyperNodes: S1 %q, want a", n.S1)
	}
}

// TestHyperNodeTierNames: spec.tierName maps to its tier; a name two tiers
// give maps to the lower one; no names, or no index, map nothing.
func TestHyperNodeTierNames(t *testing.T) {
	hn := func(name string, tier int, tierName string) *HyperNode {
		h := &HyperNode{Spec: HyperNodeSpec{Tier: tier, TierName: tierName}}
		h.Name = name
		return h
	}
	idx, _ := NewHyperNodeIndex(0, []*HyperNode{hn("a", 1, "leaf"), hn("b", 1, "leaf"), hn("c", 2, "spine"), hn("d", 3, "leaf"), hn("e", 3, "")})
	want := map[string]int{"leaf": 1, "spine": 2}
	if got := idx.TierNames(); len(got) != len(want) || got["leaf"] != 1 || got["spine"] != 2 {
		t.Errorf("TierNames() = %v, want %v", got, want)
	}
	var none *HyperNodeIndex
	if none.TierNames() != nil {
		t.Errorf("a nil index names tiers")
	}
}
