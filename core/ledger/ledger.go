// Package ledger is the scheduler's only record of RDMA NIC reservations: which
// pod holds which NICs (and GPUs / CPUs of which NUMA zones) on which node,
// and whether the node's KCNR already shows the pod.
//
// A KCNR lags reality: a freshly bound pod is not yet in its allocations. The
// ledger keeps every reservation until the pod is gone; Confirm marks those the
// KCNR has caught up with, so callers count only unconfirmed reservations on
// top of the KCNR's own free figures.
//
// The package never imports Volcano. A Ledger is safe for concurrent use:
// readers take a read lock, so predicates may query it from many goroutines.
package ledger

import (
	"errors"
	"fmt"
	"slices"
	"sort"
	"sync"

	"github.com/rdmatopo/rdmatopo/core/topology"
)

// Errors returned by Reserve; test with errors.Is.
var (
	// ErrPodReserved: the pod (by UID) already has a reservation.
	ErrPodReserved = errors.New("pod already has a reservation")
	// ErrNICTaken: a requested NIC is held on that node by as many other
	// pods as it has units (one pod on a NIC of one unit).
	ErrNICTaken = errors.New("NIC already reserved")
	// ErrInvalidReservation: the reservation itself is malformed.
	ErrInvalidReservation = errors.New("invalid reservation")
)

// nicKey identifies a NIC cluster-wide.
type nicKey struct {
	node string
	nic  topology.NICID
}

// Ledger holds reservations. The zero value is not usable; call New.
//
// A NIC serves up to as many pods as it has RDMA units: each pod that
// holds it takes one unit (a pod's request of R units names R distinct
// NICs). The units come from the fabric last given to UseFabric or Adopt
// (topology.NIC.Units, read as 1 when below 1); a NIC that fabric does not
// show, or any NIC before a fabric is given, has one unit.
//
// Invariants (checked by CheckInvariants): every reservation is valid, is
// stored under its UID and is listed in byNode under its node; holder maps
// exactly the NICs of the stored reservations to their UIDs (sorted), so a
// pod holds a NIC once. How many pods a NIC holds is checked by Reserve
// against its units, not as an invariant: a fabric update may shrink a
// NIC under its holders.
type Ledger struct {
	mu     sync.RWMutex
	byUID  map[string]*Reservation
	holder map[nicKey][]string
	byNode map[string]map[string]struct{}
	// fabric gives each NIC's units (UseFabric); nil: one unit per NIC.
	fabric *topology.Fabric
	// changes counts, per node, the writes to its reservations (touch);
	// adopted is, per node, what Adopt last adopted there (adopt.go).
	// Both forget a node with its last reservation (Release).
	changes map[string]uint64
	adopted map[string]adoptMark
}

// touch records a write to a reservation on node. l.mu must be held for
// writing.
func (l *Ledger) touch(node string) {
	if l.changes == nil {
		l.changes = map[string]uint64{}
	}
	l.changes[node]++
}

// New returns an empty ledger.
func New() *Ledger {
	return &Ledger{
		byUID:  map[string]*Reservation{},
		holder: map[nicKey][]string{},
		byNode: map[string]map[string]struct{}{},
	}
}

// UseFabric makes f the fabric whose NIC units Reserve (and Adopt's
// substitutions) count against: a NIC serves up to its Units pods. A nil
// f counts one unit per NIC.
func (l *Ledger) UseFabric(f *topology.Fabric) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.fabric = f
}

// units is how many pods the node's NIC serves: its Units in l.fabric, at
// least 1; 1 for a NIC the fabric does not show. l.mu must be held.
func (l *Ledger) units(node string, nic topology.NICID) int {
	if l.fabric == nil {
		return 1
	}
	if fn, ok := l.fabric.NIC(node, nic); ok && fn.Units > 1 {
		return int(min(fn.Units, 1<<20))
	}
	return 1
}

// Units is how many pods a node's NIC serves in this ledger (UseFabric):
// its Units, at least 1.
func (l *Ledger) Units(node string, nic topology.NICID) int {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.units(node, nic)
}

// full reports whether a NIC of node has no unit left for uid: uid does
// not hold it and as many other pods as it has units do. l.mu must be
// held.
func (l *Ledger) full(node string, nic topology.NICID, uid string) bool {
	hs := l.holder[nicKey{node, nic}]
	if slices.Contains(hs, uid) {
		return false
	}
	return len(hs) >= l.units(node, nic)
}

// addHolder records uid as a holder of the NIC (a fresh slice, sorted).
// l.mu must be held for writing.
func (l *Ledger) addHolder(k nicKey, uid string) {
	hs := l.holder[k]
	i, found := slices.BinarySearch(hs, uid)
	if found {
		return
	}
	l.holder[k] = slices.Insert(slices.Clip(hs), i, uid)
}

