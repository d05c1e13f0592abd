package placement

import (
	"maps"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/rdmatopo/rdmatopo/core/ledger"
	"github.com/rdmatopo/rdmatopo/core/topology"
)

// Cap bounds what a node can still give, as the scheduler session sees it
// (its idle resources). It catches what a lagging KCNR has not reported yet.
type Cap struct {
	GPU      int64
	CPUMilli int64
	NICs     int64
}

// zoneFree is the free view of one NUMA zone.
type zoneFree struct {
	id       int
	gpu      int64
	cpuMilli int64
	// nics are free NIC units: each NIC with free units (see
	// State.freeUnits) appears once per free unit, up to maxShare times,
	// in NIC order. A count of entries is a count of free units (what
	// pods of one NIC each can use); a pod takes distinct NICs
	// (work.freeNICs).
	nics []topology.NICID
	// leaf of each entry of nics.
	leaves []topology.S0ID
}

// maxShare bounds how many pods the planner puts on one NIC in a session
// (the entries of a NIC in zoneFree.nics): a NIC reporting more units
// serves at most this many more pods per session. It keeps free views
// small on a KCNR reporting a huge capacity.
const maxShare = 64

// nodeFree is the free view of one node, computed lazily and dropped when a
// reservation on the node changes.
type nodeFree struct {
	node  *topology.Node
	zones []zoneFree
	cap   *Cap
}

// State is the mutable free view a session plans against: a fabric snapshot
// minus every ledger reservation (held NICs; GPUs and CPUs of reservations a
// KCNR does not list yet), bounded by per-node caps. It is safe for
// concurrent use (session predicates run on many goroutines).
type State struct {
	mu     sync.Mutex
	fabric *topology.Fabric
	// taken maps node -> NIC -> the holders (pod UIDs, holdPrefix or
	// keepOutPrefix ids), sorted; each takes one unit of the NIC. A slice
	// is never modified in place (a clone may share it).
	taken map[string]map[topology.NICID][]string
	// used maps node -> NUMA id -> GPU/CPU of reservations not in the KCNR.
	used map[string]map[int]Cap
	// caps are optional per-node bounds (session idle).
	caps map[string]Cap
	// views caches nodeFree per node; invalidated on change.
	views map[string]*nodeFree
	// leafCache holds per-leaf statistics per pod shape for gangs without
	// node constraints; an entry is dropped when a node under the leaf
	// changes.
	leafCache map[Shape]map[topology.S0ID]*leafStat
	// unusable marks nodes no pod may use (not in the session,
	// unschedulable, tainted).
	unusable map[string]bool
	// freed counts, per NIC, the units a KCNR lists as allocated that are
	// free in this state (their holders are evicted in a what-if, see
	// Release).
	freed map[string]map[topology.NICID]int64
	// maxNode is the most GPUs and NICs any one node has (free or not),
	// computed on first use; it rules out the node tier for large gangs
	// without scanning nodes.
	maxNode *Cap
	// shared is set once the state was cloned or is a clone: its per-node
	// maps (taken, used, freed) and per-shape leaf caches may then be
	// another state's too, and are copied before the first write (owned,
	// ownedShapes mark those copied).
	shared      bool
	owned       map[string]bool
	ownedShapes map[Shape]bool
}

// own makes the node's entries in taken, used and freed this state's own
// before a write. Callers hold s.mu.
func (s *State) own(node string) {
	if !s.shared || s.owned[node] {
		return
	}
	if m := s.taken[node]; m != nil {
		s.taken[node] = maps.Clone(m)
	}
	if u := s.used[node]; u != nil {
		s.used[node] = maps.Clone(u)
	}
	if f := s.freed[node]; f != nil {
		s.freed[node] = maps.Clone(f)
	}
	if s.owned == nil {
		s.owned = map[string]bool{}
	}
	s.owned[node] = true
}

