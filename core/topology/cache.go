package topology

import (
	"maps"
	"slices"
	"sort"
	"sync"

	"github.com/kubewharf/katalyst-api/pkg/apis/node/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Cache keeps the fabric up to date from Node and KCNR events. It is meant to
// live as long as the scheduler and is safe for concurrent use.
//
// An update rebuilds only the node it names and the leaves that node had or
// now has (each such Leaf is replaced by a new one, never modified), so its
// cost does not grow with the cluster. Snapshot copies the node, leaf and S1
// maps (sharing the immutable values) and reuses that copy until the next
// update.
//
// The cache keeps the pointers it is given: callers must not modify a Node or
// KCNR after handing it over (informer objects already follow that rule).
type Cache struct {
	mu  sync.Mutex
	cfg Config

	nodeObjs map[string]*corev1.Node
	cnrObjs  map[string]*v1alpha1.CustomNodeResource

	nodes  map[string]*Node
	leaves map[S0ID]*Leaf
	// s1 values are sorted and never modified in place (snapshots share them).
	s1 map[S1ID][]S0ID

	// snap is the last snapshot, nil after any change.
	snap *Fabric
	// builder is reused for every rebuild (guarded by mu).
	builder nodeBuilder
}

// NewCache returns an empty cache reading nodes with cfg.
func NewCache(cfg Config) *Cache {
	return &Cache{
		cfg:      cfg.WithDefaults(),
		nodeObjs: map[string]*corev1.Node{},
		cnrObjs:  map[string]*v1alpha1.CustomNodeResource{},
		nodes:    map[string]*Node{},
		leaves:   map[S0ID]*Leaf{},
		s1:       map[S1ID][]S0ID{},
	}
}

// UpsertNode adds or replaces a Node and rebuilds that node. Nil is ignored.
func (c *Cache) UpsertNode(n *corev1.Node) {
	if n != nil {
		upsert(c, c.nodeObjs, n)
	}
}

// DeleteNode forgets a Node. If its KCNR is still known the node is rebuilt
// from the KCNR alone, otherwise it leaves the fabric.
func (c *Cache) DeleteNode(name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.nodeObjs[name]; !ok {
		return
	}
	delete(c.nodeObjs, name)
	c.rebuild(name)
}

// UpsertCNR adds or replaces a KCNR and rebuilds its node. Nil is ignored.
func (c *Cache) UpsertCNR(cnr *v1alpha1.CustomNodeResource) {
	if cnr != nil {
		upsert(c, c.cnrObjs, cnr)
	}
}

// upsert stores obj in objs, the cache's Nodes or KCNRs by name, and
// rebuilds the node of that name. An update with the same resourceVersion
// and generation as the stored object is a no-op; objects without a
// resourceVersion (built in tests) always count as changed.
func upsert[T metav1.Object](c *Cache, objs map[string]T, obj T) {
	c.mu.Lock()
	defer c.mu.Unlock()
	name := obj.GetName()
	if old, ok := objs[name]; ok && obj.GetResourceVersion() != "" &&
		old.GetResourceVersion() == obj.GetResourceVersion() && old.GetGeneration() == obj.GetGeneration() {
		return
	}
	objs[name] = obj
	c.rebuild(name)
}

// SetHyperNodes replaces the HyperNodes the nodes' S1s are read from
// (S1FromHyperNode) and rebuilds every node whose S1 or S1 problem changes.
// Under S1FromLabel it only keeps the index.
func (c *Cache) SetHyperNodes(idx *HyperNodeIndex) {
	c.mu.Lock()
	defer c.mu.Unlock()
	old := c.builder.hyper
	c.builder.hyper = idx
	if c.cfg.S1Source != S1FromHyperNode {
		return
	}
	for name, n := range c.nodeObjs {
		s1a, ra := old.S1Of(n)
		s1b, rb := idx.S1Of(n)
		if s1a != s1b || (ra == nil) != (rb == nil) || ra != nil && *ra != *rb {
			c.rebuild(name)
		}
	}
}

// HyperNodes returns the HyperNode index last given (nil: none).
func (c *Cache) HyperNodes() *HyperNodeIndex {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.builder.hyper
}

// DeleteCNR forgets a KCNR; its node (if the Node is known) is rebuilt as a
// node without KCNR.
func (c *Cache) DeleteCNR(name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.cnrObjs[name]; !ok {
		return
	}
	delete(c.cnrObjs, name)
	c.rebuild(name)
}

// Snapshot returns the current fabric. Consecutive calls without an update in
// between return the same *Fabric.
func (c *Cache) Snapshot() *Fabric {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.snap == nil {
		c.snap = &Fabric{
			nodes:  maps.Clone(c.nodes),
			leaves: maps.Clone(c.leaves),
			s1:     maps.Clone(c.s1),
		}
	}
	return c.snap
}

// rebuild rebuilds one node and the leaves it touches. c.mu must be held.
func (c *Cache) rebuild(name string) {
	old := c.nodes[name]
	var next *Node
	nodeObj, cnrObj := c.nodeObjs[name], c.cnrObjs[name]
	if nodeObj != nil || cnrObj != nil {
		next = c.builder.build(c.cfg, nodeObj, cnrObj)
		next.Generation = 1
		if old != nil {
			next.Generation = old.Generation + 1
		}
		c.nodes[name] = next
	} else {
		delete(c.nodes, name)
	}
	c.snap = nil

	touched := leavesOfNode(old)
	for _, id := range leavesOfNode(next) {
		if !containsLeaf(touched, id) {
			touched = append(touched, id)
		}
	}
	for _, id := range touched {
		c.rebuildLeaf(id, name, next)
	}
}

func containsLeaf(ids []S0ID, id S0ID) bool {
	for _, v := range ids {
		if v == id {
			return true
		}
	}
	return false
}

// rebuildLeaf replaces leaf id with a copy whose slots of node name come from
// next (nil: the node is gone), and keeps the S1 index in step.
func (c *Cache) rebuildLeaf(id S0ID, name string, next *Node) {
	prev := c.leaves[id]
	var slots []Slot
	if prev != nil {
		slots = make([]Slot, 0, len(prev.Slots)+2)
		for _, s := range prev.Slots {
			if s.Node.Name != name {
				slots = append(slots, s)
			}
		}
	}
	if next != nil {
		forEachSlot(next, func(leaf S0ID, s Slot) {
			if leaf == id {
				slots = append(slots, s)
			}
		})
	}
	var l *Leaf
	if len(slots) > 0 {
		slices.SortStableFunc(slots, compareSlots)
		l = newLeaf(id, slots)
		c.leaves[id] = l
	} else {
		delete(c.leaves, id)
	}

	switch {
	case prev == nil && l == nil:
	case prev == nil:
		c.s1[l.S1] = insertLeaf(c.s1[l.S1], id)
	case l == nil:
		c.removeFromS1(prev.S1, id)
	case prev.S1 != l.S1:
		c.removeFromS1(prev.S1, id)
		c.s1[l.S1] = insertLeaf(c.s1[l.S1], id)
	}
}

func (c *Cache) removeFromS1(s1 S1ID, id S0ID) {
	ids := c.s1[s1]
	i := sort.Search(len(ids), func(i int) bool { return ids[i] >= id })
	if i == len(ids) || ids[i] != id {
		return
	}
	if len(ids) == 1 {
		delete(c.s1, s1)
		return
	}
	out := make([]S0ID, 0, len(ids)-1)
	out = append(out, ids[:i]...)
	c.s1[s1] = append(out, ids[i+1:]...)
}

// insertLeaf returns a new sorted slice with id added (ids is not modified).
func insertLeaf(ids []S0ID, id S0ID) []S0ID {
	i := sort.Search(len(ids), func(i int) bool { return ids[i] >= id })
	if i < len(ids) && ids[i] == id {
		return ids
	}
	out := make([]S0ID, 0, len(ids)+1)
	out = append(out, ids[:i]...)
	out = append(out, id)
	return append(out, ids[i:]...)
}