// dropHolder removes uid from the NIC's holders. l.mu must be held for
// writing.
func (l *Ledger) dropHolder(k nicKey, uid string) {
	hs := l.holder[k]
	i, found := slices.BinarySearch(hs, uid)
	if !found {
		return
	}
	if len(hs) == 1 {
		delete(l.holder, k)
		return
	}
	l.holder[k] = slices.Delete(slices.Clone(hs), i, i+1)
}

// Reserve records a reservation. It fails, with no effect, if the pod already
// has one (ErrPodReserved), if any of its NICs is held on that node by as
// many pods as it has units (ErrNICTaken; the message names NIC, node and
// a holder) or if the reservation
// is malformed (ErrInvalidReservation: zones and NICs must be sorted, NICs
// lower case and unique).
func (l *Ledger) Reserve(r Reservation) error {
	if err := r.validate(); err != nil {
		return err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if prev, ok := l.byUID[r.UID]; ok {
		return fmt.Errorf("%w: pod %s holds NICs %s on node %s", ErrPodReserved, prev, FormatNICs(prev.NICs()), prev.Node)
	}
	for _, z := range r.Zones {
		for _, n := range z.NICs {
			if l.full(r.Node, n, r.UID) {
				hs := l.holder[nicKey{r.Node, n}]
				return fmt.Errorf("%w: NIC %s on node %s (%d units) is held by pod %s%s, cannot reserve it for pod %s",
					ErrNICTaken, n, r.Node, l.units(r.Node, n), l.byUID[hs[0]], others(len(hs)-1), r)
			}
		}
	}
	l.insert(r.clone())
	return nil
}

// others says how many more pods hold a NIC, for messages.
func others(n int) string {
	if n <= 0 {
		return ""
	}
	return fmt.Sprintf(" and %d other pod(s)", n)
}

// insert stores r (owned by the ledger). l.mu must be held for writing.
func (l *Ledger) insert(r Reservation) {
	l.touch(r.Node)
	l.byUID[r.UID] = &r
	for _, z := range r.Zones {
		for _, n := range z.NICs {
			l.addHolder(nicKey{r.Node, n}, r.UID)
		}
	}
	uids := l.byNode[r.Node]
	if uids == nil {
		uids = map[string]struct{}{}
		l.byNode[r.Node] = uids
	}
	uids[r.UID] = struct{}{}
}

// Release drops the pod's reservation and returns it.
func (l *Ledger) Release(uid string) (Reservation, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	r, ok := l.byUID[uid]
	if !ok {
		return Reservation{}, false
	}
	l.touch(r.Node)
	delete(l.byUID, uid)
	for _, z := range r.Zones {
		for _, n := range z.NICs {
			l.dropHolder(nicKey{r.Node, n}, uid)
		}
	}
	if uids := l.byNode[r.Node]; uids != nil {
		delete(uids, uid)
		if len(uids) == 0 {
			// The node starts afresh (no mark, no count) when a
			// reservation comes back, so nodes gone from the cluster
			// are not kept.
			delete(l.byNode, r.Node)
			delete(l.adopted, r.Node)
			delete(l.changes, r.Node)
		}
	}
	return *r, true
}

// Get returns a copy of the pod's reservation.
func (l *Ledger) Get(uid string) (Reservation, bool) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	r, ok := l.byUID[uid]
	if !ok {
		return Reservation{}, false
	}
	return r.clone(), true
}

// Holders returns the UIDs of the pods holding a node's NIC, sorted (a
// fresh slice; nil when none does).
func (l *Ledger) Holders(node string, nic topology.NICID) []string {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return slices.Clone(l.holder[nicKey{node, nic}])
}

// HolderCount is how many pods hold a node's NIC (each takes one unit).
func (l *Ledger) HolderCount(node string, nic topology.NICID) int {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return len(l.holder[nicKey{node, nic}])
}

