package companion

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	kubefake "k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/rdmatopo/rdmatopo/framework/ledger"
	"github.com/rdmatopo/rdmatopo/framework/topology"
	b "github.com/rdmatopo/rdmatopo/internal/testing/builders"
)

// TestBookPrune: a booking stays while it is younger than the grace, goes
// once the pod is gone, elsewhere or shows the booked NICs, and goes after
// the TTL in any case.
func TestBookPrune(t *testing.T) {
	now := time.Unix(1000, 0)
	book := &Book{Grace: 30 * time.Second, TTL: 2 * time.Minute, Now: func() time.Time { return now }}
	zones := []ledger.ZoneUse{{NUMA: 0, NICs: []topology.NICID{"a", "b"}}}
	at := func(age time.Duration) int64 { return now.Add(-age).UnixMilli() }
	pods := map[string]PodState{
		"young-gone":    {},
		"old-gone":      {},
		"old-elsewhere": {Known: true, Node: "n2"},
		"old-shown":     {Known: true, Node: "n1", NICs: []topology.NICID{"a", "b"}},
		"old-unshown":   {Known: true, Node: "n1"},
		"old-pending":   {Known: true},
		"expired":       {Known: true, Node: "n1"},
	}
	bk := Bookings{
		"young-gone":    {Zones: zones, At: at(10 * time.Second)},
		"old-gone":      {Zones: zones, At: at(40 * time.Second)},
		"old-elsewhere": {Zones: zones, At: at(40 * time.Second)},
		"old-shown":     {Zones: zones, At: at(40 * time.Second)},
		"old-unshown":   {Zones: zones, At: at(40 * time.Second)},
		"old-pending":   {Zones: zones, At: at(40 * time.Second)},
		"expired":       {Zones: zones, At: at(3 * time.Minute)},
	}
	book.prune("n1", bk, func(uid string) PodState { return pods[uid] })
	var kept []string
	for uid := range bk {
		kept = append(kept, uid)
	}
	want := map[string]bool{"young-gone": true, "old-unshown": true, "old-pending": true}
	got := map[string]bool{}
	for _, k := range kept {
		got[k] = true
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("kept (-want +got):\n%s", d)
	}
}

// TestBookReserveIsIdempotent: the same bind asked twice gets its first
// booking back, and a second pod on the node is chosen with the first one's
// NICs excluded; what the Lease holds reads back.
func TestBookReserveIsIdempotent(t *testing.T) {
	book := &Book{Client: kubefake.NewSimpleClientset(), Namespace: "ns", Grace: time.Minute, TTL: 2 * time.Minute}
	ctx := context.Background()
	none := func(string) PodState { return PodState{} }
	// A node without KCNR: four synthetic NICs, rdma-0..rdma-3.
	n, _ := providerNode("n1", "p", "a", "b")
	f := topology.Build(testConfig, []*corev1.Node{n}, nil)
	chooser := &Chooser{Config: testConfig}
	var calls int
	choose := func(bk Bookings) (*Booking, error) {
		calls++
		l := chooser.Ledger(f, "n1", nil, bk)
		held := l.HeldNICs("n1")
		for _, nic := range []topology.NICID{"rdma-0", "rdma-1", "rdma-2", "rdma-3"} {
			if _, ok := held[nic]; !ok {
				return &Booking{Zones: []ledger.ZoneUse{{NUMA: 0, NICs: []topology.NICID{nic}}}}, nil
			}
		}
		return nil, nil
	}
	first, _, err := book.Reserve(ctx, "n1", "u1", none, choose)
	if err != nil || first == nil {
		t.Fatalf("first: %v %v", first, err)
	}
	again, _, err := book.Reserve(ctx, "n1", "u1", none, choose)
	if err != nil || calls != 1 || !cmp.Equal(again.NICs(), first.NICs()) {
		t.Errorf("retried bind: %v (calls %d, err %v), want %v", again, calls, err, first)
	}
	second, _, err := book.Reserve(ctx, "n1", "u2", none, choose)
	if err != nil || second == nil || cmp.Equal(second.NICs(), first.NICs()) {
		t.Errorf("second pod: %v, first %v (err %v)", second, first, err)
	}
	bk, err := book.Read(ctx, "n1")
	if err != nil || len(bk) != 2 {
		data, _ := json.Marshal(bk)
		t.Errorf("book holds %s (%v), want two bookings", data, err)
	}
}

// TestAnnotationPatch: keys with '/' are escaped, and a Binding without
// annotations gets the whole map.
func TestAnnotationPatch(t *testing.T) {
	got, _ := annotationPatch(map[string]string{}, map[string]string{"rdmatopo.io/nics": "x", "a~b": "y"})
	want := `[{"op":"add","path":"/metadata/annotations/a~0b","value":"y"},{"op":"add","path":"/metadata/annotations/rdmatopo.io~1nics","value":"x"}]`
	if string(got) != want {
		t.Errorf("patch %s, want %s", got, want)
	}
	got, _ = annotationPatch(nil, map[string]string{"k": "v"})
	if string(got) != `[{"op":"add","path":"/metadata/annotations","value":{"k":"v"}}]` {
		t.Errorf("patch without annotations: %s", got)
	}
}

// TestGangKey: Volcano PodGroup first, then Kueue pod group, then JobSet.
func TestGangKey(t *testing.T) {
	tests := map[string]struct {
		pod  *corev1.Pod
		want string
	}{
		"volcano": {b.MakePod("ns", "p").Group("pg").Label(KueuePodGroupLabel, "k").Obj(), "ns/podgroup:pg"},
		"kueue":   {b.MakePod("ns", "p").Label(KueuePodGroupLabel, "k").Label(JobSetNameLabel, "js").Obj(), "ns/kueue:k"},
		"jobset":  {b.MakePod("ns", "p").Label(JobSetNameLabel, "js").Obj(), "ns/jobset:js"},
		"none":    {b.MakePod("ns", "p").Obj(), ""},
	}
	for name, tc := range tests {
		if got := GangKey(tc.pod); got != tc.want {
			t.Errorf("%s: %q, want %q", name, got, tc.want)
		}
	}
}

