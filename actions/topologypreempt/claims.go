package topologypreempt

import (
	"slices"
	"sort"

	"volcano.sh/volcano/pkg/scheduler/api"

	"github.com/rdmatopo/rdmatopo/core/ledger"
	"github.com/rdmatopo/rdmatopo/core/placement"
	"github.com/rdmatopo/rdmatopo/core/preemption"
	"github.com/rdmatopo/rdmatopo/core/topology"
)

// roomChecks bounds the rooms tried (one planner call each) when choosing
// the room a waiting gang claims.
const roomChecks = 8

// room chooses the room a hard gang that no allowed evictions place claims:
// among the scopes of its highest tier (nodes, S0s or S1s), the one that
// holds the fewest pods it may not evict (those it must wait out) and that
// would hold it once every pod there is gone. A pod is in a node scope when
// it is on the node, in a leaf or S1 scope when its NICs hang off one of
// the scope's leaves; the gang is planned on the scope's nodes and leaves
// only. Rooms are tried fewest blockers first, at most roomChecks of them;
// nil when the gang is soft, may span the cluster, or fits none of the
// rooms tried even empty (it waits for nothing a claim could keep).
func (r *run) room(job *api.JobInfo, g placement.Gang, c placement.Contract, cands map[api.JobID]*victimJob, rdma []*api.TaskInfo) *preemption.Claim {
	if c.Mode != placement.ModeHard || c.HighestTier == placement.TierCluster {
		return nil
	}
	evictable := map[string]bool{}
	for _, vj := range cands {
		for uid := range vj.podOK {
			evictable[string(uid)] = true
		}
	}
	f := r.topo.Preemption().Fabric()
	for _, rk := range r.roomsToTry(c, evictable) {
		// Rooms older gangs claim may be claimed too: this gang waits
		// there behind them.
		try := g
		try.Exclude, try.ExcludeS0s = nil, nil
		try.Allowed = r.fit.Filter(g.Pods, rk.sc.nodes)
		try.Admit = r.fit.Admit(rdma, r.tasksOf(rk.pods))
		// Planned on the room's leaves only (a node room's: those its NICs
		// hang off), so the planner does not visit the whole fabric.
		try = onLeaves(f, try, roomLeaves(f, rk.sc))
		if plan, fail := r.topo.Plan(try, append([]ledger.Reservation{}, rk.pods...)); fail != nil || plan == nil {
			continue
		}
		return &preemption.Claim{Job: string(job.UID), Name: job.Namespace + "/" + job.Name, Priority: job.Priority,
			Created: job.CreationTimestamp, Room: rk.sc.name, S0s: rk.sc.leaves, Nodes: rk.sc.nodes}
	}
	return nil
}

// roomIndex finds the rooms of the contract's tier a reserved pod is in.
type roomIndex struct {
	rooms  []*room
	byNode map[string]*room
	byLeaf map[topology.S0ID][]*room
	seen   []*room
}

// newRoomIndex indexes the rooms of the contract's highest tier by node
// (node rooms) and by leaf.
func (r *run) newRoomIndex(c placement.Contract) *roomIndex {
	x := &roomIndex{byNode: map[string]*room{}, byLeaf: map[topology.S0ID][]*room{}}
	for _, sc := range r.scopes(c) {
		if sc.tier != c.HighestTier {
			continue
		}
		rm := &room{sc: sc}
		x.rooms = append(x.rooms, rm)
		if sc.leaves == nil {
			for n := range sc.nodes {
				x.byNode[n] = rm
			}
			continue
		}
		for id := range sc.leaves {
			x.byLeaf[id] = append(x.byLeaf[id], rm)
		}
	}
	return x
}

// of returns the rooms a pod is in, each once: the room of its node, or
// those of its NICs' leaves (valid until the next call).
func (x *roomIndex) of(h preemption.ReservedPod) []*room {
	x.seen = x.seen[:0]
	if rm := x.byNode[h.Res.Node]; rm != nil {
		x.seen = append(x.seen, rm)
	}
	if len(x.byLeaf) > 0 {
		for _, id := range h.Leaves {
			for _, rm := range x.byLeaf[id] {
				if !slices.Contains(x.seen, rm) {
					x.seen = append(x.seen, rm)
				}
			}
		}
	}
	return x.seen
}

