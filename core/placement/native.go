// Volcano ≥ 1.12's own topology fields, read as the job contract:
// PodGroup spec.networkTopology and spec.subGroupPolicy (which Volcano's
// job controller fills from a Job's spec.networkTopology and its tasks'
// partitionPolicy), with tiers counted on the HyperNode tree.

package placement

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// Field paths of the native fields, as problems name them.
const (
	FieldNetworkTopology = "spec.networkTopology"
	FieldSubGroupPolicy  = "spec.subGroupPolicy"
)

// Volcano's network-topology modes (spec.networkTopology.mode).
const (
	volcanoHard = "hard"
	volcanoSoft = "soft"
)

// PartitionIDLabel is the pod label Volcano's job controller (v1.14) sets
// on the pods of a task with a partitionPolicy: the pod's index in its task
// divided by the partition size. A sub-group policy grouping by it groups
// consecutive ranks.
const PartitionIDLabel = "volcano.sh/partition-id"

// NetworkTopology is Volcano's networkTopology of a PodGroup, a Job or a
// sub-group (volcano.sh/apis v1.14 NetworkTopologySpec).
type NetworkTopology struct {
	// Mode is hard or soft; empty reads as hard (the CRD's default).
	Mode string `json:"mode,omitempty"`
	// HighestTierAllowed is the widest HyperNode tier the pods may span.
	HighestTierAllowed *int `json:"highestTierAllowed,omitempty"`
	// HighestTierName names that tier by the HyperNodes' spec.tierName.
	HighestTierName string `json:"highestTierName,omitempty"`
}

// SubGroupPolicy is one of a PodGroup's spec.subGroupPolicy (volcano.sh/apis
// v1.14 SubGroupPolicySpec).
type SubGroupPolicy struct {
	Name            string                `json:"name,omitempty"`
	NetworkTopology *NetworkTopology      `json:"networkTopology,omitempty"`
	SubGroupSize    *int32                `json:"subGroupSize,omitempty"`
	MinSubGroups    *int32                `json:"minSubGroups,omitempty"`
	LabelSelector   *metav1.LabelSelector `json:"labelSelector,omitempty"`
	MatchLabelKeys  []string              `json:"matchLabelKeys,omitempty"`
}

// NativeTopology is what a PodGroup's spec says of topology in Volcano
// ≥ 1.12's fields, which Volcano v1.10's types do not carry (read raw).
// The zero value says nothing.
type NativeTopology struct {
	NetworkTopology *NetworkTopology `json:"networkTopology,omitempty"`
	SubGroupPolicy  []SubGroupPolicy `json:"subGroupPolicy,omitempty"`
	// Problems are the fields that could not be read (unknown, wrong
	// type), keyed by their path; the gang is not placed while any stands.
	Problems []ContractProblem `json:"-"`
}

// Set reports whether the PodGroup states anything in the native fields.
func (n *NativeTopology) Set() bool {
	return n != nil && (n.NetworkTopology != nil || len(n.SubGroupPolicy) > 0 || len(n.Problems) > 0)
}

// DecodeNativeTopology reads spec.networkTopology and spec.subGroupPolicy
// from their raw JSON (nil: absent), strictly: an unknown field or a wrong
// type is a problem naming the field, never dropped.
func DecodeNativeTopology(networkTopology, subGroupPolicy []byte) *NativeTopology {
	n := &NativeTopology{}
	if len(networkTopology) > 0 && !bytes.Equal(networkTopology, []byte("null")) {
		n.NetworkTopology = &NetworkTopology{}
		if p := decodeField(networkTopology, n.NetworkTopology, FieldNetworkTopology); p != nil {
			n.NetworkTopology = nil
			n.Problems = append(n.Problems, *p)
		}
	}
	if len(subGroupPolicy) > 0 && !bytes.Equal(subGroupPolicy, []byte("null")) {
		if p := decodeField(subGroupPolicy, &n.SubGroupPolicy, FieldSubGroupPolicy); p != nil {
			n.SubGroupPolicy = nil
			n.Problems = append(n.Problems, *p)
		}
	}
	return n
}

