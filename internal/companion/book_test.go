package companion

import (
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/kubewharf/katalyst-api/pkg/apis/node/v1alpha1"
	corev1 "k8s.io/api/core/v1"

	"github.com/rdmatopo/rdmatopo/core/ledger"
	"github.com/rdmatopo/rdmatopo/core/topology"
	b "github.com/rdmatopo/rdmatopo/internal/testing/builders"
)

// fakeView is a View over fixed pods.
type fakeView struct {
	mu   sync.Mutex
	pods []*corev1.Pod
}

func (v *fakeView) PodsOnNode(node string) []*corev1.Pod {
	v.mu.Lock()
	defer v.mu.Unlock()
	var out []*corev1.Pod
	for _, p := range v.pods {
		if p.Spec.NodeName == node {
			out = append(out, p)
		}
	}
	return out
}

func (v *fakeView) PodState(uid string) PodState {
	v.mu.Lock()
	defer v.mu.Unlock()
	for _, p := range v.pods {
		if string(p.UID) == uid {
			nics, _ := ledger.ParseNICs(p.Annotations[ledger.AnnotationNICs])
			return PodState{Known: true, Node: p.Spec.NodeName, NICs: nics}
		}
	}
	return PodState{}
}

// boundPod is pod uid bound to node with the NICs annotated.
func boundPod(uid, node string, nics ...string) *corev1.Pod {
	w := b.MakePod("ns", uid).UID(uid)
	if len(nics) > 0 {
		w = w.Annotation(ledger.AnnotationNICs, strings.Join(nics, ","))
	}
	p := w.Obj()
	p.Spec.NodeName = node
	return p
}

// TestBookKeepsBookingsUntilShown: a booking holds its NICs until the
// view shows the pod bound on the node with a NIC annotation, the pod
// bound elsewhere, the pod unknown for longer than the grace, or the TTL.
func TestBookKeepsBookingsUntilShown(t *testing.T) {
	zones := []ledger.ZoneUse{{NUMA: 0, NICs: []topology.NICID{"a"}}}
	pending := b.MakePod("ns", "p").UID("p").Obj()
	tests := map[string]struct {
		view *corev1.Pod // the booked pod as the view shows it (nil: unknown)
		age  time.Duration
		kept bool
	}{
		"pending, young":          {view: pending, age: time.Second, kept: true},
		"pending, past grace":     {view: pending, age: 40 * time.Second, kept: true},
		"pending, past TTL":       {view: pending, age: 3 * time.Minute, kept: false},
		"unknown, young":          {age: time.Second, kept: true},
		"unknown, past grace":     {age: 40 * time.Second, kept: false},
		"bound here, annotated":   {view: boundPod("p", "n1", "a"), age: time.Second, kept: false},
		"bound here, unannotated": {view: boundPod("p", "n1"), age: time.Second, kept: true},
		"bound elsewhere":         {view: boundPod("p", "n2", "a"), age: time.Second, kept: false},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			now := time.Unix(1000, 0)
			book := &Book{Grace: 30 * time.Second, TTL: 2 * time.Minute, Now: func() time.Time { return now }}
			view := &fakeView{}
			if _, err := book.Reserve("n1", "p", view, func([]*corev1.Pod, Bookings) (*Booking, error) {
				return &Booking{Zones: zones}, nil
			}); err != nil {
				t.Fatal(err)
			}
			if tc.view != nil {
				view.pods = []*corev1.Pod{tc.view}
			}
			now = now.Add(tc.age)
			var kept bool
			if _, err := book.Reserve("n1", "other", view, func(_ []*corev1.Pod, bk Bookings) (*Booking, error) {
				_, kept = bk["p"]
				return nil, nil
			}); err != nil {
				t.Fatal(err)
			}
			if kept != tc.kept {
				t.Errorf("kept %v, want %v", kept, tc.kept)
			}
		})
	}
}

// TestBookSeededPodsCountUntilShown: a bound pod a new owner's quorum list
// showed counts on its node while the view does not show it (until the
// grace, when the view does not know the pod at all), and not twice once
// the view shows it.
func TestBookSeededPodsCountUntilShown(t *testing.T) {
	tests := map[string]struct {
		view *corev1.Pod
		age  time.Duration
		want int // times pod p is among the node's pods
	}{
		"view behind, young":      {age: time.Second, want: 1},
		"view behind, past grace": {age: 40 * time.Second, want: 0},
		"view caught up":          {view: boundPod("p", "n1", "a"), age: time.Second, want: 1},
		"view pending, past TTL":  {view: b.MakePod("ns", "p").UID("p").Obj(), age: 3 * time.Minute, want: 0},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			now := time.Unix(1000, 0)
			book := &Book{Grace: 30 * time.Second, TTL: 2 * time.Minute, Now: func() time.Time { return now }}
			if n := book.Seed([]*corev1.Pod{boundPod("p", "n1", "a"), boundPod("unannotated", "n1"), b.MakePod("ns", "pending").Obj()}); n != 1 {
				t.Errorf("seeded %d pods, want 1", n)
			}
			view := &fakeView{}
			if tc.view != nil {
				view.pods = []*corev1.Pod{tc.view}
			}
			now = now.Add(tc.age)
			got := 0
			if _, err := book.Reserve("n1", "other", view, func(onNode []*corev1.Pod, _ Bookings) (*Booking, error) {
				for _, p := range onNode {
					if p.UID == "p" {
						got++
					}
				}
				return nil, nil
			}); err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("pod p among the node's pods %d times, want %d", got, tc.want)
			}
		})
	}
}

