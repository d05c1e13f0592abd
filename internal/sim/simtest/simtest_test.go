package simtest

import (
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	schedulingv1beta1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"

	"github.com/rdmatopo/rdmatopo/config"
	"github.com/rdmatopo/rdmatopo/core/ledger"
	"github.com/rdmatopo/rdmatopo/internal/sim"
	"github.com/rdmatopo/rdmatopo/internal/testing/builders"
)

// gang returns an Inqueue PodGroup of n pods of one whole NUMA zone each
// (4 GPUs, 2 NICs).
func gang(name string, n int) (*schedulingv1beta1.PodGroup, []*corev1.Pod) {
	pg := builders.MakePodGroup("ns", name).MinMember(int32(n)).Phase(schedulingv1beta1.PodGroupInqueue).Obj()
	var pods []*corev1.Pod
	for i := 0; i < n; i++ {
		pods = append(pods, builders.MakePod("ns", fmt.Sprintf("%s-%d", name, i)).Group(name).
			Req(builders.GPUResource, "4").Req(builders.RDMAResource, "2").Req(corev1.ResourceCPU, "4").
			SchedulerName("volcano").Obj())
	}
	return pg, pods
}

// TestScenarioSessions: a gang fills leaf A and another leaf B; a third
// waits until a pod of the first finishes (Succeeded: its gang is owed no
// replacement), is submitted once although handed to Submit every session,
// and binds where the finished pod was.
func TestScenarioSessions(t *testing.T) {
	nodes, cnrs := builders.TwoLeavesFourNodes()
	for _, n := range nodes {
		n.Status.Allocatable[corev1.ResourcePods] = resource.MustParse("110")
		n.Status.Capacity[corev1.ResourcePods] = resource.MustParse("110")
	}
	c := Cluster{Nodes: nodes, CNRs: cnrs}
	hard := map[string]string{ledger.AnnotationMode: "hard", ledger.AnnotationHighestTier: "s0"}
	for _, name := range []string{"a", "b"} {
		pg, pods := gang(name, 4)
		c.PodGroups, c.Pods = append(c.PodGroups, pg), append(c.Pods, pods...)
	}
	sc := Start(t, config.SchedulerConf, c, sim.Options{})

	o := sc.Session()
	if len(o.Binds) != 8 || len(o.Evicted) != 0 {
		t.Fatalf("session 1: %d binds, evicted %v; want 8 binds and no eviction", len(o.Binds), o.Evicted)
	}
	leaf := func(b *sim.BindRecord) string { return b.Pod.Annotations[ledger.AnnotationS0] }
	for name, b := range o.Binds {
		if b.Node == "" || leaf(b) == "" {
			t.Errorf("%s bound to %q under leaf %q", name, b.Node, leaf(b))
		}
	}
	if pg := o.PodGroups["ns/a"]; pg == nil || pg.Status.Phase != schedulingv1beta1.PodGroupRunning {
		t.Errorf("PodGroup ns/a = %v, want Running", pg)
	}

	pg, pods := gang("c", 1)
	pg.Annotations = hard
	c.PodGroups, c.Pods = append(c.PodGroups, pg), append(c.Pods, pods...)
	sc.Submit(c.PodGroups, c.Pods)
	if o := sc.Session(); len(o.Binds) != 0 {
		t.Fatalf("session 2: bound %v on a full fabric", o.Binds)
	}
	freed := o.Binds["ns/a-0"]
	sc.Complete("ns/a-0")
	sc.Submit(c.PodGroups, c.Pods) // a-0 is not submitted again
	o = sc.Session()
	got := map[string]string{}
	for name, b := range o.Binds {
		got[name] = b.Node + "/" + leaf(b)
	}
	if diff := cmp.Diff(map[string]string{"ns/c-0": freed.Node + "/" + leaf(freed)}, got); diff != "" {
		t.Errorf("session 3 binds (-want,+got):\n%s", diff)
	}
	for _, ps := range sc.Sim.Pods() {
		if strings.HasPrefix(ps.Pod.Name, "a-0") && ps.Pod.Status.Phase != corev1.PodSucceeded {
			t.Errorf("finished pod %s is back in phase %q", ps.Pod.Name, ps.Pod.Status.Phase)
		}
	}
}
