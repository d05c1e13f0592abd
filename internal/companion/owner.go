package companion

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
)

// The owner of the book: of the replicas, the one that holds the owner
// Lease chooses NICs; the others forward binds to it (webhook.go). The
// argument that no NIC is handed out twice is in docs/design.md,
// "Companion: one owner of the NIC book".
//
// Leader election (client-go, on a Lease) picks the owner. Election alone
// is not enough: a replica that lost the Lease learns it only when a renew
// fails, and its successor may have taken over by then. So the owner
// answers a bind only while it can prove it holds the Lease: less than
// RenewDeadline has passed since it sent its last successful acquire or
// renew (timedLock), which is before any other replica can see the Lease
// expire (LeaseDuration after it last saw it change). And a new owner
// answers only after Grace, longer than a bind its predecessor answered
// takes to reach etcd, followed by a quorum list of the bound pods (Seed):
// its book then holds every bind its predecessor answered.

// Reasons a replica lets an RDMA bind through without choosing NICs
// (rdmatopo_companion_unassisted_answers_total{reason}).
const (
	// ReasonNoOwner: no replica is known to own the book.
	ReasonNoOwner = "no-owner"
	// ReasonOwnerUnreachable: forwarding the bind to the owner failed or
	// timed out.
	ReasonOwnerUnreachable = "owner-unreachable"
	// ReasonHandover: this replica owns the book but has not finished
	// taking it over (Grace, then the quorum list).
	ReasonHandover = "handover"
	// ReasonNotOwner: this replica cannot prove it holds the owner Lease
	// (a bind forwarded to a former owner, or a renew overdue).
	ReasonNotOwner = "not-owner"
)

// ForwardedHeader marks a bind one replica forwarded to another; the
// receiver answers it or lets it through, never forwards it again.
const ForwardedHeader = "Rdmatopo-Forwarded-By"

// Identity is a replica's holder identity in the owner Lease: its name and
// the address (host:port) the other replicas forward binds to.
func Identity(name, address string) string { return name + "@" + address }

// AddressOf is the forwarding address of a holder identity ("" when it
// carries none).
func AddressOf(identity string) string {
	i := strings.LastIndex(identity, "@")
	if i < 0 {
		return ""
	}
	return identity[i+1:]
}

// OwnerConfig configures the election of the book's owner.
type OwnerConfig struct {
	// Namespace and LeaseName name the owner Lease.
	Namespace, LeaseName string
	// Identity is this replica's holder identity (Identity).
	Identity string
	// LeaseDuration, RenewDeadline and RetryPeriod are leader election's:
	// another replica takes the Lease LeaseDuration after it last saw it
	// renewed; the owner stops answering RenewDeadline after it sent its
	// last successful renew; renews are tried every RetryPeriod.
	LeaseDuration, RenewDeadline, RetryPeriod time.Duration
	// Grace is how long a new owner waits before it lists the bound pods
	// and answers: longer than the webhook's timeout, so that every bind
	// the former owner answered has reached etcd or failed.
	Grace time.Duration
}

// Validate checks the durations.
func (c OwnerConfig) Validate() error {
	var errs []error
	if c.RetryPeriod <= 0 {
		errs = append(errs, fmt.Errorf("owner retry period %s must be positive", c.RetryPeriod))
	}
	if c.RenewDeadline <= c.RetryPeriod {
		errs = append(errs, fmt.Errorf("owner renew deadline %s must exceed the retry period %s", c.RenewDeadline, c.RetryPeriod))
	}
	if c.LeaseDuration%time.Second != 0 {
		// The Lease records whole seconds, and the other replicas wait
		// what it records: a fraction would be cut off.
		errs = append(errs, fmt.Errorf("owner lease duration %s must be a whole number of seconds", c.LeaseDuration))
	}
	if c.LeaseDuration <= c.RenewDeadline {
		errs = append(errs, fmt.Errorf("owner lease duration %s must exceed the renew deadline %s", c.LeaseDuration, c.RenewDeadline))
	}
	if c.Grace < 0 {
		errs = append(errs, fmt.Errorf("owner grace %s must not be negative", c.Grace))
	}
	if AddressOf(c.Identity) == "" {
		errs = append(errs, fmt.Errorf("owner identity %q carries no address", c.Identity))
	}
	return errors.Join(errs...)
}

// Owner runs the election and says whether this replica answers binds.
type Owner struct {
	cfg   OwnerConfig
	kube  kubernetes.Interface
	book  *Book
	clock clock.Clock
	// setGauge reports whether this replica answers as the owner.
	setGauge func(bool)

	mu sync.Mutex
	// leading: this replica's last successful write of the Lease named
	// it the holder, at renewed (when the write was sent).
	leading bool
	renewed time.Time
	// ready: the takeover (Grace, quorum list, Seed) of epoch finished.
	ready bool
	epoch uint64

	elector atomic.Pointer[leaderelection.LeaderElector]
}

// NewOwner makes the owner election of a replica; its book is reset and
// seeded on each takeover. clk nil: the real clock.
func NewOwner(cfg OwnerConfig, kube kubernetes.Interface, book *Book, clk clock.Clock, gauge func(bool)) (*Owner, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if clk == nil {
		clk = clock.RealClock{}
	}
	if gauge == nil {
		gauge = func(bool) {}
	}
	return &Owner{cfg: cfg, kube: kube, book: book, clock: clk, setGauge: gauge}, nil
}

// Answering reports whether this replica may choose NICs now, and the
// reason (ReasonNotOwner, ReasonHandover) when it may not. It is asked
// for every bind, before choosing and again before answering.
func (o *Owner) Answering() (bool, string) {
	now := o.clock.Now()
	o.mu.Lock()
	defer o.mu.Unlock()
	if !o.leading || !now.Before(o.renewed.Add(o.cfg.RenewDeadline)) {
		return false, ReasonNotOwner
	}
	if !o.ready {
		return false, ReasonHandover
	}
	return true, ""
}