// leafCacheOf returns the state's own leaf statistics for shape, for
// writing. Callers hold s.mu.
func (s *State) leafCacheOf(sh Shape) map[topology.S0ID]*leafStat {
	m := s.leafCache[sh]
	if m == nil {
		m = map[topology.S0ID]*leafStat{}
		s.leafCache[sh] = m
	} else if s.shared && !s.ownedShapes[sh] {
		m = maps.Clone(m)
		s.leafCache[sh] = m
	}
	if s.shared {
		if s.ownedShapes == nil {
			s.ownedShapes = map[Shape]bool{}
		}
		s.ownedShapes[sh] = true
	}
	return m
}

// largestNode returns the most GPUs and NIC units of any node. Callers
// hold s.mu.
func (s *State) largestNode() Cap {
	if s.maxNode == nil {
		var c Cap
		for _, name := range s.fabric.NodeNames() {
			n, _ := s.fabric.Node(name)
			var gpu, nics int64
			for _, z := range n.Zones {
				gpu += z.FreeGPU
				for _, nic := range z.NICs {
					// Each unit serves a pod (as many as a free view
					// lists, maxShare).
					nics += min(max(nic.Units, 1), maxShare)
				}
			}
			c.GPU, c.NICs = max(c.GPU, gpu), max(c.NICs, nics)
		}
		s.maxNode = &c
	}
	return *s.maxNode
}

// NewState builds the free view of f after the reservations in l.
func NewState(f *topology.Fabric, l *ledger.Ledger) *State {
	s := &State{
		fabric: f,
		taken:  map[string]map[topology.NICID][]string{},
		used:   map[string]map[int]Cap{},
		caps:   map[string]Cap{},
		views:  make(map[string]*nodeFree, f.Len()),

		leafCache: map[Shape]map[topology.S0ID]*leafStat{},
		unusable:  map[string]bool{},
	}
	if l != nil {
		l.Each(func(r ledger.Reservation) {
			s.apply(r.UID, r.Node, r.Zones, !r.Confirmed, false)
		})
	}
	return s
}

// Fabric returns the snapshot the state is built on.
func (s *State) Fabric() *topology.Fabric { return s.fabric }

// SetCap bounds what node can still give (its session idle resources).
func (s *State) SetCap(node string, c Cap) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.caps[node] = c
	s.invalidate(node)
}

// SetUnusable marks a node that no pod may use in this session (not ready,
// unschedulable, or tainted against pods without tolerations). Gangs with
// constraints of their own decide through Gang.Allowed instead.
func (s *State) SetUnusable(node string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.unusable[node] = true
	s.invalidate(node)
}

// invalidate drops what is cached about a node: its free view and the
// statistics of every leaf it has a NIC under. Callers hold s.mu.
func (s *State) invalidate(node string) {
	delete(s.views, node)
	if len(s.leafCache) == 0 {
		return
	}
	n, ok := s.fabric.Node(node)
	if !ok {
		return
	}
	for _, z := range n.Zones {
		for _, nic := range z.NICs {
			for sh, m := range s.leafCache {
				if _, ok := m[nic.S0]; ok {
					delete(s.leafCacheOf(sh), nic.S0)
				}
			}
		}
	}
}

// Apply records a reservation made in the session (a task allocated).
func (s *State) Apply(uid string, a Assignment) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.apply(uid, a.Node, a.Zones, true, true)
}

// Unapply reverts Apply (a task deallocated, a statement discarded).
func (s *State) Unapply(uid string, a Assignment) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.own(a.Node)
	if m := s.taken[a.Node]; m != nil {
		for _, z := range a.Zones {
			for _, nic := range z.NICs {
				hs := m[nic]
				if i := slices.Index(hs, uid); i >= 0 {
					if len(hs) == 1 {
						delete(m, nic)
					} else {
						m[nic] = slices.Delete(slices.Clone(hs), i, i+1)
					}
				}
			}
		}
	}
	if u := s.used[a.Node]; u != nil {
		for _, z := range a.Zones {
			c := u[z.NUMA]
			c.GPU -= z.GPU
			c.CPUMilli -= z.CPUMilli
			u[z.NUMA] = c
		}
	}
	if c, ok := s.caps[a.Node]; ok {
		for _, z := range a.Zones {
			c.GPU += z.GPU
			c.CPUMilli += z.CPUMilli
			c.NICs += int64(len(z.NICs))
		}
		s.caps[a.Node] = c
	}
	s.invalidate(a.Node)
}

