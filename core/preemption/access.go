package preemption

import (
	"sort"

	"github.com/rdmatopo/rdmatopo/core/ledger"
	"github.com/rdmatopo/rdmatopo/core/topology"
)

// Access is what the topology actions read and record of preemption in one
// session: the fabric the session plans on, the ledger's NIC reservations,
// the runtime's holds and claims, and what the holds applied in the
// session keep on each node. The scheduler plugin that owns them hands it
// out; the fabric, the ledger and the session's view are read-only
// through it.
type Access struct {
	fabric *topology.Fabric
	ledger *ledger.Ledger
	store  *Store
	view   *View
}

// NewAccess returns the access to store, with the reservations of l, the
// fabric f they are read on and the session's view v of the holds (nil:
// no hold is applied).
func NewAccess(f *topology.Fabric, l *ledger.Ledger, store *Store, v *View) *Access {
	return &Access{fabric: f, ledger: l, store: store, view: v}
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

// RetainClaims drops every claim keep returns false for.
func (a *Access) RetainClaims(keep func(c *Claim) bool) {
	a.store.Claims.Retain(func(_ string, c *Claim) bool { return keep(c) })
}

// HasHold reports whether a hold is recorded for the job (applied in this
// session or recorded in it).
func (a *Access) HasHold(job string) bool { return a.store.Holds.Has(job) }

// Claims returns the recorded claims, by gang name.
func (a *Access) Claims() []*Claim {
	out := a.store.Claims.Values()
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// KeptOn returns the tasks the holds applied in the session, of gangs other
// than job, keep on node, and the first of those gangs by name ("" when
// none).
func (a *Access) KeptOn(job, node string) ([]HoldTask, string) {
	if a.view == nil {
		return nil, ""
	}
	return a.view.KeptOn(job, node)
}
