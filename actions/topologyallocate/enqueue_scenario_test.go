package topologyallocate_test

import (
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	schedulingv1beta1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"

	"github.com/rdmatopo/rdmatopo/internal/testing/builders"
)

// TestEnqueueGatesPendingGangs: with enqueue among the conf's actions, as
// in the project's conf, a pending gang is placed only once enqueue admits
// it (its minResources fit its queue's room); topology-allocate does not
// move it to Inqueue itself, as it does when enqueue is not configured.
func TestEnqueueGatesPendingGangs(t *testing.T) {
	cases := map[string]struct {
		// gpus is the PodGroup's minResources GPU count.
		gpus      int
		wantBound int
		wantPhase schedulingv1beta1.PodGroupPhase
	}{
		"minResources within the cluster: admitted and placed": {
			gpus: 16, wantBound: 4, wantPhase: schedulingv1beta1.PodGroupRunning,
		},
		"minResources beyond the cluster: stays pending": {
			gpus: 64, wantBound: 0, wantPhase: schedulingv1beta1.PodGroupPending,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			c := &cluster{}
			for i := 1; i <= 4; i++ {
				c.addNode(fmt.Sprintf("n%d", i), "A", "B")
			}
			c.addJob("g", 4, 4, 2, nil)
			c.pgs[0] = builders.MakePodGroup("ns", "g").MinMember(4).
				MinResources(corev1.ResourceList{builders.GPUResource: *resource.NewQuantity(int64(tc.gpus), resource.DecimalSI)}).Obj()
			o := runSession(t, c)
			if got := o.binds.Count("ns", "g"); got != tc.wantBound {
				t.Errorf("%d pods bound, want %d", got, tc.wantBound)
			}
			if got := o.pgs["ns/g"].Status.Phase; got != tc.wantPhase {
				t.Errorf("PodGroup phase %s, want %s", got, tc.wantPhase)
			}
			checkBinds(t, o)
		})
	}
}