// apply marks the zones' NICs held by uid; countUse adds their GPU/CPU to the
// zone usage (reservations the KCNR does not list yet); capUse lowers the
// node cap (allocations the session's idle figures were read before).
func (s *State) apply(uid, node string, zones []ledger.ZoneUse, countUse, capUse bool) {
	s.own(node)
	m := s.taken[node]
	if m == nil {
		m = map[topology.NICID][]string{}
		s.taken[node] = m
	}
	for _, z := range zones {
		for _, nic := range z.NICs {
			hs := m[nic]
			if i, found := slices.BinarySearch(hs, uid); !found {
				m[nic] = slices.Insert(slices.Clip(hs), i, uid)
			}
		}
	}
	if countUse {
		u := s.used[node]
		if u == nil {
			u = map[int]Cap{}
			s.used[node] = u
		}
		for _, z := range zones {
			c := u[z.NUMA]
			c.GPU += z.GPU
			c.CPUMilli += z.CPUMilli
			u[z.NUMA] = c
		}
	}
	if c, ok := s.caps[node]; ok && capUse {
		for _, z := range zones {
			c.GPU -= z.GPU
			c.CPUMilli -= z.CPUMilli
			c.NICs -= int64(len(z.NICs))
		}
		s.caps[node] = c
	}
	s.invalidate(node)
}

// holdPrefix prefixes the holder of a NIC a hold keeps (AddHold), so that
// HolderOf tells it from a reservation of the pod.
const holdPrefix = "hold/"

// AddHold keeps the assignment's NICs, GPUs and CPUs for pod uid, which is
// not allocated yet (a preempting gang waiting for its victims to go, a
// failed bind waiting to be retried): no other pod is planned onto them.
// HolderOf names the holder "hold/<uid>".
func (s *State) AddHold(uid string, a Assignment) { s.Apply(holdPrefix+uid, a) }

// RemoveHold reverts AddHold, before the pod is allocated there.
func (s *State) RemoveHold(uid string, a Assignment) { s.Unapply(holdPrefix+uid, a) }

// keepOutPrefix prefixes the holder of a NIC kept out of placement
// (KeepOut), so that HolderOf tells it from a pod.
const keepOutPrefix = "out/"

// KeepOut keeps a NIC of node out of placement in this state, as if a pod
// held it, without touching the node's GPUs, CPUs or cap: hardware that
// is listed and free but not to be trusted yet (a flapping NIC in its
// cool-down). HolderOf names the holder "out/<why>".
func (s *State) KeepOut(node string, nic topology.NICID, why string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.apply(keepOutPrefix+why, node, []ledger.ZoneUse{{NICs: []topology.NICID{nic}}}, false, false)
}

// Usable reports whether pods may use the node in this state (SetUnusable).
func (s *State) Usable(node string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return !s.unusable[node]
}

// HolderOf returns a pod holding a NIC in this state, if any: the first by
// id when several share it.
func (s *State) HolderOf(node string, nic topology.NICID) (string, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	hs := s.taken[node][nic]
	if len(hs) == 0 {
		return "", false
	}
	return hs[0], true
}

