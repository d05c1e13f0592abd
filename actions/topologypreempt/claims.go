package topologypreempt

import (
	"sort"

	"volcano.sh/volcano/pkg/scheduler/api"

	"github.com/rdmatopo/rdmatopo/framework/ledger"
	"github.com/rdmatopo/rdmatopo/framework/placement"
	"github.com/rdmatopo/rdmatopo/framework/topology"
	"github.com/rdmatopo/rdmatopo/plugins/rdmatopology"
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
func (r *run) room(job *api.JobInfo, g placement.Gang, c placement.Contract, cands map[api.JobID]*victimJob) *rdmatopology.Claim {
	if c.Mode != placement.ModeHard || c.HighestTier == placement.TierCluster {
		return nil
	}
	evictable := map[string]bool{}
	for _, vj := range cands {
		for uid := range vj.podOK {
			evictable[string(uid)] = true
		}
	}
	f := r.topo.Fabric
	type held struct {
		res    ledger.Reservation
		leaves []topology.S0ID
	}
	var pods []held
	for _, res := range r.topo.Reservations() {
		pods = append(pods, held{res: res, leaves: f.NICLeaves(res.Node, res.NICs())})
	}
	in := func(sc scope, h held) bool {
		if sc.leaves == nil {
			return sc.nodes[h.res.Node]
		}
		for _, id := range h.leaves {
			if sc.leaves[id] {
				return true
			}
		}
		return false
	}
	type ranked struct {
		sc      scope
		blocked int
	}
	var rooms []ranked
	for _, sc := range r.scopes(c) {
		if sc.tier != c.HighestTier {
			continue
		}
		n := 0
		for _, h := range pods {
			if !evictable[h.res.UID] && in(sc, h) {
				n++
			}
		}
		rooms = append(rooms, ranked{sc: sc, blocked: n})
	}
	// Stable: equal rooms keep the scopes' order (by id).
	sort.SliceStable(rooms, func(i, j int) bool { return rooms[i].blocked < rooms[j].blocked })
	for i, rk := range rooms {
		if i == roomChecks {
			break
		}
		st := r.topo.State.Clone()
		for _, h := range pods {
			if in(rk.sc, h) {
				st.Release(h.res.UID, placement.Assignment{PodUID: h.res.UID, Node: h.res.Node, Zones: h.res.Zones})
			}
		}
		// Rooms older gangs claim may be claimed too: this gang waits
		// there behind them.
		try := g
		try.Exclude, try.ExcludeS0s = nil, nil
		try.Allowed = r.filter.allowed(rk.sc.nodes)
		if rk.sc.leaves != nil {
			try.ExcludeS0s = map[topology.S0ID]bool{}
			for _, id := range f.LeafIDs() {
				if !rk.sc.leaves[id] {
					try.ExcludeS0s[id] = true
				}
			}
		}
		if plan, fail := st.Plan(try); fail != nil || plan == nil {
			continue
		}
		return &rdmatopology.Claim{Job: job.UID, Name: job.Namespace + "/" + job.Name, Priority: job.Priority,
			Created: job.CreationTimestamp, Room: rk.sc.name, S0s: rk.sc.leaves, Nodes: rk.sc.nodes}
	}
	return nil
}
