package topology

import (
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/kubewharf/katalyst-api/pkg/apis/node/v1alpha1"
	corev1 "k8s.io/api/core/v1"
)

// Fabric is an immutable view of the whole RDMA fabric: every node, every
// leaf (S0) with the node zones under it, and the S1 each leaf belongs to.
// All methods are safe for concurrent use. Returned slices are copies; the
// *Node and *Leaf values are shared and must not be modified.
type Fabric struct {
	nodes  map[string]*Node
	leaves map[S0ID]*Leaf
	// s1 maps an S1 to its leaves, sorted. The slices are never modified
	// after they are stored: a Cache replaces them instead (copy-on-write).
	s1 map[S1ID][]S0ID

	// Sorted key lists, computed on first use.
	once      sync.Once
	nodeNames []string
	leafIDs   []S0ID
	s1IDs     []S1ID
	reasons   []Reason
}

// Build reads a whole cluster at once. Nodes and KCNRs are matched by name; a
// KCNR without a Node and a Node without a KCNR both yield a Node (see
// BuildNode). Nil entries are ignored; of two objects with the same name the
// later one wins. Under S1FromHyperNode every node is in the default S1
// (BuildWithHyperNodes gives them theirs).
func Build(cfg Config, nodes []*corev1.Node, cnrs []*v1alpha1.CustomNodeResource) *Fabric {
	return BuildWithHyperNodes(cfg, nil, nodes, cnrs)
}

// BuildWithHyperNodes is Build with the HyperNodes that give each node its
// S1 under S1FromHyperNode (ignored under S1FromLabel).
func BuildWithHyperNodes(cfg Config, hyper *HyperNodeIndex, nodes []*corev1.Node, cnrs []*v1alpha1.CustomNodeResource) *Fabric {
	cfg = cfg.WithDefaults()
	nodeByName := make(map[string]*corev1.Node, len(nodes))
	for _, n := range nodes {
		if n != nil {
			nodeByName[n.Name] = n
		}
	}
	cnrByName := make(map[string]*v1alpha1.CustomNodeResource, len(cnrs))
	for _, c := range cnrs {
		if c != nil {
			cnrByName[c.Name] = c
		}
	}
	names := make([]string, 0, len(nodeByName)+len(cnrByName))
	for name := range nodeByName {
		names = append(names, name)
	}
	for name := range cnrByName {
		if _, ok := nodeByName[name]; !ok {
			names = append(names, name)
		}
	}
	slices.Sort(names)

	built := make(map[string]*Node, len(names))
	slots := map[S0ID][]Slot{}
	b := nodeBuilder{hyper: hyper}
	for _, name := range names {
		n := b.build(cfg, nodeByName[name], cnrByName[name])
		built[name] = n
		forEachSlot(n, func(leaf S0ID, s Slot) { slots[leaf] = append(slots[leaf], s) })
	}
	leaves := make(map[S0ID]*Leaf, len(slots))
	s1 := map[S1ID][]S0ID{}
	for id, ss := range slots {
		// Nodes were visited in name order and zones in id order, so the
		// slots are already sorted.
		l := newLeaf(id, ss)
		leaves[id] = l
		s1[l.S1] = append(s1[l.S1], id)
	}
	for _, ids := range s1 {
		slices.Sort(ids)
	}
	return &Fabric{nodes: built, leaves: leaves, s1: s1, nodeNames: names}
}

// forEachSlot calls fn once per (zone, leaf) pair of the node, in zone order,
// with the zone's NICs under that leaf.
func forEachSlot(n *Node, fn func(S0ID, Slot)) {
	for zi := range n.Zones {
		nics := n.Zones[zi].NICs
		for i := range nics {
			if firstOfLeaf(nics, i) {
				fn(nics[i].S0, Slot{Node: n, Zone: zi, NICs: nicsOfLeaf(nics, i)})
			}
		}
	}
}

// firstOfLeaf reports whether nics[i] is the first NIC of its leaf in nics.
func firstOfLeaf(nics []NIC, i int) bool {
	for j := 0; j < i; j++ {
		if nics[j].S0 == nics[i].S0 {
			return false
		}
	}
	return true
}

// nicsOfLeaf lists the NICs of nics[i]'s leaf, from i on.
func nicsOfLeaf(nics []NIC, i int) []NICID {
	out := make([]NICID, 0, len(nics)-i)
	for _, n := range nics[i:] {
		if n.S0 == nics[i].S0 {
			out = append(out, n.ID)
		}
	}
	return out
}

// leavesOfNode lists the distinct leaves of a node's NICs (nil node: none).
func leavesOfNode(n *Node) []S0ID {
	if n == nil {
		return nil
	}
	var out []S0ID
	forEachSlot(n, func(leaf S0ID, _ Slot) {
		for _, l := range out {
			if l == leaf {
				return
			}
		}
		out = append(out, leaf)
	})
	return out
}