// Confirm marks every reservation whose node's KCNR (in f) lists its consumer
// as Confirmed and returns how many became confirmed by this call. A nil
// fabric confirms nothing. Confirmation is never withdrawn: a reservation
// lives until Release.
func (l *Ledger) Confirm(f *topology.Fabric) int {
	if f == nil {
		return 0
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, r := range l.byUID {
		if r.Confirmed {
			continue
		}
		if node, ok := f.Node(r.Node); ok && node.Consumers[r.Consumer()] {
			l.touch(r.Node)
			r.Confirmed = true
			n++
		}
	}
	return n
}

// Unconfirmed returns copies of the node's reservations the KCNR does not
// show yet, sorted by UID.
func (l *Ledger) Unconfirmed(node string) []Reservation {
	return l.onNode(node, true)
}

// OnNode returns copies of every reservation on the node, sorted by UID.
func (l *Ledger) OnNode(node string) []Reservation {
	return l.onNode(node, false)
}

func (l *Ledger) onNode(node string, onlyUnconfirmed bool) []Reservation {
	l.mu.RLock()
	defer l.mu.RUnlock()
	var out []Reservation
	for uid := range l.byNode[node] {
		r := l.byUID[uid]
		if onlyUnconfirmed && r.Confirmed {
			continue
		}
		out = append(out, r.clone())
	}
	sortByUID(out)
	return out
}

// All returns copies of every reservation, sorted by UID.
func (l *Ledger) All() []Reservation {
	l.mu.RLock()
	defer l.mu.RUnlock()
	out := make([]Reservation, 0, len(l.byUID))
	for _, r := range l.byUID {
		out = append(out, r.clone())
	}
	sortByUID(out)
	return out
}

// Each calls fn for every reservation, in no particular order, without
// the copies and sorting of All: it is the per-session walk over a large
// ledger. fn runs outside the ledger's lock (it may call the ledger, and
// sees the reservations as they were when Each was called); the
// reservations share their zone slices with the ledger, so fn must not
// modify them.
func (l *Ledger) Each(fn func(Reservation)) {
	buf := eachBuffers.Get().(*[]Reservation)
	l.mu.RLock()
	rs := (*buf)[:0]
	for _, r := range l.byUID {
		rs = append(rs, *r)
	}
	l.mu.RUnlock()
	for _, r := range rs {
		fn(r)
	}
	// The buffer goes back empty: it must not keep zone slices alive.
	clear(rs)
	*buf = rs[:0]
	eachBuffers.Put(buf)
}

// eachBuffers are Each's copies of the reservations, reused from one walk
// to the next (a walk per session and per caller over every reservation).
var eachBuffers = sync.Pool{New: func() any { return new([]Reservation) }}

func sortByUID(rs []Reservation) {
	sort.Slice(rs, func(i, j int) bool { return rs[i].UID < rs[j].UID })
}

// Len is the number of reservations.
func (l *Ledger) Len() int {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return len(l.byUID)
}

// Clone returns an independent deep copy.
func (l *Ledger) Clone() *Ledger {
	l.mu.RLock()
	defer l.mu.RUnlock()
	out := New()
	out.fabric = l.fabric
	for _, r := range l.byUID {
		out.insert(r.clone())
	}
	return out
}

// CheckInvariants verifies the ledger's internal consistency (see Ledger) and
// returns every violation found, joined.
func (l *Ledger) CheckInvariants() error {
	l.mu.RLock()
	defer l.mu.RUnlock()
	var errs []error
	nics := 0
	for uid, r := range l.byUID {
		if r.UID != uid {
			errs = append(errs, fmt.Errorf("reservation %s stored under UID %q", r, uid))
		}
		if err := r.validate(); err != nil {
			errs = append(errs, err)
		}
		if _, ok := l.byNode[r.Node][uid]; !ok {
			errs = append(errs, fmt.Errorf("reservation %s missing from the index of node %s", r, r.Node))
		}
		for _, z := range r.Zones {
			for _, n := range z.NICs {
				nics++
				if hs := l.holder[nicKey{r.Node, n}]; !slices.Contains(hs, uid) {
					errs = append(errs, fmt.Errorf("NIC %s on node %s of pod %s is indexed as held by %q", n, r.Node, r, hs))
				}
			}
		}
	}
	indexed := 0
	for k, hs := range l.holder {
		indexed += len(hs)
		if len(hs) == 0 || !slices.IsSorted(hs) || len(slices.Compact(slices.Clone(hs))) != len(hs) {
			errs = append(errs, fmt.Errorf("NIC %s on node %s has holders %q, not a sorted set of UIDs", k.nic, k.node, hs))
		}
		for _, uid := range hs {
			r, ok := l.byUID[uid]
			if !ok || r.Node != k.node {
				errs = append(errs, fmt.Errorf("NIC %s on node %s indexed to pod UID %q, which holds no NIC there", k.nic, k.node, uid))
			}
		}
	}
	if nics != indexed {
		errs = append(errs, fmt.Errorf("NIC index has %d entries, reservations hold %d NICs", indexed, nics))
	}
	count := 0
	for node, uids := range l.byNode {
		if len(uids) == 0 {
			errs = append(errs, fmt.Errorf("node %s has an empty index entry", node))
		}
		for uid := range uids {
			count++
			if r, ok := l.byUID[uid]; !ok || r.Node != node {
				errs = append(errs, fmt.Errorf("node %s index lists pod UID %q, which is not reserved there", node, uid))
			}
		}
	}
	if count != len(l.byUID) {
		errs = append(errs, fmt.Errorf("node index lists %d pods, ledger has %d", count, len(l.byUID)))
	}
	sort.Slice(errs, func(i, j int) bool { return errs[i].Error() < errs[j].Error() })
	return errors.Join(errs...)
}