// Leader is the forwarding address of the holder this replica last saw
// ("" when none), and whether that holder is this replica.
func (o *Owner) Leader() (address string, self bool) {
	le := o.elector.Load()
	if le == nil {
		return "", false
	}
	id := le.GetLeader()
	if id == "" {
		return "", false
	}
	return AddressOf(id), id == o.cfg.Identity
}

// Ready reports whether binds sent to this replica can be answered: it
// answers them itself, or it knows another holder to forward them to.
func (o *Owner) Ready() bool {
	if ok, _ := o.Answering(); ok {
		return true
	}
	addr, self := o.Leader()
	return addr != "" && !self
}

// wrote records a successful write of the owner Lease, sent at start.
func (o *Owner) wrote(start time.Time, rec resourcelock.LeaderElectionRecord) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if rec.HolderIdentity != o.cfg.Identity {
		o.leading = false
		return
	}
	o.leading = true
	if start.After(o.renewed) {
		o.renewed = start
	}
}

// releasing stops answering before this replica writes the Lease away
// (leader election's release on shutdown).
func (o *Owner) releasing() {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.leading, o.ready = false, false
	o.setGauge(false)
}

// takeover begins a term as owner: the book is emptied; binds are let
// through (ReasonHandover) until ready.
func (o *Owner) takeover() uint64 {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.epoch++
	o.ready = false
	o.book.Reset()
	return o.epoch
}

// started is leader election's OnStartedLeading: wait Grace, list the
// bound pods from etcd (a quorum read), seed the book, answer.
func (o *Owner) started(ctx context.Context) {
	epoch := o.takeover()
	klog.InfoS("Took over the NIC book; answering after the grace and a list of the bound pods", "grace", o.cfg.Grace)
	select {
	case <-ctx.Done():
		return
	case <-o.clock.After(o.cfg.Grace):
	}
	var pods []*corev1.Pod
	for {
		var err error
		if pods, err = o.listBound(ctx); err == nil {
			break
		}
		klog.ErrorS(err, "Cannot list the bound pods to take over the NIC book; retrying")
		select {
		case <-ctx.Done():
			return
		case <-o.clock.After(o.cfg.RetryPeriod):
		}
	}
	n := o.book.Seed(pods)
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.epoch != epoch || ctx.Err() != nil {
		return
	}
	o.ready = true
	o.setGauge(true)
	klog.InfoS("Answering binds as the owner of the NIC book", "boundPodsWithNICs", n)
}

// stopped is leader election's OnStoppedLeading.
func (o *Owner) stopped() {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.epoch++
	o.leading, o.ready = false, false
	o.book.Reset()
	o.setGauge(false)
}

// listBound lists every bound pod with a quorum read (resourceVersion
// unset), page by page from one snapshot.
func (o *Owner) listBound(ctx context.Context) ([]*corev1.Pod, error) {
	opts := metav1.ListOptions{FieldSelector: "spec.nodeName!=", Limit: 500}
	var out []*corev1.Pod
	for {
		l, err := o.kube.CoreV1().Pods("").List(ctx, opts)
		if err != nil {
			return nil, fmt.Errorf("list bound pods: %w", err)
		}
		for i := range l.Items {
			out = append(out, &l.Items[i])
		}
		if l.Continue == "" {
			return out, nil
		}
		opts.Continue = l.Continue
	}
}

// Run takes part in the election until ctx ends; on shutdown the owner
// stops answering, then releases the Lease.
func (o *Owner) Run(ctx context.Context) {
	for ctx.Err() == nil {
		lock := &resourcelock.LeaseLock{
			LeaseMeta:  metav1.ObjectMeta{Namespace: o.cfg.Namespace, Name: o.cfg.LeaseName},
			Client:     o.kube.CoordinationV1(),
			LockConfig: resourcelock.ResourceLockConfig{Identity: o.cfg.Identity},
		}
		le, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
			Lock:            &timedLock{Interface: lock, owner: o},
			LeaseDuration:   o.cfg.LeaseDuration,
			RenewDeadline:   o.cfg.RenewDeadline,
			RetryPeriod:     o.cfg.RetryPeriod,
			ReleaseOnCancel: true,
			Name:            "rdmatopo-companion",
			Callbacks: leaderelection.LeaderCallbacks{
				OnStartedLeading: o.started,
				OnStoppedLeading: o.stopped,
			},
		})
		if err != nil {
			// Validate checked the durations: a bug.
			klog.ErrorS(err, "Cannot run the owner election")
			return
		}
		o.elector.Store(le)
		le.Run(ctx)
	}
}

// timedLock is the owner Lease's lock, recording when each successful
// write of it was sent.
type timedLock struct {
	resourcelock.Interface
	owner *Owner
}

// Create implements resourcelock.Interface.
func (l *timedLock) Create(ctx context.Context, rec resourcelock.LeaderElectionRecord) error {
	start := l.owner.clock.Now()
	if err := l.Interface.Create(ctx, rec); err != nil {
		return err
	}
	l.owner.wrote(start, rec)
	return nil
}

// Update implements resourcelock.Interface. A write naming another holder
// (leader election's release names none) stops the answers first.
func (l *timedLock) Update(ctx context.Context, rec resourcelock.LeaderElectionRecord) error {
	if rec.HolderIdentity != l.owner.cfg.Identity {
		l.owner.releasing()
	}
	start := l.owner.clock.Now()
	if err := l.Interface.Update(ctx, rec); err != nil {
		return err
	}
	l.owner.wrote(start, rec)
	return nil
}
