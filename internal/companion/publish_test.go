package companion

import (
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/kubewharf/katalyst-api/pkg/apis/node/v1alpha1"
	corev1 "k8s.io/api/core/v1"

	"github.com/rdmatopo/rdmatopo/core/topology"
	b "github.com/rdmatopo/rdmatopo/internal/testing/builders"
)

// testConfig reads S1s from the builders' label.
var testConfig = topology.Config{S1NodeLabel: b.S1Label}

// providerNode is a node whose NUMA-0 NICs go to leaf0 and NUMA-1 NICs to leaf1.
func providerNode(name, s1, leaf0, leaf1 string) (*corev1.Node, *v1alpha1.CustomNodeResource) {
	return b.ProviderNode(name).S1(s1).Obj(),
		b.ProviderCNR(name, leaf0, leaf1).Obj()
}

type hnSummary struct {
	Name    string
	Tier    int
	Members []string
}

func summarize(pub *Publication) []hnSummary {
	var out []hnSummary
	for _, hn := range pub.HyperNodes {
		s := hnSummary{Name: hn.Name, Tier: hn.Spec.Tier}
		for _, m := range hn.Spec.Members {
			s.Members = append(s.Members, m.Type+":"+m.Selector.ExactMatch.Name)
		}
		slices.Sort(s.Members)
		out = append(out, s)
		if hn.Labels[SourceLabel] != SourceValue {
			panic("HyperNode without the source label")
		}
	}
	return out
}

// TestPublish: nodes whose NICs use the same leaves (within one S1) form one
// tier-1 HyperNode, each S1 a tier-2 one over them; rail cabling, unknown
// NICs and nodes without RDMA are grouped as their leaves say.
func TestPublish(t *testing.T) {
	lg := func(s1 string, leaves ...string) string {
		ids := make([]topology.S0ID, len(leaves))
		for i, l := range leaves {
			ids[i] = topology.S0ID(l)
		}
		return LeafGroupName(topology.S1ID(s1), ids)
	}
	type nodeSpec struct{ name, s1, leaf0, leaf1 string }
	tests := map[string]struct {
		nodes     []nodeSpec
		extra     func() ([]*corev1.Node, []*v1alpha1.CustomNodeResource)
		want      []hnSummary
		wantLabel map[string]map[string]string
	}{
		"provider cabling, two groups in one S1": {
			nodes: []nodeSpec{{"n1", "p", "a", "b"}, {"n2", "p", "a", "b"}, {"n3", "p", "c", "d"}},
			want: []hnSummary{
				{Name: lg("p", "a", "b"), Tier: 1, Members: []string{"Node:n1", "Node:n2"}},
				{Name: lg("p", "c", "d"), Tier: 1, Members: []string{"Node:n3"}},
				{Name: "rdmatopo-s1-p", Tier: 2, Members: []string{"HyperNode:" + lg("p", "a", "b"), "HyperNode:" + lg("p", "c", "d")}},
			},
			wantLabel: map[string]map[string]string{
				"n1": {LeafGroupLabel: lg("p", "a", "b"), S1GroupLabel: "rdmatopo-s1-p"},
				"n2": {LeafGroupLabel: lg("p", "a", "b"), S1GroupLabel: "rdmatopo-s1-p"},
				"n3": {LeafGroupLabel: lg("p", "c", "d"), S1GroupLabel: "rdmatopo-s1-p"},
			},
		},
		"same leaves in two S1s stay two groups (strict tree)": {
			nodes: []nodeSpec{{"n1", "p", "a", "b"}, {"n2", "Q_big", "a", "b"}},
			want: []hnSummary{
				{Name: lg("Q_big", "a", "b"), Tier: 1, Members: []string{"Node:n2"}},
				{Name: lg("p", "a", "b"), Tier: 1, Members: []string{"Node:n1"}},
				{Name: S1GroupName("Q_big"), Tier: 2, Members: []string{"HyperNode:" + lg("Q_big", "a", "b")}},
				{Name: "rdmatopo-s1-p", Tier: 2, Members: []string{"HyperNode:" + lg("p", "a", "b")}},
			},
		},
		"a node without RDMA topology and one without NICs": {
			nodes: []nodeSpec{{"n1", "", "a", "a"}},
			extra: func() ([]*corev1.Node, []*v1alpha1.CustomNodeResource) {
				return []*corev1.Node{
					b.MakeNode("cpu").CPU("64").Obj(),
					b.MakeNode("nokcnr").Shared().RDMA(1).Obj(),
				}, nil
			},
			want: []hnSummary{
				{Name: lg("", "a"), Tier: 1, Members: []string{"Node:n1"}},
				{Name: lg("", string(topology.UnknownS0("nokcnr", "rdma-0"))), Tier: 1, Members: []string{"Node:nokcnr"}},
				{Name: "rdmatopo-s1-default", Tier: 2, Members: []string{"HyperNode:" + lg("", "a"), "HyperNode:" + lg("", string(topology.UnknownS0("nokcnr", "rdma-0")))}},
			},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			var nodes []*corev1.Node
			var cnrs []*v1alpha1.CustomNodeResource
			for _, s := range tc.nodes {
				n, c := providerNode(s.name, s.s1, s.leaf0, s.leaf1)
				if s.s1 == "" {
					delete(n.Labels, b.S1Label)
				}
				nodes, cnrs = append(nodes, n), append(cnrs, c)
			}
			if tc.extra != nil {
				n, c := tc.extra()
				nodes, cnrs = append(nodes, n...), append(cnrs, c...)
			}
			pub := Publish(topology.Build(testConfig, nodes, cnrs))
			got := summarize(pub)
			// Sorted by tier then name for the comparison.
			want := tc.want
			for _, w := range want {
				slices.Sort(w.Members)
			}
			sortSummaries(want)
			if d := cmp.Diff(want, got); d != "" {
				t.Errorf("HyperNodes (-want +got):\n%s", d)
			}
			if tc.wantLabel != nil {
				if d := cmp.Diff(tc.wantLabel, pub.Labels); d != "" {
					t.Errorf("labels (-want +got):\n%s", d)
				}
			}
			if _, ok := pub.Labels["cpu"]; ok {
				t.Errorf("a node without RDMA got labels")
			}
		})
	}
}

func sortSummaries(s []hnSummary) {
	for i := 1; i < len(s); i++ {
		for j := i; j > 0 && (s[j].Tier < s[j-1].Tier || s[j].Tier == s[j-1].Tier && s[j].Name < s[j-1].Name); j-- {
			s[j], s[j-1] = s[j-1], s[j]
		}
	}
}

// TestS1GroupName: names are valid and distinct for ids that are not.
func TestS1GroupName(t *testing.T) {
	tests := map[topology.S1ID]string{
		"":          "rdmatopo-s1-default",
		"minipod-a": "rdmatopo-s1-minipod-a",
	}
	for id, want := range tests {
		if got := S1GroupName(id); got != want {
			t.Errorf("S1GroupName(%q) = %q, want %q", id, got, want)
		}
	}
	if S1GroupName("default") == S1GroupName("") {
		t.Errorf("S1 %q and the unknown S1 share a name", "default")
	}
	if a, b := S1GroupName("Pod/A"), S1GroupName("pod/a"); a == b || len(a) > 63 {
		t.Errorf("hashed names %q, %q", a, b)
	}
}
