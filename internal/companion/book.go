package companion

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/rdmatopo/rdmatopo/framework/ledger"
	"github.com/rdmatopo/rdmatopo/framework/topology"
)

// The book: which NICs the webhook handed out on a node, kept where every
// replica sees it at once and can change it only by compare-and-swap.
//
// Each node has a Lease in the companion's namespace, BookName(node), whose
// BookingsAnnotation holds the bookings of the binds the webhook answered
// (pod UID -> NICs, time). A replica that answers a bind on a node reads
// the node's Lease, chooses NICs no booking, no annotated bound pod and no
// KCNR allocation holds, and writes the Lease back with the resourceVersion
// it read: kube-apiserver refuses the write if any replica wrote the Lease
// in between, and the replica reads again and chooses again. So two binds
// on one node are serialized on the Lease, and the second sees the first's
// NICs. A booking stays until every replica's informers surely show the pod
// with its annotations (Book.Grace after it was made), or the pod is gone
// or elsewhere, or Book.TTL in any case (see docs/design.md, "Companion").
//
// A bind's first attempt starts from the Lease as this replica last wrote
// it (else as its Lease informer holds it) instead of reading it from the
// API server: when no other replica wrote the Lease since, the write
// succeeds and the bind costs one request; when one did, the
// resourceVersion no longer matches, the API server refuses the write as
// before, and the next attempt reads the Lease from the API server. A
// stale copy costs a retry, never a NIC handed out twice.

// BookingsAnnotation (Lease) is the JSON map of a node's bookings.
const BookingsAnnotation = "rdmatopo.io/bookings"

// newLeaseAnnotation marks, in memory only, a Lease read finds missing:
// write creates it.
const newLeaseAnnotation = "rdmatopo.io/new"

// bookPrefix prefixes the per-node Lease names.
const bookPrefix = "rdmatopo-nics-"

// BookName is the name of a node's Lease.
func BookName(node string) string { return bookPrefix + node }

// Booking is the NICs the webhook handed one pod at bind.
type Booking struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	// Job is the pod's gang key ("" when it has none).
	Job string `json:"job,omitempty"`
	// Zones are the NUMA zones and NICs handed out (GPU and CPU counts
	// are the planner's split of the pod's requests).
	Zones []ledger.ZoneUse `json:"zones"`
	// At is when the booking was made (Unix milliseconds).
	At int64 `json:"at"`
}

// NICs lists the booking's NICs, sorted.
func (x Booking) NICs() []topology.NICID {
	return ledger.Reservation{Zones: x.Zones}.NICs()
}

// Bookings is a node's bookings by pod UID.
type Bookings map[string]Booking

// Book reads and writes the per-node Leases.
type Book struct {
	Client    kubernetes.Interface
	Namespace string
	// Grace is how long a booking is kept at least: longer than any
	// replica's informers take to show a bound pod's annotations.
	Grace time.Duration
	// TTL is how long a booking is kept at most (a bind the API server
	// refused after admission leaves one behind).
	TTL time.Duration
	// Now is the clock (time.Now when nil).
	Now func() time.Time
	// Cached, when set, returns the node's Lease as the replica's
	// informer holds it (nil when it holds none); the first attempt of a
	// bind starts from the newer of it and the replica's own last write.
	Cached func(node string) *coordinationv1.Lease

	mu sync.Mutex
	// written is each node's Lease as this replica last wrote it.
	written map[string]*coordinationv1.Lease
}

// cached is the Lease a bind's first attempt starts from: the replica's
// last write of it, else the informer's copy; nil when neither has one.
// Which is newer cannot be told from resourceVersions (opaque); the own
// write is newer unless another replica wrote since, which the write's
// precondition catches.
func (b *Book) cached(node string) *coordinationv1.Lease {
	b.mu.Lock()
	l := b.written[node]
	b.mu.Unlock()
	if l == nil && b.Cached != nil {
		l = b.Cached(node)
	}
	return l
}

// remember keeps the Lease as written (nil: forget the node's).
func (b *Book) remember(node string, l *coordinationv1.Lease) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if l == nil {
		delete(b.written, node)
		return
	}
	if b.written == nil {
		b.written = map[string]*coordinationv1.Lease{}
	}
	b.written[node] = l
}

func (b *Book) now() time.Time {
	if b.Now != nil {
		return b.Now()
	}
	return time.Now()
}

// errRetry is a write that lost the race; the caller reads again.
var errRetry = errors.New("book changed meanwhile")

// maxBookAttempts bounds the compare-and-swap retries of one bind.
const maxBookAttempts = 8

// read returns the node's Lease (a new, unsaved one when it does not exist)
// and its bookings. A Lease whose annotation cannot be read is treated as
// empty and reported: its bookings are at worst Grace old, and the next
// write replaces it.
func (b *Book) read(ctx context.Context, node string) (*coordinationv1.Lease, Bookings, error) {
	lease, err := b.Client.CoordinationV1().Leases(b.Namespace).Get(ctx, BookName(node), metav1.GetOptions{})
	return b.parse(node, lease, err)
}

// readCached is read from the replica's copy of the Lease (cached); a
// node without one is read from the API server.
func (b *Book) readCached(ctx context.Context, node string) (*coordinationv1.Lease, Bookings, error) {
	if l := b.cached(node); l != nil {
		return b.parse(node, l, nil)
	}
	if b.Cached != nil {
		// Neither this replica nor its informer has seen the Lease: it
		// most likely does not exist, so the write creates it; if another
		// replica created it meanwhile, the create fails and the Lease is
		// read.
		return b.parse(node, nil, apierrors.NewNotFound(coordinationv1.Resource("leases"), BookName(node)))
	}
	return b.read(ctx, node)
}

