// Package companion is rdmatopo beside a scheduler it does not replace
// (Volcano ≥ 1.12, Kueue TAS with kube-scheduler, KAI): it publishes the
// fabric in the forms those schedulers read (Volcano HyperNodes, node
// labels for Topology levels) and chooses each RDMA pod's NUMA zone(s) and
// NICs when the pod is bound, through a mutating admission webhook on
// pods/binding.
//
// publish.go computes what is published (Publication, pure); publisher.go
// keeps a cluster in step with it; webhook.go answers the admission
// reviews; choose.go picks the NICs; book.go keeps replicas from handing
// out one NIC twice; adopt.go brings the pods' annotations to what the
// KCNRs list.
package companion

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"regexp"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rdmatopo/rdmatopo/core/topology"
)

// Keys the companion writes on what it publishes.
const (
	// SourceLabel is Volcano's label naming who publishes a HyperNode;
	// Volcano's own discovery deletes only HyperNodes with its own value,
	// and the companion only those with SourceValue.
	SourceLabel = "volcano.sh/network-topology-source"
	// SourceValue is the companion's value of SourceLabel.
	SourceValue = "rdmatopo"
	// LeafGroupLabel (Node) names the node's leaf group: the tier-1
	// HyperNode, the nodes whose NICs hang off the same set of leaves.
	LeafGroupLabel = "rdmatopo.io/leaf-group"
	// S1GroupLabel (Node) names the node's S1: the tier-2 HyperNode.
	S1GroupLabel = "rdmatopo.io/s1-group"
	// LeavesAnnotation (HyperNode) lists the leaves (S0 ids) of a tier-1
	// HyperNode's nodes, comma-separated; of a tier-2 HyperNode, the S1 id.
	LeavesAnnotation = "rdmatopo.io/leaves"
	// S1Annotation (HyperNode) is the S1 id a HyperNode belongs to ("" when
	// S1 membership is unknown).
	S1Annotation = "rdmatopo.io/s1"
)

// HyperNode tiers and their names (spec.tierName).
const (
	TierLeafGroup     = 1
	TierS1            = 2
	TierNameLeafGroup = "leaf-group"
	TierNameS1        = "s1"
)

// Publication is what the companion publishes for one fabric: HyperNodes
// sorted by tier, then name, and per node the labels it owns (nodes without
// RDMA NICs get none, and lose any the companion wrote earlier).
type Publication struct {
	HyperNodes []*topology.HyperNode
	// Labels maps a node to its LeafGroupLabel and S1GroupLabel values.
	Labels map[string]map[string]string
}

// Publish computes the publication of a fabric. A node's group is the set
// of leaves its NICs hang off, within its S1: nodes with equal sets form
// one tier-1 HyperNode (so every node is in exactly one, and the tree is
// strict); each S1 is a tier-2 HyperNode over its groups. NICs of unknown
// leaf are each a leaf of their own, so such a node forms a group alone.
// Names are derived from the leaf set and the S1, so they stay stable while
// the cabling does.
func Publish(f *topology.Fabric) *Publication {
	type group struct {
		s1     topology.S1ID
		leaves []topology.S0ID
		nodes  []string
	}
	groups := map[string]*group{}
	s1Groups := map[topology.S1ID][]string{}
	pub := &Publication{Labels: map[string]map[string]string{}}
	for _, name := range f.NodeNames() {
		n, _ := f.Node(name)
		leaves := nodeLeaves(n)
		if len(leaves) == 0 {
			continue
		}
		gname := LeafGroupName(n.S1, leaves)
		g := groups[gname]
		if g == nil {
			g = &group{s1: n.S1, leaves: leaves}
			groups[gname] = g
			s1Groups[n.S1] = append(s1Groups[n.S1], gname)
		}
		g.nodes = append(g.nodes, name)
		pub.Labels[name] = map[string]string{LeafGroupLabel: gname, S1GroupLabel: S1GroupName(n.S1)}
	}
	names := make([]string, 0, len(groups))
	for name := range groups {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		g := groups[name]
		members := make([]topology.HyperNodeMember, len(g.nodes))
		for i, node := range g.nodes {
			members[i] = exactMember(topology.MemberNode, node)
		}
		pub.HyperNodes = append(pub.HyperNodes, hyperNode(name, TierLeafGroup, TierNameLeafGroup, members, map[string]string{
			LeavesAnnotation: joinLeaves(g.leaves),
			S1Annotation:     string(g.s1),
		}))
	}
	s1s := make([]topology.S1ID, 0, len(s1Groups))
	for id := range s1Groups {
		s1s = append(s1s, id)
	}
	slices.Sort(s1s)
	for _, id := range s1s {
		gs := s1Groups[id]
		slices.Sort(gs)
		members := make([]topology.HyperNodeMember, len(gs))
		for i, g := range gs {
			members[i] = exactMember(topology.MemberHyperNode, g)
		}
		pub.HyperNodes = append(pub.HyperNodes, hyperNode(S1GroupName(id), TierS1, TierNameS1, members, map[string]string{
			S1Annotation: string(id),
		}))
	}
	return pub
}

