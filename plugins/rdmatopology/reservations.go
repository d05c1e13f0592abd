package rdmatopology

import (
	"volcano.sh/volcano/pkg/scheduler/api"

	"github.com/rdmatopo/rdmatopo/framework/ledger"
	"github.com/rdmatopo/rdmatopo/framework/placement"
)

// The one mutation path of NIC reservations in a session.
//
// The ledger is the record; the session keeps two views derived from it:
// the free view (State) the planner and predicates read, and the by-job
// index (byJob, with the held cache) the planner's Held and the PodGroup
// placement read. Both views are built from the ledger when the session
// opens, after reconcile has released, restored and adopted reservations
// there (so adoption needs no mirror of its own); within the session every
// change goes through reserve and release, which update the ledger and both
// views together.

// reserve records r in the ledger and mirrors it into the session's views.
// On error (a NIC held, a malformed reservation) nothing changes.
func (s *Session) reserve(r ledger.Reservation) error {
	if err := s.rt.Ledger.Reserve(r); err != nil {
		return err
	}
	s.state.Apply(r.UID, placement.AssignmentOf(r))
	s.mu.Lock()
	s.indexLocked(r)
	s.mu.Unlock()
	return nil
}

// release drops the pod's reservation from the ledger and the session's
// views, and returns it.
func (s *Session) release(uid string, job api.JobID) (ledger.Reservation, bool) {
	s.mu.Lock()
	delete(s.byJob[job], uid)
	delete(s.held, job)
	s.mu.Unlock()
	r, held := s.rt.Ledger.Release(uid)
	if held {
		s.state.Unapply(r.UID, placement.AssignmentOf(r))
		if id := api.JobID(r.Job); id != job {
			s.mu.Lock()
			delete(s.byJob[id], uid)
			delete(s.held, id)
			s.mu.Unlock()
		}
	}
	return r, held
}
