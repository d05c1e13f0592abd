package companion

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/kubewharf/katalyst-api/pkg/apis/node/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubefake "k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/rdmatopo/rdmatopo/core/ledger"
	"github.com/rdmatopo/rdmatopo/core/topology"
)

// fakeLock is a resourcelock.Interface that accepts every write, or fails
// with err; onUpdate runs before an update is accepted.
type fakeLock struct {
	id       string
	err      error
	onUpdate func(resourcelock.LeaderElectionRecord)
}

func (l *fakeLock) Get(context.Context) (*resourcelock.LeaderElectionRecord, []byte, error) {
	return nil, nil, errors.New("not used")
}
func (l *fakeLock) Create(context.Context, resourcelock.LeaderElectionRecord) error { return l.err }
func (l *fakeLock) Update(_ context.Context, rec resourcelock.LeaderElectionRecord) error {
	if l.onUpdate != nil {
		l.onUpdate(rec)
	}
	return l.err
}
func (l *fakeLock) RecordEvent(string) {}
func (l *fakeLock) Identity() string   { return l.id }
func (l *fakeLock) Describe() string   { return "fake" }

// ownerConfig is the defaults of `rdmatopo companion`.
func ownerConfig(id string) OwnerConfig {
	return OwnerConfig{Namespace: "rdmatopo", LeaseName: "owner", Identity: id,
		LeaseDuration: 15 * time.Second, RenewDeadline: 10 * time.Second, RetryPeriod: 2 * time.Second, Grace: 5 * time.Second}
}

// takeOver makes o acquire the Lease at the clock's time (through its
// lock) and finish its takeover: the grace passes on the fake clock, the
// bound pods are listed from kube.
func takeOver(t *testing.T, o *Owner, fc *clocktesting.FakeClock) *timedLock {
	t.Helper()
	lock := &timedLock{Interface: &fakeLock{id: o.cfg.Identity}, owner: o}
	if err := lock.Create(context.Background(), resourcelock.LeaderElectionRecord{HolderIdentity: o.cfg.Identity}); err != nil {
		t.Fatal(err)
	}
	if ok, why := o.Answering(); ok || why != ReasonHandover {
		t.Fatalf("just acquired: answering %v (%s), want not yet (%s)", ok, why, ReasonHandover)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		o.started(context.Background())
	}()
	for !fc.HasWaiters() {
		select {
		case <-done:
			t.Fatal("the takeover ended before its grace")
		default:
		}
	}
	fc.Step(o.cfg.Grace)
	<-done
	return lock
}

// TestOwnerAnswersOnlyWhileItProvesTheLease: a replica answers only after
// it acquired the Lease and finished its takeover, only while less than
// the renew deadline has passed since its last successful renew was sent,
// again after a renew, and no longer once it releases the Lease (before
// the release is written) or stops leading.
func TestOwnerAnswersOnlyWhileItProvesTheLease(t *testing.T) {
	fc := clocktesting.NewFakeClock(time.Unix(1000, 0))
	kube := kubefake.NewSimpleClientset(boundPod("p", "n1", "a"), boundPod("q", "n1"))
	book := &Book{Grace: 30 * time.Second, TTL: 2 * time.Minute, Now: fc.Now}
	var gauge []bool
	o, err := NewOwner(ownerConfig(Identity("a", "127.0.0.1:1")), kube, book, fc, func(on bool) { gauge = append(gauge, on) })
	if err != nil {
		t.Fatal(err)
	}
	if ok, why := o.Answering(); ok || why != ReasonNotOwner {
		t.Errorf("before the election: answering %v (%s)", ok, why)
	}
	lock := takeOver(t, o, fc)
	if ok, why := o.Answering(); !ok {
		t.Fatalf("after the takeover: not answering (%s)", why)
	}
	if _, seeded := book.Len(); seeded != 1 {
		t.Errorf("seeded %d bound pods with NICs, want 1", seeded)
	}
	// Acquired at 1000 s, then 5 s of grace: proven until 1010 s.
	fc.Step(4 * time.Second)
	if ok, _ := o.Answering(); !ok {
		t.Errorf("9 s after the acquire: not answering")
	}
	fc.Step(time.Second)
	if ok, why := o.Answering(); ok || why != ReasonNotOwner {
		t.Errorf("renew deadline passed: answering %v (%s)", ok, why)
	}
	if err := lock.Update(context.Background(), resourcelock.LeaderElectionRecord{HolderIdentity: o.cfg.Identity}); err != nil {
		t.Fatal(err)
	}
	if ok, _ := o.Answering(); !ok {
		t.Errorf("renewed: not answering")
	}
	// A failed renew proves nothing.
	lock.Interface.(*fakeLock).err = errors.New("timeout")
	fc.Step(9 * time.Second)
	_ = lock.Update(context.Background(), resourcelock.LeaderElectionRecord{HolderIdentity: o.cfg.Identity})
	fc.Step(time.Second)
	if ok, _ := o.Answering(); ok {
		t.Errorf("10 s after the last successful renew: still answering")
	}
	lock.Interface.(*fakeLock).err = nil
	_ = lock.Update(context.Background(), resourcelock.LeaderElectionRecord{HolderIdentity: o.cfg.Identity})
	// The release stops the answers before it is written.
	answeringAtRelease := true
	lock.Interface.(*fakeLock).onUpdate = func(resourcelock.LeaderElectionRecord) { answeringAtRelease, _ = o.Answering() }
	if err := lock.Update(context.Background(), resourcelock.LeaderElectionRecord{}); err != nil {
		t.Fatal(err)
	}
	if answeringAtRelease {
		t.Errorf("still answering while the release was written")
	}
	o.stopped()
	if b, s := book.Len(); b+s != 0 {
		t.Errorf("stopped: the book holds %d bookings, %d seeded", b, s)
	}
	if d := cmp.Diff([]bool{true, false, false}, gauge); d != "" {
		t.Errorf("owner gauge (-want +got):\n%s", d)
	}
}