// casLeases makes a fake clientset's Lease updates compare-and-swap on
// resourceVersion, as kube-apiserver's do, and number the versions.
func casLeases(client *kubefake.Clientset) {
	version := 0
	tracker := client.Tracker()
	client.PrependReactor("create", "leases", func(a k8stesting.Action) (bool, runtime.Object, error) {
		l := a.(k8stesting.CreateAction).GetObject().(*coordinationv1.Lease).DeepCopy()
		version++
		l.ResourceVersion = strconv.Itoa(version)
		if err := tracker.Create(leaseGVR, l, l.Namespace); err != nil {
			return true, nil, err
		}
		return true, l, nil
	})
	client.PrependReactor("update", "leases", func(a k8stesting.Action) (bool, runtime.Object, error) {
		l := a.(k8stesting.UpdateAction).GetObject().(*coordinationv1.Lease).DeepCopy()
		cur, err := tracker.Get(leaseGVR, l.Namespace, l.Name)
		if err != nil {
			return true, nil, err
		}
		if cur.(*coordinationv1.Lease).ResourceVersion != l.ResourceVersion {
			return true, nil, apierrors.NewConflict(leaseGVR.GroupResource(), l.Name, errors.New("the object has been modified"))
		}
		version++
		l.ResourceVersion = strconv.Itoa(version)
		return true, l, tracker.Update(leaseGVR, l, l.Namespace)
	})
}

var leaseGVR = coordinationv1.SchemeGroupVersion.WithResource("leases")

// TestBookReserveFromCache: a replica's binds start from the Lease it last
// wrote, without reading it again; when another replica wrote the Lease
// meanwhile, the write is refused, the Lease read again, and the NICs the
// other replica booked are not handed out twice.
func TestBookReserveFromCache(t *testing.T) {
	client := kubefake.NewSimpleClientset()
	casLeases(client)
	r1 := &Book{Client: client, Namespace: "ns", Grace: time.Minute, TTL: 2 * time.Minute}
	r2 := &Book{Client: client, Namespace: "ns", Grace: time.Minute, TTL: 2 * time.Minute}
	ctx := context.Background()
	none := func(string) PodState { return PodState{} }
	nics := []topology.NICID{"rdma-0", "rdma-1", "rdma-2", "rdma-3"}
	choose := func(bk Bookings) (*Booking, error) {
		held := map[topology.NICID]bool{}
		for _, x := range bk {
			for _, n := range x.NICs() {
				held[n] = true
			}
		}
		for _, nic := range nics {
			if !held[nic] {
				return &Booking{Zones: []ledger.ZoneUse{{NUMA: 0, NICs: []topology.NICID{nic}}}}, nil
			}
		}
		return nil, nil
	}
	gets := func() int {
		n := 0
		for _, a := range client.Actions() {
			if a.GetVerb() == "get" && a.GetResource().Resource == "leases" {
				n++
			}
		}
		return n
	}
	reserve := func(b *Book, uid string) (*Booking, int) {
		t.Helper()
		x, conflicts, err := b.Reserve(ctx, "n1", uid, none, choose)
		if err != nil || x == nil {
			t.Fatalf("reserve %s: %v %v", uid, x, err)
		}
		return x, conflicts
	}
	a, _ := reserve(r1, "a") // no Lease yet: read, then created
	getsBefore := gets()
	b, conflicts := reserve(r1, "b")
	if gets() != getsBefore || conflicts != 0 {
		t.Errorf("second bind of the same replica: %d reads, %d conflicts; want 0, 0", gets()-getsBefore, conflicts)
	}
	c, _ := reserve(r2, "c") // the other replica: reads, writes
	d, conflicts := reserve(r1, "d")
	if conflicts != 1 {
		t.Errorf("bind after the other replica's write: %d conflicts, want 1", conflicts)
	}
	seen := map[topology.NICID]string{}
	for uid, x := range map[string]*Booking{"a": a, "b": b, "c": c, "d": d} {
		for _, n := range x.NICs() {
			if other, ok := seen[n]; ok {
				t.Errorf("NIC %s booked for both %s and %s", n, other, uid)
			}
			seen[n] = uid
		}
	}
	if bk, err := r2.Read(ctx, "n1"); err != nil || len(bk) != 4 {
		t.Errorf("the Lease holds %d bookings (%v), want 4", len(bk), err)
	}
	// A replica whose informer holds no Lease of a node creates it without
	// reading it; where one exists after all, the create fails and the
	// Lease is read.
	r3 := &Book{Client: client, Namespace: "ns", Grace: time.Minute, TTL: 2 * time.Minute,
		Cached: func(string) *coordinationv1.Lease { return nil }}
	getsBefore = gets()
	if x, conflicts, err := r3.Reserve(ctx, "n2", "e", none, choose); err != nil || x == nil || conflicts != 0 || gets() != getsBefore {
		t.Errorf("first bind on a node without Lease: %v, %d conflicts, %d reads (%v); want a booking, 0, 0", x, conflicts, gets()-getsBefore, err)
	}
	if x, conflicts, err := r3.Reserve(ctx, "n1", "f", none, choose); err != nil || x != nil || conflicts != 1 {
		t.Errorf("node whose Lease exists unseen: %v, %d conflicts (%v); want no NIC left, 1 conflict", x, conflicts, err)
	}
}