// Taken reports whether a node's NIC has no unit left for self in this
// state: self does not hold it, some pod does, and it has no free unit
// (freeUnits). It returns a holder to name. A NIC no one holds is never
// taken here (what the KCNR lists is the caller's to check), so on NICs of
// one unit it is "another pod holds it".
func (s *State) Taken(node string, nic topology.NICID, self string) (string, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	hs := s.taken[node][nic]
	if len(hs) == 0 || slices.Contains(hs, self) {
		return "", false
	}
	if n, ok := s.fabric.NIC(node, nic); ok && s.freeUnits(n, hs, s.freed[node][nic]) > 0 {
		return "", false
	}
	return hs[0], true
}

// freeUnits is how many more pods a NIC serves in this state, given its
// holders and the units a what-if frees there (State.Release):
//
//	min(FreeUnits + freed − holders the KCNR does not list on it,
//	    Units − holders), at least 0,
//
// with FreeUnits + freed at most Units. The KCNR's free units already
// count the holders it lists on the NIC; every holder takes one unit. A
// NIC kept out (KeepOut) serves none. On a NIC of one unit it is 1 when
// the KCNR shows it free (or a what-if frees it) and no one holds it, else
// 0.
func (s *State) freeUnits(nic topology.NIC, holders []string, freed int64) int64 {
	kcnr := nic.FreeUnits
	if freed > 0 {
		kcnr = min(kcnr+freed, max(nic.Units, 1))
	}
	if len(holders) == 0 {
		return kcnr
	}
	unlisted := int64(0)
	for _, h := range holders {
		if strings.HasPrefix(h, keepOutPrefix) {
			return 0
		}
		if !listedOn(nic, h) {
			unlisted++
		}
	}
	return max(min(kcnr-unlisted, nic.Units-int64(len(holders))), 0)
}

// listedOn reports whether the NIC's KCNR allocations list the pod of UID
// uid (consumers are "namespace/name/uid"). A hold's id is never listed.
func listedOn(nic topology.NIC, uid string) bool {
	if strings.Contains(uid, "/") {
		return false
	}
	for _, c := range nic.Consumers {
		if strings.HasSuffix(c, "/"+uid) {
			return true
		}
	}
	return false
}

// view returns the free view of a node (nil if the fabric does not know it).
// Callers hold s.mu.
func (s *State) view(name string) *nodeFree {
	if v, ok := s.views[name]; ok {
		return v
	}
	n, ok := s.fabric.Node(name)
	if !ok {
		s.views[name] = nil
		return nil
	}
	v := &nodeFree{node: n, zones: make([]zoneFree, 0, len(n.Zones))}
	if c, ok := s.caps[name]; ok {
		cc := c
		v.cap = &cc
	}
	taken := s.taken[name]
	used := s.used[name]
	freed := s.freed[name]
	// One backing array for all zones' NICs and leaves (views are built for
	// every node of the cluster once per session).
	total := 0
	for _, z := range n.Zones {
		total += len(z.NICs)
	}
	nics := make([]topology.NICID, 0, total)
	leaves := make([]topology.S0ID, 0, total)
	for _, z := range n.Zones {
		zf := zoneFree{id: z.ID, gpu: z.FreeGPU, cpuMilli: z.FreeCPUMilli}
		if u, ok := used[z.ID]; ok {
			zf.gpu = max(zf.gpu-u.GPU, 0)
			zf.cpuMilli = max(zf.cpuMilli-u.CPUMilli, 0)
		}
		start := len(nics)
		for _, nic := range z.NICs {
			if !nic.Free && freed[nic.ID] == 0 {
				continue
			}
			n := s.freeUnits(nic, taken[nic.ID], freed[nic.ID])
			for range min(n, maxShare) {
				nics = append(nics, nic.ID)
				leaves = append(leaves, nic.S0)
			}
		}
		zf.nics = nics[start:len(nics):len(nics)]
		zf.leaves = leaves[start:len(leaves):len(leaves)]
		v.zones = append(v.zones, zf)
	}
	s.views[name] = v
	return v
}

// sortedS0s returns the keys of a leaf set, sorted.
func sortedS0s(m map[topology.S0ID]bool) []topology.S0ID {
	out := make([]topology.S0ID, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}