// roomsToTry returns the rooms to try, fewest pods that may not be evicted
// first (at most roomChecks), each with the reserved pods in it. The pods
// are counted first; only the rooms tried collect them.
func (r *run) roomsToTry(c placement.Contract, evictable map[string]bool) []*room {
	x := r.newRoomIndex(c)
	reserved := r.reservedPods()
	for _, h := range reserved {
		for _, rm := range x.of(h) {
			if !evictable[h.Res.UID] {
				rm.blocked++
			}
		}
	}
	rooms := x.rooms
	// Stable: equal rooms keep the scopes' order (by id).
	sort.SliceStable(rooms, func(i, j int) bool { return rooms[i].blocked < rooms[j].blocked })
	rooms = rooms[:min(len(rooms), roomChecks)]
	tried := make(map[*room]bool, len(rooms))
	for _, rm := range rooms {
		tried[rm] = true
	}
	for _, h := range reserved {
		for _, rm := range x.of(h) {
			if tried[rm] {
				rm.pods = append(rm.pods, h.Res)
			}
		}
	}
	return rooms
}

// reservedPods returns the ledger's reservations with their leaves, read
// once per run until apply evicts or pipelines.
func (r *run) reservedPods() []preemption.ReservedPod {
	if r.reserved == nil {
		r.reserved = r.topo.Preemption().Reserved()
		r.reservedByUID = make(map[string]int, len(r.reserved))
		for i, rp := range r.reserved {
			r.reservedByUID[rp.Res.UID] = i
		}
	}
	return r.reserved
}

// reservationOf returns the pod's reservation in the ledger, with the
// leaves of its NICs (reservedPods).
func (r *run) reservationOf(uid api.TaskID) (preemption.ReservedPod, bool) {
	pods := r.reservedPods()
	i, ok := r.reservedByUID[string(uid)]
	if !ok {
		return preemption.ReservedPod{}, false
	}
	return pods[i], true
}

// onLeaves returns g kept off every leaf outside leaves, besides those it
// already excludes; g itself when leaves is empty.
func onLeaves(f *topology.Fabric, g placement.Gang, leaves map[topology.S0ID]bool) placement.Gang {
	if len(leaves) == 0 {
		return g
	}
	ex := make(map[topology.S0ID]bool, len(g.ExcludeS0s))
	for id := range g.ExcludeS0s {
		ex[id] = true
	}
	for _, id := range f.LeafIDs() {
		if !leaves[id] {
			ex[id] = true
		}
	}
	g.ExcludeS0s = ex
	return g
}

// roomLeaves returns the leaves of a room or scope: its own, for a node
// those of the node's NICs, none for the cluster.
func roomLeaves(f *topology.Fabric, sc scope) map[topology.S0ID]bool {
	if sc.leaves != nil {
		return sc.leaves
	}
	out := map[topology.S0ID]bool{}
	for name := range sc.nodes {
		n, ok := f.Node(name)
		if !ok {
			continue
		}
		for _, z := range n.Zones {
			for _, nic := range z.NICs {
				out[nic.S0] = true
			}
		}
	}
	return out
}

// room is a scope a waiting gang may claim, with the pods in it and how
// many of them the gang may not evict.
type room struct {
	sc      scope
	pods    []ledger.Reservation
	blocked int
}

// tasksOf returns the session's tasks of the given reservations (those
// still in the session), found on their nodes.
func (r *run) tasksOf(pods []ledger.Reservation) []*api.TaskInfo {
	var out []*api.TaskInfo
	for _, res := range pods {
		ni := r.ssn.Nodes[res.Node]
		if ni == nil {
			continue
		}
		for _, t := range ni.Tasks {
			if string(t.UID) == res.UID {
				out = append(out, t)
				break
			}
		}
	}
	return out
}
