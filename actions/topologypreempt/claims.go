package topologypreempt

import (
	"sort"

	"volcano.sh/volcano/pkg/scheduler/api"

	"github.com/rdmatopo/rdmatopo/framework/placement"
	"github.com/rdmatopo/rdmatopo/plugins/rdmatopology"
)

// roomChecks bounds the rooms tried (one planner call each) when choosing
// the room a waiting gang claims.
const roomChecks = 8

// room chooses the room a hard gang that no allowed evictions place claims:
// among the scopes of its highest tier (nodes, S0s or S1s), the one that
// holds the fewest pods it may not evict (those it must wait out) and
// where it would fit once every pod there is gone. Rooms are tried fewest blockers first, at most
// roomChecks of them; nil when the gang is soft, may span the cluster, or
// fits none of the rooms tried even empty (it waits for nothing a claim
// could keep).
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
	resv := r.topo.Reservations()
	blockers := map[string]int{}
	for _, res := range resv {
		if !evictable[res.UID] {
			blockers[res.Node]++
		}
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
		for node := range sc.nodes {
			n += blockers[node]
		}
		rooms = append(rooms, ranked{sc: sc, blocked: n})
	}
	// Stable: equal rooms keep the scopes' order (tightest first, by id).
	sort.SliceStable(rooms, func(i, j int) bool { return rooms[i].blocked < rooms[j].blocked })
	// Rooms older gangs claim may be claimed too: this gang waits there
	// behind them.
	g.Exclude, g.ExcludeS0s = map[string]bool{}, nil
	for i, rk := range rooms {
		if i == roomChecks {
			break
		}
		st := r.topo.State.Clone()
		for _, res := range resv {
			if rk.sc.nodes[res.Node] {
				st.Release(res.UID, placement.Assignment{PodUID: res.UID, Node: res.Node, Zones: res.Zones})
			}
		}
		try := g
		try.Allowed = r.filter.allowed(rk.sc.nodes)
		if plan, fail := st.Plan(try); fail != nil || plan == nil {
			continue
		}
		return &rdmatopology.Claim{Job: job.UID, Name: job.Namespace + "/" + job.Name, Priority: job.Priority,
			Created: job.CreationTimestamp, Room: rk.sc.name, S0s: rk.sc.leaves, Nodes: rk.sc.nodes}
	}
	return nil
}
