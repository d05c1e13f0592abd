// Command hypernode-check reads multi-document YAML HyperNodes on stdin and
// decodes each, strictly (an unknown field is an error), as Volcano's own
// topology.volcano.sh/v1alpha1 HyperNode type of volcano.sh/apis v1.14.0.
// It then checks what Volcano's HyperNode tree requires: every member has
// exactly one selector, every Node and every lower-tier HyperNode named by
// an exact match sits in exactly one HyperNode of the tier above, and every
// HyperNode member names a HyperNode of a lower tier. It prints one line per
// tier ("tier 1: 4 HyperNodes, 16 members") and exits 1 on the first problem.
package main

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"sort"

	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
	topologyv1alpha1 "volcano.sh/apis/pkg/apis/topology/v1alpha1"
)

func main() {
	if err := run(os.Stdin, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "hypernode-check:", err)
		os.Exit(1)
	}
}

func run(in io.Reader, out io.Writer) error {
	r := utilyaml.NewYAMLReader(bufio.NewReader(in))
	var hns []*topologyv1alpha1.HyperNode
	for {
		doc, err := r.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			return err
		}
		if len(bytes.TrimSpace(doc)) == 0 {
			continue
		}
		hn := &topologyv1alpha1.HyperNode{}
		if err := yaml.UnmarshalStrict(doc, hn); err != nil {
			return fmt.Errorf("document %d: %w", len(hns)+1, err)
		}
		if hn.APIVersion != topologyv1alpha1.SchemeGroupVersion.String() || hn.Kind != "HyperNode" {
			return fmt.Errorf("document %d: %s %s is not a %s HyperNode", len(hns)+1, hn.APIVersion, hn.Kind, topologyv1alpha1.SchemeGroupVersion)
		}
		hns = append(hns, hn)
	}
	if len(hns) == 0 {
		return fmt.Errorf("no HyperNode on stdin")
	}
	tierOf := map[string]int{}
	for _, hn := range hns {
		if _, dup := tierOf[hn.Name]; dup {
			return fmt.Errorf("HyperNode %s twice", hn.Name)
		}
		tierOf[hn.Name] = hn.Spec.Tier
	}
	// parent maps a member (node or HyperNode) to the HyperNode holding it,
	// per tier of the holder.
	parent := map[string]string{}
	members := map[int]int{}
	count := map[int]int{}
	for _, hn := range hns {
		if hn.Spec.Tier < 1 {
			return fmt.Errorf("HyperNode %s: spec.tier %d < 1", hn.Name, hn.Spec.Tier)
		}
		if len(hn.Spec.Members) == 0 {
			return fmt.Errorf("HyperNode %s: no members", hn.Name)
		}
		count[hn.Spec.Tier]++
		for i, m := range hn.Spec.Members {
			s := m.Selector
			n := 0
			for _, set := range []bool{s.ExactMatch != nil, s.RegexMatch != nil, s.LabelMatch != nil} {
				if set {
					n++
				}
			}
			if n != 1 || s.ExactMatch == nil {
				return fmt.Errorf("HyperNode %s: spec.members[%d]: want exactly one exactMatch selector", hn.Name, i)
			}
			name := s.ExactMatch.Name
			switch m.Type {
			case topologyv1alpha1.MemberTypeNode:
			case topologyv1alpha1.MemberTypeHyperNode:
				t, ok := tierOf[name]
				if !ok || t >= hn.Spec.Tier {
					return fmt.Errorf("HyperNode %s: spec.members[%d]: %s is not a HyperNode of a lower tier", hn.Name, i, name)
				}
			default:
				return fmt.Errorf("HyperNode %s: spec.members[%d]: type %q", hn.Name, i, m.Type)
			}
			key := fmt.Sprintf("%s/%s@%d", m.Type, name, hn.Spec.Tier)
			if p, ok := parent[key]; ok {
				return fmt.Errorf("%s %s is in HyperNodes %s and %s of tier %d", m.Type, name, p, hn.Name, hn.Spec.Tier)
			}
			parent[key] = hn.Name
			members[hn.Spec.Tier]++
		}
	}
	// Every HyperNode below the top tier has a parent.
	top := 0
	for t := range count {
		top = max(top, t)
	}
	for _, hn := range hns {
		if hn.Spec.Tier == top {
			continue
		}
		found := false
		for t := hn.Spec.Tier + 1; t <= top && !found; t++ {
			_, found = parent[fmt.Sprintf("%s/%s@%d", topologyv1alpha1.MemberTypeHyperNode, hn.Name, t)]
		}
		if !found {
			return fmt.Errorf("HyperNode %s of tier %d has no parent", hn.Name, hn.Spec.Tier)
		}
	}
	tiers := make([]int, 0, len(count))
	for t := range count {
		tiers = append(tiers, t)
	}
	sort.Ints(tiers)
	for _, t := range tiers {
		fmt.Fprintf(out, "tier %d: %d HyperNodes, %d members\n", t, count[t], members[t])
	}
	return nil
}
