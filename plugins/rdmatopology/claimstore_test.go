package rdmatopology

import (
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/rdmatopo/rdmatopo/core/preemption"
	"github.com/rdmatopo/rdmatopo/core/topology"
)

// claimFor builds a claim of the leaf room s0 for job.
func claimFor(job, s0 string, nodes ...string) *preemption.Claim {
	c := &preemption.Claim{Job: job, Name: "ns/" + job, Priority: 100,
		Created: metav1.NewTime(time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)),
		Room:    "s0 " + s0, S0s: map[topology.S0ID]bool{topology.S0ID(s0): true}, Nodes: map[string]bool{}}
	for _, n := range nodes {
		c.Nodes[n] = true
	}
	return c
}

// renewedAt is c renewed at now, as a reader renews what it reads back.
func renewedAt(c *preemption.Claim, now time.Time) *preemption.Claim {
	out := *c
	out.Renewed = metav1.NewTime(now)
	return &out
}

// claimsConfigMap builds the claims ConfigMap with data.
func claimsConfigMap(data map[string]string) *v1.ConfigMap {
	return &v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: ClaimsConfigMap, Namespace: "volcano-system"}, Data: data}
}

func encoded(t *testing.T, claims ...*preemption.Claim) string {
	t.Helper()
	b, err := preemption.EncodeClaims(claims)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// writes counts the ConfigMap creates and updates a fake client saw.
func writes(c *fake.Clientset) int {
	n := 0
	for _, a := range c.Actions() {
		if a.GetResource().Resource == "configmaps" && (a.GetVerb() == "create" || a.GetVerb() == "update") {
			n++
		}
	}
	return n
}

// waitFor polls cond until it holds or the deadline passes.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestClaimsStoreLoad: a new leader reads back the claims its scheduler's
// key holds; a missing ConfigMap or key is no claim, and an unreadable
// record is ignored (topology-preempt names the claims again).
func TestClaimsStoreLoad(t *testing.T) {
	a := claimFor("uid-a", "leaf-1", "n1", "n2")
	now := time.Date(2026, 3, 1, 11, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name    string
		objects []runtime.Object
		want    []*preemption.Claim
	}{
		{name: "no ConfigMap"},
		{name: "another scheduler's key only", objects: []runtime.Object{claimsConfigMap(map[string]string{"other.json": encoded(t, a)})}},
		{name: "claims", objects: []runtime.Object{claimsConfigMap(map[string]string{"volcano.json": encoded(t, a)})}, want: []*preemption.Claim{renewedAt(a, now)}},
		{name: "unreadable", objects: []runtime.Object{claimsConfigMap(map[string]string{"volcano.json": `{"version":7}`})}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			client := fake.NewSimpleClientset(tc.objects...)
			cs := &claimsStore{namespace: "volcano-system", key: ClaimsKey("volcano")}
			stop := make(chan struct{})
			defer close(stop)
			got := cs.load(client, stop, now)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("loaded claims (-want,+got):\n%s", diff)
			}
		})
	}
}

// TestClaimsStoreWrites: claims are written when they change, not when
// they are the same as last read or written; other schedulers' keys are
// left alone; a failed write is tried again by the next session's save.
func TestClaimsStoreWrites(t *testing.T) {
	a, b := claimFor("uid-a", "leaf-1", "n1"), claimFor("uid-b", "leaf-2", "n3")
	client := fake.NewSimpleClientset(claimsConfigMap(map[string]string{"other.json": "kept", "volcano.json": encoded(t, a)}))
	cs := &claimsStore{namespace: "volcano-system", key: ClaimsKey("volcano")}
	stop := make(chan struct{})
	defer close(stop)
	if got := cs.load(client, stop, time.Time{}); len(got) != 1 {
		t.Fatalf("loaded %d claims, want 1", len(got))
	}
	stored := func() map[string]string {
		cm, err := client.CoreV1().ConfigMaps("volcano-system").Get(t.Context(), ClaimsConfigMap, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return cm.Data
	}

	cs.save([]*preemption.Claim{a}) // as read: nothing to write
	renewed := *a
	renewed.Renewed = metav1.NewTime(time.Now())
	cs.save([]*preemption.Claim{&renewed}) // renewed only: nothing to write
	cs.save([]*preemption.Claim{a, b})
	waitFor(t, "the second claim written", func() bool { return stored()["volcano.json"] == encoded(t, a, b) })
	if got := stored()["other.json"]; got != "kept" {
		t.Errorf("other scheduler's key = %q, want it kept", got)
	}
	if n := writes(client); n != 1 {
		t.Errorf("%d writes, want 1 (the unchanged claims are not written)", n)
	}
	cs.save([]*preemption.Claim{a, b})
	cs.save(nil)
	waitFor(t, "the claims emptied", func() bool { return stored()["volcano.json"] == encoded(t) })
	if n := writes(client); n != 2 {
		t.Errorf("%d writes, want 2", n)
	}

	// Writes fail (as without RBAC): the record is written again by a
	// later save once they succeed.
	fail := true
	client.PrependReactor("update", "configmaps", func(k8stesting.Action) (bool, runtime.Object, error) {
		if fail {
			return true, nil, apierrors.NewForbidden(v1.Resource("configmaps"), ClaimsConfigMap, fmt.Errorf("no rule"))
		}
		return false, nil, nil
	})
	cs.save([]*preemption.Claim{b})
	waitFor(t, "the failed write forgotten", func() bool {
		cs.mu.Lock()
		defer cs.mu.Unlock()
		return cs.last == nil
	})
	fail = false
	cs.save([]*preemption.Claim{b})
	waitFor(t, "the claims written after the failure", func() bool { return stored()["volcano.json"] == encoded(t, b) })
}

// TestClaimsStoreCreates: without the ConfigMap, the first change creates
// it.
func TestClaimsStoreCreates(t *testing.T) {
	client := fake.NewSimpleClientset()
	cs := &claimsStore{namespace: "volcano-system", key: ClaimsKey("volcano")}
	stop := make(chan struct{})
	defer close(stop)
	cs.load(client, stop, time.Time{})
	cs.save(nil) // empty as read: nothing
	a := claimFor("uid-a", "leaf-1", "n1")
	cs.save([]*preemption.Claim{a})
	waitFor(t, "the ConfigMap created", func() bool {
		cm, err := client.CoreV1().ConfigMaps("volcano-system").Get(t.Context(), ClaimsConfigMap, metav1.GetOptions{})
		return err == nil && cm.Data["volcano.json"] == encoded(t, a)
	})
	if n := writes(client); n != 1 {
		t.Errorf("%d writes, want 1", n)
	}
}
