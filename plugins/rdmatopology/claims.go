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
// restart forgets claims, and the first session names them again. The
// claims are package framework/preemption's; this file tells which apply to
// a job of the session.

package rdmatopology

import (
	"sort"

	"volcano.sh/volcano/pkg/scheduler/api"

	"github.com/rdmatopo/rdmatopo/framework/preemption"
)

// Preemption is the session's access to the runtime's holds and claims,
// the ledger's reservations and the fabric the session plans on: what the
// preempting actions read and record.
func (s *Session) Preemption() *preemption.Access {
	return preemption.NewAccess(s.fabric, s.rt.Ledger, s.rt.preemption)
}

// claims returns the recorded claims, by job name.
func (s *Session) claims() []*preemption.Claim {
	out := s.rt.preemption.Claims.Values()
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// ClaimedAgainst returns the claims that keep the job out of their rooms:
// those of older pending gangs of its priority (preemption.KeepOff keeps a
// gang out of them, preemption.ClaimedNodes names their nodes). A job with pods already
// placed is kept out of nothing: its pods go back next to the others.
func (s *Session) ClaimedAgainst(job *api.JobInfo) []*preemption.Claim {
	if job == nil || job.ReadyTaskNum() > 0 {
		return nil
	}
	var out []*preemption.Claim
	for _, c := range s.claims() {
		if s.claimApplies(c, job) {
			out = append(out, c)
		}
	}
	return out
}

// claimApplies reports whether claim c keeps job out of its room: the
// claiming gang is still pending in this session (not placed by an earlier
// action), of the job's priority and ahead of it in age.
func (s *Session) claimApplies(c *preemption.Claim, job *api.JobInfo) bool {
	if api.JobID(c.Job) == job.UID || c.Priority != job.Priority {
		return false
	}
	claimer := s.ssn.Jobs[api.JobID(c.Job)]
	if claimer == nil || claimer.Priority != c.Priority || claimer.ReadyTaskNum() >= claimer.MinAvailable {
		return false
	}
	return preemption.Older(c.Created, c.Job, job.CreationTimestamp, string(job.UID))
}