// parse returns the Lease a Get answered (a new one when it was not
// found) and its bookings.
func (b *Book) parse(node string, lease *coordinationv1.Lease, err error) (*coordinationv1.Lease, Bookings, error) {
	if apierrors.IsNotFound(err) {
		return &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{
			Name: BookName(node), Namespace: b.Namespace,
			Labels:      map[string]string{"app.kubernetes.io/managed-by": "rdmatopo-companion"},
			Annotations: map[string]string{newLeaseAnnotation: "true"},
		}}, Bookings{}, nil
	}
	if err != nil {
		return nil, nil, fmt.Errorf("read Lease %s/%s: %w", b.Namespace, BookName(node), err)
	}
	bk, err := ParseBookings(lease.Annotations[BookingsAnnotation])
	if err != nil {
		return lease, Bookings{}, fmt.Errorf("Lease %s/%s: annotation %s: %w", b.Namespace, lease.Name, BookingsAnnotation, err)
	}
	return lease, bk, nil
}

// ParseBookings reads BookingsAnnotation ("" is none).
func ParseBookings(s string) (Bookings, error) {
	bk := Bookings{}
	if strings.TrimSpace(s) == "" {
		return bk, nil
	}
	if err := json.Unmarshal([]byte(s), &bk); err != nil {
		return Bookings{}, err
	}
	return bk, nil
}

// write stores the bookings with the Lease's resourceVersion as the
// precondition; errRetry when another writer came first.
func (b *Book) write(ctx context.Context, node string, lease *coordinationv1.Lease, bk Bookings) error {
	data, err := json.Marshal(bk)
	if err != nil {
		return err
	}
	lease = lease.DeepCopy()
	if lease.Annotations == nil {
		lease.Annotations = map[string]string{}
	}
	create := lease.Annotations[newLeaseAnnotation] != ""
	delete(lease.Annotations, newLeaseAnnotation)
	lease.Annotations[BookingsAnnotation] = string(data)
	now := metav1.NewMicroTime(b.now())
	lease.Spec.RenewTime = &now
	leases := b.Client.CoordinationV1().Leases(b.Namespace)
	var out *coordinationv1.Lease
	if create {
		out, err = leases.Create(ctx, lease, metav1.CreateOptions{})
	} else {
		out, err = leases.Update(ctx, lease, metav1.UpdateOptions{})
	}
	switch {
	case apierrors.IsConflict(err), apierrors.IsAlreadyExists(err), !create && apierrors.IsNotFound(err):
		// Another writer came first, or the copy written from is of a
		// Lease since deleted: read it again.
		b.remember(node, nil)
		return errRetry
	case err != nil:
		return fmt.Errorf("write Lease %s/%s: %w", b.Namespace, lease.Name, err)
	}
	b.remember(node, out)
	return nil
}

// PodState is what a replica's informer says of a booked pod.
type PodState struct {
	// Known is false when the informer does not hold the pod (deleted).
	Known bool
	// Node is the pod's spec.nodeName.
	Node string
	// NICs is the pod's AnnotationNICs, parsed and sorted (none when absent).
	NICs []topology.NICID
}

// prune drops the bookings that are no longer needed (see the file
// comment): older than TTL; or older than Grace and the pod gone, bound
// elsewhere, or bound here with the booked NICs in its annotations.
func (b *Book) prune(node string, bk Bookings, pod func(uid string) PodState) bool {
	now := b.now().UnixMilli()
	changed := false
	for uid, x := range bk {
		age := time.Duration(now-x.At) * time.Millisecond
		drop := age > b.TTL
		if !drop && age > b.Grace {
			st := pod(uid)
			drop = !st.Known || st.Node != "" && st.Node != node || st.Node == node && slices.Equal(st.NICs, x.NICs())
		}
		if drop {
			delete(bk, uid)
			changed = true
		}
	}
	return changed
}

// Reserve books NICs for a pod on a node: it reads the node's bookings,
// calls choose with them (choose returns the booking to make, or nil for
// none), and writes them back by compare-and-swap, choosing again when
// another replica wrote first. A booking the pod already has (the same
// bind retried) is returned as is. conflicts counts the lost races.
func (b *Book) Reserve(ctx context.Context, node, uid string, pod func(uid string) PodState,
	choose func(Bookings) (*Booking, error)) (got *Booking, conflicts int, err error) {
	for attempt := 0; attempt < maxBookAttempts; attempt++ {
		read := b.read
		if attempt == 0 {
			read = b.readCached
		}
		lease, bk, rerr := read(ctx, node)
		if lease == nil {
			return nil, conflicts, rerr
		}
		if x, ok := bk[uid]; ok {
			return &x, conflicts, nil
		}
		b.prune(node, bk, pod)
		x, cerr := choose(bk)
		if cerr != nil || x == nil {
			return nil, conflicts, cerr
		}
		x.At = b.now().UnixMilli()
		bk[uid] = *x
		werr := b.write(ctx, node, lease, bk)
		if errors.Is(werr, errRetry) {
			conflicts++
			continue
		}
		if werr != nil {
			return nil, conflicts, werr
		}
		return x, conflicts, nil
	}
	return nil, conflicts, fmt.Errorf("node %s: the book changed %d times in a row", node, maxBookAttempts)
}

// Read returns a node's bookings (none when it has no Lease).
func (b *Book) Read(ctx context.Context, node string) (Bookings, error) {
	_, bk, err := b.read(ctx, node)
	return bk, err
}
