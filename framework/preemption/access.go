package preemption

import (
	"github.com/rdmatopo/rdmatopo/framework/ledger"
	"github.com/rdmatopo/rdmatopo/framework/topology"
)

// Access is what the preempting actions read and record in one session:
// the fabric the session plans on, the ledger's NIC reservations, and the
// runtime's holds and claims. The scheduler plugin that owns them hands it
// out; the fabric and the ledger are read-only through it.
type Access struct {
	fabric *topology.Fabric
	ledger *ledger.Ledger
	store  *Store
}

// NewAccess returns the access to store, with the reservations of l and the
// fabric f they are read on.
func NewAccess(f *topology.Fabric, l *ledger.Ledger, store *Store) *Access {
	return &Access{fabric: f, ledger: l, store: store}
}

// Fabric is the fabric snapshot the session plans on (read-only).
func (a *Access) Fabric() *topology.Fabric { return a.fabric }

// Reserved returns every reservation in the ledger, sorted by pod UID,
// with the leaves of its NICs in the session's fabric.
func (a *Access) Reserved() []ReservedPod { return Reserved(a.fabric, a.ledger.All()) }

// Claim records c, replacing the job's claim if it had one. It applies at
// once (later gangs of this session) and in the next sessions, until
// RetainClaims drops it.
func (a *Access) Claim(c *Claim) { a.store.Claims.Put(c.Job, c) }

// RetainClaims drops every claim whose job keep does not name: the gangs
// the action found still waiting in this session.
func (a *Access) RetainClaims(keep func(job string) bool) {
	a.store.Claims.Retain(func(job string, _ *Claim) bool { return keep(job) })
}

// HasHold reports whether a hold is recorded for the job (applied in this
// session or recorded in it).
func (a *Access) HasHold(job string) bool { return a.store.Holds.Has(job) }