// decodeField decodes data into out, rejecting unknown fields; a failure is
// a problem on the field at path (the offending sub-field when known).
func decodeField(data []byte, out any, path string) *ContractProblem {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	err := dec.Decode(out)
	if err == nil {
		return nil
	}
	msg := err.Error()
	if i := strings.Index(msg, `unknown field "`); i >= 0 {
		name := strings.TrimSuffix(strings.TrimPrefix(msg[i:], `unknown field "`), `"`)
		return &ContractProblem{Key: path + "." + name, Msg: "unknown field: rdmatopo cannot honour it"}
	}
	var te *json.UnmarshalTypeError
	if ok := asTypeError(err, &te); ok && te.Field != "" {
		return &ContractProblem{Key: path + "." + te.Field, Msg: fmt.Sprintf("must be %s, got %s", te.Type, te.Value)}
	}
	return &ContractProblem{Key: path, Msg: msg}
}

// asTypeError unwraps a JSON type error.
func asTypeError(err error, out **json.UnmarshalTypeError) bool {
	te, ok := err.(*json.UnmarshalTypeError)
	if ok {
		*out = te
	}
	return ok
}

// VolcanoTiers counts HyperNode tiers as Volcano does (tier 1 the leaf
// group, each tier above the next switch layer) and maps them onto
// rdmatopo's tiers. The KCNR's NIC wiring is finer than HyperNodes (a node's
// NICs may hang off two leaves), so a tier is mapped onto the tightest
// rdmatopo tier that is never wider than it:
//
//	tier 0                  node    (one node, its NICs under one S0)
//	1 .. S1Tier-1           s0      (one leaf by the KCNR's wiring)
//	S1Tier                  s1      (one S1, as the plugin reads S1s)
//	above S1Tier            cluster
//
// With the default S1Tier 2 that is 1 → s0, 2 → s1, 3+ → cluster.
type VolcanoTiers struct {
	// S1Tier is the HyperNode tier read as S1 (0: 2, the default of the
	// plugin argument s1HyperNodeTier).
	S1Tier int
	// Names maps the HyperNodes' spec.tierName to their tier (nil: no
	// HyperNode names its tier).
	Names map[string]int
	// NamesUnknown says the HyperNodes are not known (an input check of a
	// workload without its cluster): any tier name is accepted, read as
	// cluster, and resolved when the gang is scheduled.
	NamesUnknown bool
}

// Tier maps a HyperNode tier number onto rdmatopo's tiers (see
// VolcanoTiers); false for a negative number.
func (v VolcanoTiers) Tier(n int) (Tier, bool) {
	s1 := v.S1Tier
	if s1 <= 0 {
		s1 = 2
	}
	switch {
	case n < 0:
		return TierNone, false
	case n == 0:
		return TierNode, true
	case n < s1:
		return TierS0, true
	case n == s1:
		return TierS1, true
	}
	return TierCluster, true
}

// nativeLimit is one layer's reading of mode and highest tier.
type nativeLimit struct {
	mode    Mode
	tier    Tier
	hasTier bool
	// source names the layer in override notes.
	source string
	// modeText and tierText render the values as the layer wrote them.
	modeText, tierText string
}

// readNetworkTopology reads spec.networkTopology as Volcano v1.14's
// scheduler does: mode hard unless soft (the CRD default), the tier from
// highestTierAllowed or, failing that, highestTierName resolved on the
// HyperNodes; a hard mode without a tier limits nothing (Volcano's
// IsHardTopologyMode is false then), read as hard at cluster; a soft mode
// without a tier keeps the default highest tier.
func readNetworkTopology(nt *NetworkTopology, path string, tiers VolcanoTiers, bad func(key, format string, args ...any)) (nativeLimit, bool) {
	l := nativeLimit{mode: ModeHard, tier: TierCluster, source: path}
	ok := true
	switch nt.Mode {
	case "", volcanoHard:
		l.modeText = volcanoHard
	case volcanoSoft:
		l.mode, l.modeText, l.tier = ModeSoft, volcanoSoft, DefaultHighestTier
	default:
		bad(path+".mode", "%q is not a mode (want hard or soft)", nt.Mode)
		ok = false
	}
	switch {
	case nt.HighestTierAllowed != nil && nt.HighestTierName != "":
		bad(path+".highestTierName", "cannot be set together with highestTierAllowed")
		ok = false
	case nt.HighestTierAllowed != nil:
		t, valid := tiers.Tier(*nt.HighestTierAllowed)
		if !valid {
			bad(path+".highestTierAllowed", "%d is not a tier (want 0 or more)", *nt.HighestTierAllowed)
			ok = false
			break
		}
		l.tier, l.hasTier, l.tierText = t, true, fmt.Sprint(*nt.HighestTierAllowed)
	case nt.HighestTierName != "":
		n, found := tiers.Names[nt.HighestTierName]
		if !found && tiers.NamesUnknown {
			l.hasTier, l.tierText = true, nt.HighestTierName
			break
		}
		if !found {
			bad(path+".highestTierName", "%q is the spec.tierName of no HyperNode (known: %s)", nt.HighestTierName, tierNames(tiers.Names))
			ok = false
			break
		}
		t, _ := tiers.Tier(n)
		l.tier, l.hasTier, l.tierText = t, true, fmt.Sprintf("%s (tier %d)", nt.HighestTierName, n)
	}
	return l, ok
}