// TestBookReserveRetriedAndExcluded: the same bind asked twice gets its
// first booking back without choosing again; a second pod on the node is
// chosen with the first one's NICs held.
func TestBookReserveRetriedAndExcluded(t *testing.T) {
	book := &Book{Grace: time.Minute, TTL: 2 * time.Minute}
	n, _ := providerNode("n1", "p", "a", "b")
	f := topology.Build(testConfig, []*corev1.Node{n}, nil)
	chooser := &Chooser{Config: testConfig}
	view := &fakeView{}
	calls := 0
	choose := func(onNode []*corev1.Pod, bk Bookings) (*Booking, error) {
		calls++
		l := chooser.Ledger(f, "n1", onNode, bk)
		for _, nic := range []topology.NICID{"rdma-0", "rdma-1", "rdma-2", "rdma-3"} {
			if l.HolderCount("n1", nic) == 0 {
				return &Booking{Zones: []ledger.ZoneUse{{NUMA: 0, NICs: []topology.NICID{nic}}}}, nil
			}
		}
		return nil, nil
	}
	first, err := book.Reserve("n1", "u1", view, choose)
	if err != nil || first == nil {
		t.Fatalf("first: %v %v", first, err)
	}
	again, err := book.Reserve("n1", "u1", view, choose)
	if err != nil || calls != 1 || !cmp.Equal(again.NICs(), first.NICs()) {
		t.Errorf("retried bind: %v (calls %d, err %v), want %v", again, calls, err, first)
	}
	second, err := book.Reserve("n1", "u2", view, choose)
	if err != nil || second == nil || cmp.Equal(second.NICs(), first.NICs()) {
		t.Errorf("second pod: %v, first %v (err %v)", second, first, err)
	}
	if node, x, ok := book.Booked("u2"); !ok || node != "n1" || !cmp.Equal(x.NICs(), second.NICs()) {
		t.Errorf("Booked(u2) = %s %v %v", node, x, ok)
	}
	if bookings, seeded := book.Len(); bookings != 2 || seeded != 0 {
		t.Errorf("book holds %d bookings, %d seeded; want 2, 0", bookings, seeded)
	}
	book.Reset()
	if _, _, ok := book.Booked("u1"); ok {
		t.Errorf("Reset left u1's booking")
	}
}

// TestBookConcurrentBindsNeverShareNIC: 16 binds race for the 16 NICs of
// four provider nodes (4 one-NIC pods a node, the informer never showing
// any of them): each NIC goes to exactly one pod.
func TestBookConcurrentBindsNeverShareNIC(t *testing.T) {
	var nodes []*corev1.Node
	var cnrs []*v1alpha1.CustomNodeResource
	for i := 0; i < 4; i++ {
		n, c := providerNode(fmt.Sprintf("n%d", i), "p", "a", "b")
		nodes, cnrs = append(nodes, n), append(cnrs, c)
	}
	f := topology.Build(testConfig, nodes, cnrs)
	c := &fakeCluster{f: f}
	for i := 0; i < 16; i++ {
		c.pods = append(c.pods, b.MakePod("ns", fmt.Sprintf("p%d", i)).UID(fmt.Sprintf("u%d", i)).
			Req(topology.DefaultGPUResource, "1").Req(topology.DefaultRDMAResource, "1").Req(corev1.ResourceCPU, "1").Obj())
	}
	w := newTestWebhook(c)
	var wg sync.WaitGroup
	got := make([]map[string]string, 16)
	for i := 0; i < 16; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			pod := c.pods[i].DeepCopy()
			_, got[i] = bindNoApply(t, w, pod, fmt.Sprintf("n%d", i%4))
		}(i)
	}
	wg.Wait()
	holder := map[string]int{}
	for i, ann := range got {
		nics, err := ledger.ParseNICs(ann[ledger.AnnotationNICs])
		if err != nil || len(nics) != 1 {
			t.Errorf("pod %d: NICs %q", i, ann[ledger.AnnotationNICs])
			continue
		}
		key := fmt.Sprintf("n%d/%s", i%4, nics[0])
		if other, ok := holder[key]; ok {
			t.Errorf("NIC %s given to pods %d and %d", key, other, i)
		}
		holder[key] = i
	}
	keys := make([]string, 0, len(holder))
	for k := range holder {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	if len(keys) != 16 {
		t.Errorf("%d distinct NICs handed out, want 16: %v", len(keys), keys)
	}
}
