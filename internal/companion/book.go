package companion

import (
	"slices"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/rdmatopo/rdmatopo/core/ledger"
	"github.com/rdmatopo/rdmatopo/core/topology"
)

// The book: which NICs the owner handed out, in its memory.
//
// Only the replica that owns the book (owner.go) chooses NICs, and it
// chooses a node's NICs one bind at a time under that node's lock, against
// the node's bound pods as its informer shows them (their rdmatopo.io/nics
// annotations), the KCNR's allocations, and its bookings: the binds it
// answered that its informer may not show yet. No bind waits for a write:
// kube-apiserver merges the Binding's annotations into the pod atomically
// with the bind, so the pod itself is the durable record of each choice.
//
// A booking stays until the informer shows the pod bound on the node with
// its NIC annotation (then that annotation counts it), the pod bound
// elsewhere (that bind failed), the pod gone for longer than Grace, or TTL
// in any case (a bind the API server refused after admission). A new owner
// also seeds the book with the bound pods of a fresh quorum list (Seed):
// binds its predecessor answered that its own informer may not show yet;
// they stay until the informer shows them, by the same rules.

// Booking is the NICs the owner handed one pod at bind.
type Booking struct {
	Namespace string
	Name      string
	// Job is the pod's gang key ("" when it has none).
	Job string
	// Zones are the NUMA zones and NICs handed out (GPU and CPU counts
	// are the planner's split of the pod's requests).
	Zones []ledger.ZoneUse
	// At is when the booking was made.
	At time.Time
}

// NICs lists the booking's NICs, sorted.
func (x Booking) NICs() []topology.NICID {
	return ledger.Reservation{Zones: x.Zones}.NICs()
}

// Bookings is a node's bookings by pod UID.
type Bookings map[string]Booking

// seededPod is a bound pod a quorum list showed when this replica became
// the owner.
type seededPod struct {
	pod *corev1.Pod
	at  time.Time
}

// nodeBook is one node's part of the book.
type nodeBook struct {
	// choosing serializes the binds on the node: held from reading the
	// node's state to recording the choice.
	choosing sync.Mutex
	bookings Bookings
	seeded   map[string]seededPod
}

// PodState is what the informer says of a booked pod.
type PodState struct {
	// Known is false when the informer does not hold the pod (deleted, or
	// not seen yet).
	Known bool
	// Node is the pod's spec.nodeName.
	Node string
	// NICs is the pod's AnnotationNICs, parsed and sorted (none when absent).
	NICs []topology.NICID
}

// View is what the book reads of the informers.
type View interface {
	// PodsOnNode lists the pods bound to a node that have not finished.
	PodsOnNode(node string) []*corev1.Pod
	// PodState says where a pod is.
	PodState(uid string) PodState
}

// Book is the owner's in-memory book. The zero value is an empty book
// with no grace (use Grace and TTL).
type Book struct {
	// Grace is how long a booking of a pod the informer does not hold is
	// kept: longer than the informer's lag.
	Grace time.Duration
	// TTL is how long a booking is kept at most.
	TTL time.Duration
	// Now is the clock (time.Now when nil).
	Now func() time.Time

	// mu guards nodes and byUID, and every nodeBook's bookings and seeded
	// maps; it is held only for short reads and writes, never while
	// waiting for a node's choosing lock.
	mu    sync.Mutex
	nodes map[string]*nodeBook
	// byUID is the node of each booking.
	byUID map[string]string
}

func (b *Book) now() time.Time {
	if b.Now != nil {
		return b.Now()
	}
	return time.Now()
}

// node returns a node's part of the book, made when missing. b.mu held.
func (b *Book) node(name string) *nodeBook {
	if b.nodes == nil {
		b.nodes = map[string]*nodeBook{}
		b.byUID = map[string]string{}
	}
	nb := b.nodes[name]
	if nb == nil {
		nb = &nodeBook{bookings: Bookings{}, seeded: map[string]seededPod{}}
		b.nodes[name] = nb
	}
	return nb
}

// Reset empties the book (this replica stopped or started owning it).
func (b *Book) Reset() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.nodes, b.byUID = nil, nil
}

