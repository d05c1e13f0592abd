package preemption

import (
	"github.com/rdmatopo/rdmatopo/core/ledger"
	"github.com/rdmatopo/rdmatopo/core/topology"
)

// ReservedPod is a pod's NIC reservation in the ledger and the leaves of
// its NICs: what the victim search and the choice of a claimed room count
// as in a scope.
type ReservedPod struct {
	Res    ledger.Reservation
	Leaves []topology.S0ID
}

// Reserved returns the reservations with the leaves of their NICs in f, in
// the order given.
func Reserved(f *topology.Fabric, rs []ledger.Reservation) []ReservedPod {
	out := make([]ReservedPod, 0, len(rs))
	for _, r := range rs {
		out = append(out, ReservedPod{Res: r, Leaves: f.NICLeaves(r.Node, r.NICs())})
	}
	return out
}

// Cost orders sets of evictions: fewer pods, then a lower sum of
// priorities, then younger pods (a larger sum of start times), then names.
type Cost struct {
	// Pods is how many pods are evicted; Prio the sum of their priorities.
	Pods int
	Prio int64
	// Start is the sum of their start times (Unix seconds).
	Start int64
	// Names are the evicted pods' names, sorted and joined.
	Names string
}

// Less reports whether a is cheaper than b.
func (a Cost) Less(b Cost) bool {
	if a.Pods != b.Pods {
		return a.Pods < b.Pods
	}
	if a.Prio != b.Prio {
		return a.Prio < b.Prio
	}
	if a.Start != b.Start {
		return a.Start > b.Start
	}
	return a.Names < b.Names
}
