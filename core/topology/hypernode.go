package topology

import (
	"fmt"
	"regexp"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// S1Source says where a node's S1 comes from.
type S1Source string

const (
	// S1FromLabel reads the S1 from the node label Config.S1NodeLabel.
	S1FromLabel S1Source = "label"
	// S1FromHyperNode reads it from Volcano HyperNodes: the HyperNode of
	// tier Config.S1HyperNodeTier whose members hold the node.
	S1FromHyperNode S1Source = "hypernode"
)

// DefaultS1HyperNodeTier is the HyperNode tier read as S1 unless configured:
// tier 1 HyperNodes are the leaves' switches, tier 2 the spine above them.
const DefaultS1HyperNodeTier = 2

// Reasons of the S1 read from HyperNodes (on the node, like KCNR problems).
const (
	// ReasonNoS1HyperNode: no HyperNode of the S1 tier holds the node; it
	// shares the default S1 ("").
	ReasonNoS1HyperNode ReasonCode = "NoS1HyperNode"
	// ReasonTwoS1HyperNodes: two or more HyperNodes of the S1 tier hold
	// the node; it shares the default S1 rather than pick one.
	ReasonTwoS1HyperNodes ReasonCode = "TwoS1HyperNodes"
)

// HyperNode is a Volcano topology.volcano.sh/v1alpha1 HyperNode (Volcano ≥
// 1.12), the fields that decide membership. It is a local type: the
// volcano.sh/apis module that defines it (v1.13) cannot be built beside the
// Volcano v1.10 scheduler.
type HyperNode struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              HyperNodeSpec `json:"spec"`
	// Status is written by Volcano's controllers; not read.
	Status map[string]any `json:"status,omitempty"`
}

// HyperNodeSpec is a HyperNode's tier, the tier's name (Volcano ≥ 1.14;
// what a job's highestTierName names) and members.
type HyperNodeSpec struct {
	Tier     int               `json:"tier,omitempty"`
	TierName string            `json:"tierName,omitempty"`
	Members  []HyperNodeMember `json:"members,omitempty"`
}

// HyperNodeMember selects nodes (type Node) or HyperNodes of a lower tier
// (type HyperNode).
type HyperNodeMember struct {
	Type     string                  `json:"type,omitempty"`
	Selector HyperNodeMemberSelector `json:"selector,omitempty"`
}

// HyperNodeMemberSelector is one of an exact name, a regular expression on
// names, or a label selector.
type HyperNodeMemberSelector struct {
	ExactMatch *HyperNodeExactMatch  `json:"exactMatch,omitempty"`
	RegexMatch *HyperNodeRegexMatch  `json:"regexMatch,omitempty"`
	LabelMatch *metav1.LabelSelector `json:"labelMatch,omitempty"`
}

// HyperNodeExactMatch selects the member of that name.
type HyperNodeExactMatch struct {
	Name string `json:"name"`
}

// HyperNodeRegexMatch selects the members whose names match the pattern.
type HyperNodeRegexMatch struct {
	Pattern string `json:"pattern"`
}

// HyperNodeResource is Volcano's HyperNode resource, read with a dynamic
// client.
var HyperNodeResource = schema.GroupVersionResource{Group: "topology.volcano.sh", Version: "v1alpha1", Resource: "hypernodes"}

// HyperNodeFromUnstructured decodes a HyperNode as a dynamic client returns
// it.
func HyperNodeFromUnstructured(u *unstructured.Unstructured) (*HyperNode, error) {
	hn := &HyperNode{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, hn); err != nil {
		return nil, fmt.Errorf("HyperNode %s: %w", u.GetName(), err)
	}
	return hn, nil
}

// Member types of a HyperNode.
const (
	MemberNode      = "Node"
	MemberHyperNode = "HyperNode"
)

// HyperNodeIndex answers which HyperNode of the S1 tier holds a node. Built
// once per set of HyperNodes (NewHyperNodeIndex), immutable, shared.
type HyperNodeIndex struct {
	tier int
	// byTier lists the compiled HyperNodes per tier, sorted by name.
	byTier map[int][]compiledHyperNode
	tiers  []int // ascending
	// names maps each spec.tierName to its tier (the lowest, where
	// HyperNodes of two tiers give the same name).
	names map[string]int
}

// compiledHyperNode is a HyperNode with its selectors parsed.
type compiledHyperNode struct {
	name    string
	labels  labels.Set
	members []compiledMember
}

// compiledMember is one member selector, parsed.
type compiledMember struct {
	hyper bool
	exact string
	regex *regexp.Regexp
	sel   labels.Selector
}

// matches reports whether an object of that name and labels is selected.
func (m compiledMember) matches(name string, lbls labels.Set) bool {
	switch {
	case m.regex != nil:
		return m.regex.MatchString(name)
	case m.sel != nil:
		return m.sel.Matches(lbls)
	default:
		return m.exact == name
	}
}

// HyperNodeProblem is a HyperNode member that cannot be read; the member is
// ignored.
type HyperNodeProblem struct {
	HyperNode string
	// Field is the member's path (spec.members[2].selector.regexMatch).
	Field string
	Msg   string
}