// nodeLeaves lists the distinct leaves of a node's NICs, sorted.
func nodeLeaves(n *topology.Node) []topology.S0ID {
	var out []topology.S0ID
	for _, z := range n.Zones {
		for _, nic := range z.NICs {
			if !slices.Contains(out, nic.S0) {
				out = append(out, nic.S0)
			}
		}
	}
	slices.Sort(out)
	return out
}

func joinLeaves(ids []topology.S0ID) string {
	parts := make([]string, len(ids))
	for i, id := range ids {
		parts[i] = string(id)
	}
	return strings.Join(parts, ",")
}

// hyperNode builds one HyperNode under the companion's source label.
func hyperNode(name string, tier int, tierName string, members []topology.HyperNodeMember, ann map[string]string) *topology.HyperNode {
	return &topology.HyperNode{
		TypeMeta: metav1.TypeMeta{APIVersion: topology.HyperNodeResource.GroupVersion().String(), Kind: "HyperNode"},
		ObjectMeta: metav1.ObjectMeta{
			Name:        name,
			Labels:      map[string]string{SourceLabel: SourceValue},
			Annotations: ann,
		},
		Spec: topology.HyperNodeSpec{Tier: tier, TierName: tierName, Members: members},
	}
}

func exactMember(typ, name string) topology.HyperNodeMember {
	return topology.HyperNodeMember{Type: typ, Selector: topology.HyperNodeMemberSelector{ExactMatch: &topology.HyperNodeExactMatch{Name: name}}}
}

// LeafGroupName names the tier-1 HyperNode (and the LeafGroupLabel value)
// of the nodes of an S1 whose NICs use exactly these leaves: a hash of the
// S1 and the sorted leaves, so the name is a valid object name and label
// value whatever the leaf ids hold.
func LeafGroupName(s1 topology.S1ID, leaves []topology.S0ID) string {
	h := sha256.New()
	fmt.Fprintf(h, "%s\x00", s1)
	for _, id := range leaves {
		fmt.Fprintf(h, "%s\x00", id)
	}
	return "rdmatopo-lg-" + hex.EncodeToString(h.Sum(nil))[:12]
}

// nameSafe is what an S1 id may hold to be used as is in a name.
var nameSafe = regexp.MustCompile(`^[a-z0-9]([a-z0-9-]{0,30}[a-z0-9])?$`)

// S1GroupName names the tier-2 HyperNode (and the S1GroupLabel value) of
// an S1: "rdmatopo-s1-<id>" when the id is a short lower-case DNS label,
// else a hash; the S1 of unknown membership is "rdmatopo-s1-default".
func S1GroupName(s1 topology.S1ID) string {
	switch {
	case s1 == "":
		return "rdmatopo-s1-default"
	case nameSafe.MatchString(string(s1)) && string(s1) != "default":
		return "rdmatopo-s1-" + string(s1)
	}
	sum := sha256.Sum256([]byte(s1))
	return "rdmatopo-s1-h" + hex.EncodeToString(sum[:])[:12]
}

// CheckConfig refuses a configuration the companion cannot publish from:
// S1s read from HyperNodes (s1Source: hypernode) would be read back from
// the HyperNodes the companion itself writes. The companion takes S1s from
// the node label (s1NodeLabel), or puts every leaf in one S1.
func CheckConfig(cfg topology.Config) error {
	if cfg.WithDefaults().S1Source == topology.S1FromHyperNode {
		return fmt.Errorf("rdma-topology argument s1Source: %q: the companion publishes the HyperNodes itself; use s1Source: %s with s1NodeLabel", topology.S1FromHyperNode, topology.S1FromLabel)
	}
	return nil
}