// tierNames lists the known tier names, sorted ("none" when empty).
func tierNames(names map[string]int) string {
	if len(names) == 0 {
		return "none"
	}
	out := make([]string, 0, len(names))
	for n, t := range names {
		out = append(out, fmt.Sprintf("%s=%d", n, t))
	}
	sort.Strings(out)
	return strings.Join(out, ", ")
}

// readSubGroups maps spec.subGroupPolicy onto a segment: one policy whose
// selector takes every pod of the gang, grouped by nothing or by
// PartitionIDLabel into groups of subGroupSize pods (consecutive ranks, as
// Volcano's job controller numbers partitions), with a hard network
// topology. A soft sub-group topology asks a preference the planner's
// rank-order fill already follows and adds no segment. What cannot be
// mapped is a problem naming the field.
func readSubGroups(policies []SubGroupPolicy, tiers VolcanoTiers, pods []MemberAnnotations, minMember int32, bad func(key, format string, args ...any)) (Segment, bool) {
	if len(policies) == 0 {
		return Segment{}, false
	}
	if len(policies) > 1 {
		bad(FieldSubGroupPolicy, "%d policies: rdmatopo maps one sub-group policy over the whole gang onto its segments, not several", len(policies))
		return Segment{}, false
	}
	p := policies[0]
	path := FieldSubGroupPolicy + "[0]"
	size := int32(1)
	if p.SubGroupSize != nil {
		size = *p.SubGroupSize
	}
	if size < 1 {
		bad(path+".subGroupSize", "%d must be at least 1", size)
		return Segment{}, false
	}
	if p.MinSubGroups != nil && *p.MinSubGroups < 0 {
		bad(path+".minSubGroups", "%d must be 0 or more", *p.MinSubGroups)
		return Segment{}, false
	}
	if p.MinSubGroups != nil && minMember > 0 && *p.MinSubGroups*size > minMember {
		bad(path+".minSubGroups", "%d sub-groups of %d pods exceed the PodGroup's minMember %d, which is the minimum rdmatopo places", *p.MinSubGroups, size, minMember)
		return Segment{}, false
	}
	for i, k := range p.MatchLabelKeys {
		if k != PartitionIDLabel {
			bad(fmt.Sprintf("%s.matchLabelKeys[%d]", path, i), "%q: rdmatopo maps sub-groups of consecutive ranks only (grouped by %s, or not grouped)", k, PartitionIDLabel)
			return Segment{}, false
		}
	}
	if p.LabelSelector != nil {
		sel, err := metav1.LabelSelectorAsSelector(p.LabelSelector)
		if err != nil {
			bad(path+".labelSelector", "%v", err)
			return Segment{}, false
		}
		n := 0
		for _, m := range pods {
			if sel.Matches(labels.Set(m.Labels)) {
				n++
			}
		}
		if n != len(pods) {
			bad(path+".labelSelector", "selects %d of the gang's %d pods: rdmatopo maps a sub-group policy over the whole gang only", n, len(pods))
			return Segment{}, false
		}
	}
	if len(p.MatchLabelKeys) > 0 {
		groups := map[string]int32{}
		for _, m := range pods {
			v, ok := m.Labels[PartitionIDLabel]
			if !ok {
				bad(path+".matchLabelKeys", "pod %s has no %s label", m.Name, PartitionIDLabel)
				return Segment{}, false
			}
			groups[v]++
		}
		for v, n := range groups {
			if n != size {
				bad(path+".subGroupSize", "sub-group %s=%s holds %d pods, not %d", PartitionIDLabel, v, n, size)
				return Segment{}, false
			}
		}
	}
	if p.NetworkTopology == nil {
		return Segment{}, false // sizes without topology: nothing to keep together
	}
	l, ok := readNetworkTopology(p.NetworkTopology, path+".networkTopology", tiers, bad)
	if !ok || l.mode != ModeHard || !l.hasTier || l.tier == TierCluster || size < 2 {
		return Segment{}, false
	}
	return Segment{Size: int(size), Tier: l.tier}, true
}