// TestOwnerConfigValidate: leader election's ordering of the durations and
// an identity carrying an address.
func TestOwnerConfigValidate(t *testing.T) {
	tests := map[string]struct {
		edit func(*OwnerConfig)
		ok   bool
	}{
		"defaults":                 {func(*OwnerConfig) {}, true},
		"renew deadline >= lease":  {func(c *OwnerConfig) { c.RenewDeadline = c.LeaseDuration }, false},
		"retry >= renew deadline":  {func(c *OwnerConfig) { c.RetryPeriod = c.RenewDeadline }, false},
		"negative grace":           {func(c *OwnerConfig) { c.Grace = -time.Second }, false},
		"identity without address": {func(c *OwnerConfig) { c.Identity = "a" }, false},
	}
	for name, tc := range tests {
		c := ownerConfig(Identity("a", "10.0.0.1:9443"))
		tc.edit(&c)
		if err := c.Validate(); (err == nil) != tc.ok {
			t.Errorf("%s: %v", name, err)
		}
	}
	if got := AddressOf(Identity("pod-1", "[fd00::1]:9443")); got != "[fd00::1]:9443" {
		t.Errorf("AddressOf: %q", got)
	}
}

// TestOwnerHandoverSeesFormerOwnersBinds: owner A answers a bind on n1;
// the API server holds the pod with A's NICs, but no replica's informer
// shows it yet. A's renew deadline passes: A lets the next bind through
// (not-owner). B takes the Lease: it lets binds through during its
// takeover (handover), then lists the bound pods and gives the next pod on
// n1 the other zone, not A's.
func TestOwnerHandoverSeesFormerOwnersBinds(t *testing.T) {
	n1, c1 := providerNode("n1", "p", "a", "b")
	fabric := topology.Build(testConfig, []*corev1.Node{n1}, []*v1alpha1.CustomNodeResource{c1})
	p0, p1, p2 := gangPod("w-0", "g"), gangPod("w-1", "h"), gangPod("w-2", "h")
	// The informers of both replicas show the pods pending, never bound.
	informer := &fakeCluster{f: fabric, pods: []*corev1.Pod{p0.DeepCopy(), p1.DeepCopy(), p2.DeepCopy()}}
	apiserver := kubefake.NewSimpleClientset()
	fc := clocktesting.NewFakeClock(time.Unix(1000, 0))
	replica := func(name string) (*Webhook, *Owner) {
		book := &Book{Grace: 30 * time.Second, TTL: 2 * time.Minute, Now: fc.Now}
		o, err := NewOwner(ownerConfig(Identity(name, "127.0.0.1:1")), apiserver, book, fc, nil)
		if err != nil {
			t.Fatal(err)
		}
		w := newTestWebhook(informer)
		w.Book, w.Owner = book, o
		return w, o
	}
	wa, a := replica("a")
	wb, b := replica("b")
	takeOver(t, a, fc)

	resp, got := bindNoApply(t, wa, p0, "n1")
	if !resp.Allowed || got[ledger.AnnotationNICs] == "" {
		t.Fatalf("owner A: %v %v", resp.Allowed, got)
	}
	// The bind reaches etcd: the pod carries A's choice.
	stored := p0.DeepCopy()
	stored.Spec.NodeName = "n1"
	for k, v := range got {
		stored.Annotations[k] = v
	}
	if _, err := apiserver.CoreV1().Pods("ns").Create(context.Background(), stored, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	fc.Step(11 * time.Second) // A's renew deadline passes; B acquires.
	if resp, got := bindNoApply(t, wa, p1, "n1"); !resp.Allowed || len(got) != 0 {
		t.Errorf("former owner A: allowed %v, annotations %v; want allowed, none", resp.Allowed, got)
	}
	lock := &timedLock{Interface: &fakeLock{id: b.cfg.Identity}, owner: b}
	if err := lock.Create(context.Background(), resourcelock.LeaderElectionRecord{HolderIdentity: b.cfg.Identity}); err != nil {
		t.Fatal(err)
	}
	if resp, got := bindNoApply(t, wb, p1, "n1"); !resp.Allowed || len(got) != 0 {
		t.Errorf("owner B in its takeover: allowed %v, annotations %v; want allowed, none", resp.Allowed, got)
	}
	b.stopped() // takeOver acquires again, now through its own steps
	takeOver(t, b, fc)
	resp, got2 := bindNoApply(t, wb, p2, "n1")
	if !resp.Allowed || got2[ledger.AnnotationNICs] == "" {
		t.Fatalf("owner B: %v %v", resp.Allowed, got2)
	}
	if got2[ledger.AnnotationNUMA] == got[ledger.AnnotationNUMA] {
		t.Errorf("owner B gave %s the zone A gave %s: NUMA %s, NICs %s and %s",
			p2.Name, p0.Name, got2[ledger.AnnotationNUMA], got2[ledger.AnnotationNICs], got[ledger.AnnotationNICs])
	}
	unassisted := func(w *Webhook, reason string) float64 {
		return testutilValue(w.Metrics.UnassistedAnswers.WithLabelValues(reason))
	}
	if unassisted(wa, ReasonNotOwner) != 1 || unassisted(wb, ReasonHandover) != 1 {
		t.Errorf("unassisted: A not-owner %v, B handover %v; want 1, 1", unassisted(wa, ReasonNotOwner), unassisted(wb, ReasonHandover))
	}
}