// Seed adds bound pods of a quorum list: each pod bound to a node, with a
// NIC annotation, is counted on its node until the informer shows it.
func (b *Book) Seed(pods []*corev1.Pod) int {
	now := b.now()
	b.mu.Lock()
	defer b.mu.Unlock()
	n := 0
	for _, p := range pods {
		if p.Spec.NodeName == "" || p.Annotations[ledger.AnnotationNICs] == "" || finished(p) {
			continue
		}
		b.node(p.Spec.NodeName).seeded[string(p.UID)] = seededPod{pod: p, at: now}
		n++
	}
	return n
}

func finished(p *corev1.Pod) bool {
	return p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed
}

// Booked returns a pod's booking and its node, if the book holds one.
func (b *Book) Booked(uid string) (string, Booking, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	node, ok := b.byUID[uid]
	if !ok {
		return "", Booking{}, false
	}
	x, ok := b.nodes[node].bookings[uid]
	return node, x, ok
}

// Forget drops a pod's booking: its answer was not sent, or refused the
// bind.
func (b *Book) Forget(uid string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if node, ok := b.byUID[uid]; ok {
		delete(b.nodes[node].bookings, uid)
		delete(b.byUID, uid)
	}
}

// Len counts the bookings and seeded pods.
func (b *Book) Len() (bookings, seeded int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, nb := range b.nodes {
		bookings += len(nb.bookings)
		seeded += len(nb.seeded)
	}
	return bookings, seeded
}

// Reserve books NICs for pod uid on node. Under the node's lock it reads
// the node's pods from the view, adds the seeded pods the view does not
// show, drops the bookings no longer needed, and calls choose with the
// pods (the pod itself left out) and the bookings; choose returns the
// booking to make, or nil for none. A booking the pod already has (the
// same bind retried) is returned as is, without calling choose.
func (b *Book) Reserve(node, uid string, view View, choose func(onNode []*corev1.Pod, bk Bookings) (*Booking, error)) (*Booking, error) {
	b.mu.Lock()
	nb := b.node(node)
	b.mu.Unlock()
	nb.choosing.Lock()
	defer nb.choosing.Unlock()

	b.mu.Lock()
	x, ok := nb.bookings[uid]
	b.mu.Unlock()
	if ok {
		return &x, nil
	}
	// The view is read after the lock is taken: a booking is dropped only
	// for what this same read shows, so no bind is missed between them.
	pods := view.PodsOnNode(node)
	shown := map[string]*corev1.Pod{}
	for _, p := range pods {
		shown[string(p.UID)] = p
	}
	now := b.now()
	b.mu.Lock()
	for u, s := range nb.seeded {
		switch {
		case shown[u] != nil:
			delete(nb.seeded, u)
		case b.expired(node, s.at, now, view.PodState(u)):
			delete(nb.seeded, u)
		default:
			pods = append(pods, s.pod)
		}
	}
	for u, x := range nb.bookings {
		if p := shown[u]; p != nil && p.Annotations[ledger.AnnotationNICs] != "" || b.expired(node, x.At, now, view.PodState(u)) {
			delete(nb.bookings, u)
			delete(b.byUID, u)
		}
	}
	bk := make(Bookings, len(nb.bookings))
	for u, x := range nb.bookings {
		bk[u] = x
	}
	b.mu.Unlock()

	others := slices.DeleteFunc(pods, func(p *corev1.Pod) bool { return string(p.UID) == uid })
	got, err := choose(others, bk)
	if err != nil || got == nil {
		return nil, err
	}
	got.At = now
	b.mu.Lock()
	nb.bookings[uid] = *got
	b.byUID[uid] = node
	b.mu.Unlock()
	return got, nil
}

// expired reports whether a booking (or seeded pod) made at is no longer
// needed, the view not showing its pod bound on the node: older than TTL,
// or the pod bound elsewhere (that bind failed), or the informer without
// the pod for longer than Grace.
func (b *Book) expired(node string, at, now time.Time, st PodState) bool {
	age := now.Sub(at)
	return age > b.TTL || st.Known && st.Node != "" && st.Node != node || !st.Known && age > b.Grace
}
