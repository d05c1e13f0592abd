// Claims: the room a waiting hard gang is kept, so that younger gangs of its
// priority do not take it first.
//
// A hard gang that cannot be placed even after every eviction it may make
// waits for pods it may not evict (of its priority or higher) to finish.
// Without a claim, every gang of its priority that arrives later and is
// smaller fits into the room those pods free before it does, and a large
// gang waits as long as smaller ones keep arriving. The topology-preempt
// action therefore names, for each such gang, the room (a node, an S0's
// nodes or an S1's nodes, as its highest tier says) it would fit soonest,
// and the runtime keeps it from one session to the next. Jobs of the same
// priority created after the claiming gang are then not placed on the
// room's nodes by topology-allocate or topology-preempt; lower-priority
// jobs still are (the claiming gang may evict them), and so are jobs of
// higher priority and jobs with pods already running. A claim lasts while
// its gang is pending and the action renews it each session; a scheduler
// restart forgets claims, and the first session names them again.

package rdmatopology

import (
	"fmt"
	"sort"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"volcano.sh/volcano/pkg/scheduler/api"

	"github.com/rdmatopo/rdmatopo/framework/placement"
	"github.com/rdmatopo/rdmatopo/framework/topology"
)

// Claim is the room a waiting hard gang is kept.
type Claim struct {
	Job api.JobID
	// Name is the job's "namespace/name".
	Name string
	// Priority and Created are the job's, when it claimed: the claim keeps
	// out jobs of that priority created later.
	Priority int32
	Created  metav1.Time
	// Room names the room ("s1 <id>", "s0 <id>", "node <name>"). S0s are
	// its leaves (none for a node room): RDMA gangs kept out of it do not
	// use their NICs. Nodes are its nodes: a node room keeps RDMA gangs off
	// the node, and every room keeps pods without RDMA off its nodes.
	Room  string
	S0s   map[topology.S0ID]bool
	Nodes map[string]bool
}

// Claim records c, replacing the job's claim if it had one. It applies at
// once (later gangs of this session) and in the next sessions, until
// RetainClaims drops it.
func (s *Session) Claim(c *Claim) {
	s.rt.claims.put(c.Job, c)
}

// RetainClaims drops every claim whose job is not in keep: the gangs the
// action found still waiting in this session.
func (s *Session) RetainClaims(keep map[api.JobID]bool) {
	s.rt.claims.retain(func(job api.JobID, _ *Claim) bool { return keep[job] })
}

// Claims returns the recorded claims, by job name.
func (s *Session) Claims() []*Claim {
	out := s.rt.claims.values()
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// ClaimedAgainst returns the claims that keep the job out of their rooms:
// those of older pending gangs of its priority. A job with pods already
// placed is kept out of nothing: its pods go back next to the others.
func (s *Session) ClaimedAgainst(job *api.JobInfo) []*Claim {
	if job == nil || job.ReadyTaskNum() > 0 {
		return nil
	}
	var out []*Claim
	for _, c := range s.Claims() {
		if s.claimApplies(c, job) {
			out = append(out, c)
		}
	}
	return out
}

// claimApplies reports whether claim c keeps job out of its room: the
// claiming gang is still pending in this session (not placed by an earlier
// action), of the job's priority and ahead of it in age.
func (s *Session) claimApplies(c *Claim, job *api.JobInfo) bool {
	if c.Job == job.UID || c.Priority != job.Priority {
		return false
	}
	claimer := s.ssn.Jobs[c.Job]
	if claimer == nil || claimer.Priority != c.Priority || claimer.ReadyTaskNum() >= claimer.MinAvailable {
		return false
	}
	return olderJob(c.Created, c.Job, job.CreationTimestamp, job.UID)
}

// olderJob reports whether job a (created at ca) is ahead of job b in
// age: created earlier, or at the same time with the smaller UID.
func olderJob(ca metav1.Time, a api.JobID, cb metav1.Time, b api.JobID) bool {
	if !ca.Equal(&cb) {
		return ca.Before(&cb)
	}
	return a < b
}

// KeepOffClaims keeps an RDMA gang of the job out of the rooms claimed
// against it (ClaimedAgainst): the rooms' leaves go to its excluded S0s,
// node rooms to its excluded nodes. It returns the first claiming gang by
// name and how many claims apply ("", 0 when none).
func (s *Session) KeepOffClaims(job *api.JobInfo, g *placement.Gang) (string, int) {
	claims := s.ClaimedAgainst(job)
	for _, c := range claims {
		if len(c.S0s) == 0 {
			if g.Exclude == nil {
				g.Exclude = map[string]bool{}
			}
			for n := range c.Nodes {
				g.Exclude[n] = true
			}
			continue
		}
		if g.ExcludeS0s == nil {
			g.ExcludeS0s = map[topology.S0ID]bool{}
		}
		for id := range c.S0s {
			g.ExcludeS0s[id] = true
		}
	}
	if len(claims) == 0 {
		return "", 0
	}
	return claims[0].Name, len(claims)
}

// ClaimedNodes returns the nodes of the rooms claimed against the job, each
// with the claiming gang's name (nil when none): where its pods without
// RDMA may not go.
func (s *Session) ClaimedNodes(job *api.JobInfo) map[string]string {
	var out map[string]string
	for _, c := range s.ClaimedAgainst(job) {
		if out == nil {
			out = map[string]string{}
		}
		for n := range c.Nodes {
			if _, ok := out[n]; !ok {
				out[n] = c.Name
			}
		}
	}
	return out
}

// ClaimedFailure returns f with a note that n rooms are kept for older
// waiting gangs of the same priority, by first, so the PodGroup says why
// its gang waits behind them.
func ClaimedFailure(f *placement.Failure, by string, n int) *placement.Failure {
	if f == nil || by == "" {
		return f
	}
	out := *f
	rooms := "a room"
	if n > 1 {
		rooms = fmt.Sprintf("%d rooms", n)
	}
	out.Message = fmt.Sprintf("%s (%s kept for %s, an older waiting gang of the same priority)", f.Message, rooms, by)
	return &out
}
