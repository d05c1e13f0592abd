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
// its gang is pending and the action renews it each session (or, not
// renewed, for preemption.ClaimGrace). The claims outlive a restart or a
// failover: the scheduler keeps them in a ConfigMap (claimstore.go). The
// claims are package core/preemption's (which apply to a job:
// preemption.Against); the runtime keeps them and the session hands them
// out.

package rdmatopology

import (
	"github.com/rdmatopo/rdmatopo/core/preemption"
)

// WithClaims starts the runtime with claims an earlier runtime kept, as a
// restarted scheduler reads them back (the simulator's restart).
func WithClaims(claims []*preemption.Claim) Option {
	return func(rt *Runtime) { rt.startClaims = claims }
}

// Claims returns the runtime's claims, by job UID.
func (rt *Runtime) Claims() []*preemption.Claim {
	return rt.preemption.Claims.Values()
}

// Preemption is the session's access to the runtime's holds and claims,
// what the holds applied in the session keep on each node, the ledger's
// reservations and the fabric the session plans on: what the topology
// actions read and record of preemption.
func (s *SessionState) Preemption() *preemption.Access {
	return preemption.NewAccess(s.fabric, s.rt.Ledger, s.rt.preemption, s.holds)
}