// NewHyperNodeIndex reads the HyperNodes with tier as S1 (0: the default,
// DefaultS1HyperNodeTier). A member with no selector or two, an unknown
// type, an empty name, a bad pattern or label selector is a problem (sorted
// by HyperNode, field) and is ignored. A HyperNode member selects
// HyperNodes of lower tiers only, so membership never loops.
func NewHyperNodeIndex(tier int, hns []*HyperNode) (*HyperNodeIndex, []HyperNodeProblem) {
	if tier <= 0 {
		tier = DefaultS1HyperNodeTier
	}
	idx := &HyperNodeIndex{tier: tier, byTier: map[int][]compiledHyperNode{}}
	var problems []HyperNodeProblem
	for _, hn := range hns {
		if hn == nil {
			continue
		}
		c := compiledHyperNode{name: hn.Name, labels: labels.Set(hn.Labels)}
		for i, m := range hn.Spec.Members {
			field := fmt.Sprintf("spec.members[%d]", i)
			cm, msg := compileMember(m)
			if msg != "" {
				problems = append(problems, HyperNodeProblem{HyperNode: hn.Name, Field: field, Msg: msg})
				continue
			}
			c.members = append(c.members, cm)
		}
		idx.byTier[hn.Spec.Tier] = append(idx.byTier[hn.Spec.Tier], c)
		if n := hn.Spec.TierName; n != "" {
			if t, ok := idx.names[n]; !ok || hn.Spec.Tier < t {
				if idx.names == nil {
					idx.names = map[string]int{}
				}
				idx.names[n] = hn.Spec.Tier
			}
		}
	}
	for t, list := range idx.byTier {
		slices.SortFunc(list, func(a, b compiledHyperNode) int { return strings.Compare(a.name, b.name) })
		idx.tiers = append(idx.tiers, t)
	}
	slices.Sort(idx.tiers)
	slices.SortFunc(problems, func(a, b HyperNodeProblem) int {
		if c := strings.Compare(a.HyperNode, b.HyperNode); c != 0 {
			return c
		}
		return strings.Compare(a.Field, b.Field)
	})
	return idx, problems
}

// compileMember parses one member selector, or says why it cannot be read.
func compileMember(m HyperNodeMember) (compiledMember, string) {
	var cm compiledMember
	switch m.Type {
	case MemberNode:
	case MemberHyperNode:
		cm.hyper = true
	default:
		return cm, fmt.Sprintf("type %q is neither %s nor %s", m.Type, MemberNode, MemberHyperNode)
	}
	s := m.Selector
	n := 0
	if s.ExactMatch != nil {
		n++
		cm.exact = s.ExactMatch.Name
		if cm.exact == "" {
			return cm, "selector.exactMatch.name is empty"
		}
	}
	if s.RegexMatch != nil {
		n++
		re, err := regexp.Compile(s.RegexMatch.Pattern)
		if err != nil {
			return cm, fmt.Sprintf("selector.regexMatch.pattern %q: %v", s.RegexMatch.Pattern, err)
		}
		cm.regex = re
	}
	if s.LabelMatch != nil {
		n++
		sel, err := metav1.LabelSelectorAsSelector(s.LabelMatch)
		if err != nil {
			return cm, fmt.Sprintf("selector.labelMatch: %v", err)
		}
		cm.sel = sel
	}
	if n != 1 {
		return cm, fmt.Sprintf("selector must hold exactly one of exactMatch, regexMatch and labelMatch, got %d", n)
	}
	return cm, ""
}

// Tier is the HyperNode tier read as S1.
func (idx *HyperNodeIndex) Tier() int { return idx.tier }

// TierNames maps the HyperNodes' spec.tierName to their tier (a name two
// tiers give maps to the lower, so that a job naming it is never placed
// wider than either). Shared: do not modify. Nil on a nil index.
func (idx *HyperNodeIndex) TierNames() map[string]int {
	if idx == nil {
		return nil
	}
	return idx.names
}

// S1Of returns the S1 of a node: the HyperNode of the S1 tier that holds it,
// directly or through HyperNodes of lower tiers. A node held by none, or by
// two, gets the default S1 ("") and a Reason saying so.
func (idx *HyperNodeIndex) S1Of(node *corev1.Node) (S1ID, *Reason) {
	if idx == nil {
		idx = &HyperNodeIndex{tier: DefaultS1HyperNodeTier}
	}
	// held is every HyperNode that holds the node, found tier by tier
	// upwards (a HyperNode member selects HyperNodes of lower tiers only),
	// with its tier and labels.
	held := map[string]heldHyperNode{}
	var top []string
	for _, t := range idx.tiers {
		if t > idx.tier {
			break
		}
		for _, hn := range idx.byTier[t] {
			if holds(hn, t, node, held) {
				held[hn.name] = heldHyperNode{tier: t, labels: hn.labels}
				if t == idx.tier {
					top = append(top, hn.name)
				}
			}
		}
	}
	switch len(top) {
	case 1:
		return S1ID(top[0]), nil
	case 0:
		return "", &Reason{Node: node.Name, Code: ReasonNoS1HyperNode,
			Message: fmt.Sprintf("no HyperNode of tier %d holds the node; it shares the default S1", idx.tier)}
	default:
		return "", &Reason{Node: node.Name, Code: ReasonTwoS1HyperNodes,
			Message: fmt.Sprintf("HyperNodes %s of tier %d all hold the node; it shares the default S1", strings.Join(top, ", "), idx.tier)}
	}
}

// heldHyperNode is a HyperNode found to hold a node.
type heldHyperNode struct {
	tier   int
	labels labels.Set
}

// holds reports whether HyperNode hn of tier t holds the node: a Node member
// selects it, or a HyperNode member selects one of lower tier already found
// to hold it (few: a node sits in one HyperNode per tier, as a rule).
func holds(hn compiledHyperNode, t int, node *corev1.Node, held map[string]heldHyperNode) bool {
	for _, m := range hn.members {
		if !m.hyper {
			if m.matches(node.Name, labels.Set(node.Labels)) {
				return true
			}
			continue
		}
		for name, h := range held {
			if h.tier < t && m.matches(name, h.labels) {
				return true
			}
		}
	}
	return false
}
