package sim

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/rdmatopo/rdmatopo/internal/testing/builders"
)

// TestPodListsCopyPod checks that copyPod returns a copy equal to the pod,
// leaves the pod as it was, and makes equal resource lists of different
// pods (containers and init containers, requests and limits) one list
// while lists that differ in a name or a quantity stay apart.
func TestPodListsCopyPod(t *testing.T) {
	worker := func(name string) *builders.PodWrapper {
		return builders.MakePod("ns", name).Req(builders.GPUResource, "4").Req(builders.RDMAResource, "2").Req(corev1.ResourceCPU, "16")
	}
	sidecar := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}
	requests := func(i int) func(*corev1.Pod) corev1.ResourceList {
		return func(p *corev1.Pod) corev1.ResourceList { return p.Spec.Containers[i].Resources.Requests }
	}
	limits := func(p *corev1.Pod) corev1.ResourceList { return p.Spec.Containers[0].Resources.Limits }
	initRequests := func(p *corev1.Pod) corev1.ResourceList { return p.Spec.InitContainers[0].Resources.Requests }

	tests := map[string]struct {
		a, b   *builders.PodWrapper
		list   func(*corev1.Pod) corev1.ResourceList
		shared bool
	}{
		"equal requests": {a: worker("a"), b: worker("b"), list: requests(0), shared: true},
		"equal limits":   {a: worker("a"), b: worker("b"), list: limits, shared: true},
		"equal requests of a second container": {
			a: worker("a").Container("side", sidecar), b: worker("b").Container("side", sidecar),
			list: requests(1), shared: true,
		},
		"equal init container requests": {
			a: worker("a").InitContainer("init", sidecar), b: worker("b").InitContainer("init", sidecar),
			list: initRequests, shared: true,
		},
		"other quantity": {a: worker("a"), b: worker("b").Req(corev1.ResourceCPU, "8"), list: requests(0)},
		"other name":     {a: worker("a"), b: worker("b").Req(corev1.ResourceMemory, "1Gi"), list: requests(0)},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			a, b := tc.a.Obj(), tc.b.Obj()
			wantA, wantB := a.DeepCopy(), b.DeepCopy()
			var l podLists
			ca, cb := l.copyPod(a), l.copyPod(b)
			if diff := cmp.Diff(wantA, a); diff != "" {
				t.Errorf("first pod changed (-want,+got):\n%s", diff)
			}
			if diff := cmp.Diff(wantA, ca); diff != "" {
				t.Errorf("copy of the first pod (-want,+got):\n%s", diff)
			}
			if diff := cmp.Diff(wantB, cb); diff != "" {
				t.Errorf("copy of the second pod (-want,+got):\n%s", diff)
			}
			la, lb := tc.list(ca), tc.list(cb)
			if len(la) == 0 || len(lb) == 0 {
				t.Fatal("builder pod without the list this case compares")
			}
			if got := sameMap(la, lb); got != tc.shared {
				t.Errorf("lists shared = %t, want %t", got, tc.shared)
			}
			if sameMap(tc.list(a), la) || sameMap(tc.list(b), lb) {
				t.Error("a copy shares a list with the pod it was copied from")
			}
		})
	}
	t.Run("no lists", func(t *testing.T) {
		var l podLists
		p := &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c"}}}}
		if got := l.copyPod(p); got.Spec.Containers[0].Resources.Requests != nil || got.Spec.Containers[0].Resources.Limits != nil {
			t.Errorf("copy of a pod without resource lists has lists: %v", got.Spec.Containers[0].Resources)
		}
	})
}

// sameMap reports whether a and b are one map.
func sameMap(a, b corev1.ResourceList) bool {
	if len(a) != len(b) {
		return false
	}
	const probe = corev1.ResourceName("rdmatopo.io/probe")
	if _, ok := a[probe]; ok {
		return false
	}
	a[probe] = resource.Quantity{}
	_, ok := b[probe]
	delete(a, probe)
	return ok
}