// compareSlots orders slots by node name, then zone id.
func compareSlots(a, b Slot) int {
	if c := strings.Compare(a.Node.Name, b.Node.Name); c != 0 {
		return c
	}
	return a.Node.Zones[a.Zone].ID - b.Node.Zones[b.Zone].ID
}

// newLeaf makes a leaf of sorted, non-empty slots and settles its S1: the S1
// of the first node by name that has a Node object (a node known from its
// KCNR alone has no S1 to give; when every node of the leaf is such, the
// leaf's S1 is unknown, ""), with a reason for every node with a Node
// object that disagrees.
func newLeaf(id S0ID, slots []Slot) *Leaf {
	first := 0
	for first < len(slots) && slots[first].Node.KCNROnly {
		first++
	}
	if first == len(slots) {
		return &Leaf{ID: id, Slots: slots}
	}
	l := &Leaf{ID: id, S1: slots[first].Node.S1, Slots: slots}
	from := slots[first].Node.Name
	last := ""
	for _, s := range slots[first+1:] {
		if s.Node.KCNROnly || s.Node.S1 == l.S1 || s.Node.Name == last {
			continue
		}
		last = s.Node.Name
		l.Reasons = append(l.Reasons, Reason{
			Node: s.Node.Name,
			Code: ReasonS1Mismatch,
			Message: fmt.Sprintf("leaf %s: node S1 %q differs from the leaf's S1 %q (taken from node %s)",
				id, s.Node.S1, l.S1, from),
		})
	}
	return l
}

// Node returns the named node.
func (f *Fabric) Node(name string) (*Node, bool) {
	n, ok := f.nodes[name]
	return n, ok
}

// Len is the number of nodes.
func (f *Fabric) Len() int { return len(f.nodes) }

// Leaf returns the leaf with the given id.
func (f *Fabric) Leaf(id S0ID) (*Leaf, bool) {
	l, ok := f.leaves[id]
	return l, ok
}

// NIC returns a node's NIC.
func (f *Fabric) NIC(node string, nic NICID) (NIC, bool) {
	n, ok := f.nodes[node]
	if !ok {
		return NIC{}, false
	}
	for _, z := range n.Zones {
		for _, c := range z.NICs {
			if c.ID == nic {
				return c, true
			}
		}
	}
	return NIC{}, false
}

// NICLeaf returns the leaf of a node's NIC.
func (f *Fabric) NICLeaf(node string, nic NICID) (S0ID, bool) {
	n, ok := f.nodes[node]
	if !ok {
		return "", false
	}
	for _, z := range n.Zones {
		for _, c := range z.NICs {
			if c.ID == nic {
				return c.S0, true
			}
		}
	}
	return "", false
}

// NICLeaves returns the distinct leaves of a node's NICs, in the order the
// NICs first reach them; NICs the fabric does not know are skipped.
func (f *Fabric) NICLeaves(node string, nics []NICID) []S0ID {
	var out []S0ID
	for _, nic := range nics {
		if id, ok := f.NICLeaf(node, nic); ok && !slices.Contains(out, id) {
			out = append(out, id)
		}
	}
	return out
}

// LeavesOf returns the leaves of an S1, sorted. S1 "" holds the leaves whose
// S1 is unknown (all of them when no S1 label is configured).
func (f *Fabric) LeavesOf(s1 S1ID) []S0ID {
	return append([]S0ID(nil), f.s1[s1]...)
}

// NodeNames returns every node name, sorted.
func (f *Fabric) NodeNames() []string {
	f.index()
	return append([]string(nil), f.nodeNames...)
}

// LeafIDs returns every leaf id, sorted.
func (f *Fabric) LeafIDs() []S0ID {
	f.index()
	return append([]S0ID(nil), f.leafIDs...)
}

// S1IDs returns every S1 that has a leaf, sorted; "" is included when some
// leaf's S1 is unknown.
func (f *Fabric) S1IDs() []S1ID {
	f.index()
	return append([]S1ID(nil), f.s1IDs...)
}

// Reasons returns the reasons of every node and leaf, sorted by node, code,
// NIC and message.
func (f *Fabric) Reasons() []Reason {
	f.index()
	return append([]Reason(nil), f.reasons...)
}

// index computes the sorted key lists once.
func (f *Fabric) index() {
	f.once.Do(func() {
		if f.nodeNames == nil {
			f.nodeNames = make([]string, 0, len(f.nodes))
			for name := range f.nodes {
				f.nodeNames = append(f.nodeNames, name)
			}
			slices.Sort(f.nodeNames)
		}
		f.leafIDs = make([]S0ID, 0, len(f.leaves))
		for id, l := range f.leaves {
			f.leafIDs = append(f.leafIDs, id)
			f.reasons = append(f.reasons, l.Reasons...)
		}
		slices.Sort(f.leafIDs)
		f.s1IDs = make([]S1ID, 0, len(f.s1))
		for id := range f.s1 {
			f.s1IDs = append(f.s1IDs, id)
		}
		slices.Sort(f.s1IDs)
		for _, n := range f.nodes {
			f.reasons = append(f.reasons, n.Reasons...)
		}
		SortReasons(f.reasons)
	})
}
