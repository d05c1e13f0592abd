package integration

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	nodev1alpha1 "github.com/kubewharf/katalyst-api/pkg/apis/node/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
)

// FailNIC makes the node's KCNR stop listing a NIC (its zone is gone), as
// katalyst's agent reports a NIC that dropped off the bus; the KCNR keeps
// its other zones and allocations.
func (f *fabric) FailNIC(ctx context.Context, node, pci string) {
	f.t.Helper()
	cnr := f.cnrs[node].DeepCopy()
	for _, z := range numaZones(cnr) {
		z.Children = slices.DeleteFunc(z.Children, func(c *nodev1alpha1.TopologyZone) bool {
			return c != nil && c.Type == nodev1alpha1.TopologyTypeNIC && c.Name == pci
		})
	}
	f.writeCNR(ctx, cnr)
}

// RestoreNIC lists the NIC again, free.
func (f *fabric) RestoreNIC(ctx context.Context, node, pci string) {
	f.t.Helper()
	cnr := f.cnrs[node].DeepCopy()
	info := f.nics[node][pci]
	z := numaZones(cnr)[info.NUMA]
	for _, c := range z.Children {
		if c != nil && c.Name == pci {
			return
		}
	}
	one := corev1.ResourceList{rdmaResource: resource.MustParse("1")}
	z.Children = append(z.Children, &nodev1alpha1.TopologyZone{Type: nodev1alpha1.TopologyTypeNIC, Name: pci,
		Resources: nodev1alpha1.Resources{Allocatable: &one, Capacity: &one}})
	slices.SortFunc(z.Children, func(a, b *nodev1alpha1.TopologyZone) int { return strings.Compare(a.Name, b.Name) })
	f.writeCNR(ctx, cnr)
}

// eventsOn lists the Events with the reason on an object (namespace "" for
// cluster-scoped objects, whose Events the recorder puts in "default").
func eventsOn(t *testing.T, e *Env, ns, name, reason string) []corev1.Event {
	t.Helper()
	if ns == "" {
		ns = metav1.NamespaceDefault
	}
	l, err := e.Kube.CoreV1().Events(ns).List(context.Background(), metav1.ListOptions{
		FieldSelector: fields.Set{"involvedObject.name": name, "reason": reason}.String()})
	if err != nil {
		t.Fatalf("list %s events on %s: %v", reason, name, err)
	}
	return l.Items
}

// TestHardwareFaultNICRemovedReplacementBackUnderLeaf: a hard-s0 gang of
// three runs under one leaf. One of its pods' NICs leaves the node's KCNR;
// the pod is deleted and the Volcano job controller re-creates it. The
// replacement lands under the same leaf, on NICs the KCNRs list, never on
// the failed NIC, and the PodGroup gets a ReplacementPlaced Event naming
// the failed NIC.
func TestHardwareFaultNICRemovedReplacementBackUnderLeaf(t *testing.T) {
	e := requireEnv(t)
	ctx := context.Background()
	f := newFabric(t, e)
	ns := newNamespace(t, e)
	// Four nodes, NUMA-0 NICs under leaf 0 and NUMA-1 NICs under leaf 1:
	// the gang takes three zones of one leaf, the fourth is left.
	for i := 1; i <= 4; i++ {
		f.AddNode(ctx, nodeSpec{Index: i, Leaves: [2]int{0, 1}})
	}
	job := volcanoJob{Name: "faulty", Workers: 2, Shape: trainer, Contract: hardS0}
	job.Create(t, e, ns)
	pods := waitBound(t, e, ns, job.Selector(), job.Size(), placeTimeout)
	_, leaf := checkGangUnderOneS0(t, f, pods, job.Shape)
	f.RecordAllocations(ctx, pods)

	lost := pods[len(pods)-1]
	node := lost.Spec.NodeName
	failed := splitList(lost.Annotations[annNICs])[0]
	f.FailNIC(ctx, node, failed)
	deletePods(t, e, ns, metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("metadata.name", lost.Name).String()})
	f.RecordAllocations(ctx, pods[:len(pods)-1])

	var replacement corev1.Pod
	eventually(t, placeTimeout, func() (bool, string) {
		for _, p := range listPods(t, e, ns, job.Selector()) {
			if p.Name == lost.Name && p.UID != lost.UID && p.Spec.NodeName != "" {
				replacement = p
				return true, ""
			}
		}
		return false, "replacement of " + lost.Name + " not bound yet"
	})
	nics := splitList(replacement.Annotations[annNICs])
	for _, nic := range nics {
		if replacement.Spec.NodeName == node && nic == failed {
			t.Errorf("replacement %s bound on the failed NIC %s of %s", replacement.Name, nic, node)
		}
		if got := f.nics[replacement.Spec.NodeName][nic].S0; got != leaf {
			t.Errorf("replacement %s on %s NIC %s under leaf %q, want the gang's leaf %q", replacement.Name,
				replacement.Spec.NodeName, nic, got, leaf)
		}
	}
	pg := podGroupOf(t, e, replacement)
	eventually(t, placeTimeout, func() (bool, string) {
		evs := eventsOn(t, e, ns, pg.Name, "ReplacementPlaced")
		for _, ev := range evs {
			if strings.Contains(ev.Message, "NIC "+failed+" on node "+node+" failed") &&
				strings.Contains(ev.Message, "placed on node "+replacement.Spec.NodeName) {
				return true, ""
			}
		}
		return false, fmt.Sprintf("%d ReplacementPlaced events on PodGroup %s, none naming NIC %s and node %s", len(evs), pg.Name,
			failed, replacement.Spec.NodeName)
	})
}

// TestHardwareFaultFlappingNICKeptOut: a NIC fails and comes back three
// times within the flap window. Once back it is kept out for its cool-down:
// pods pinned to its node take every other NIC, the one left over waits
// though the KCNR lists the NIC free, and the node's KCNR carries a
// NICCoolingDown Event.
func TestHardwareFaultFlappingNICKeptOut(t *testing.T) {
	e := requireEnv(t)
	ctx := context.Background()
	f := newFabric(t, e)
	ns := newNamespace(t, e)
	node := f.AddNode(ctx, nodeSpec{Index: 1, Leaves: [2]int{0, 1}})

	// A scheduler whose cool-down outlasts the test.
	raw, err := os.ReadFile(e.SchedulerConf())
	if err != nil {
		t.Fatal(err)
	}
	const anchor = "    arguments:\n"
	if !strings.Contains(string(raw), anchor) {
		t.Fatalf("the project's conf has no %q line", anchor)
	}
	conf := filepath.Join(t.TempDir(), "flap.conf")
	text := strings.Replace(string(raw), anchor, anchor+"      nicFlapCount: 3\n      nicFlapWindow: 10m\n      nicCooldown: 30m\n", 1)
	if err := os.WriteFile(conf, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	e.StopScheduler()
	t.Cleanup(func() {
		e.StopScheduler()
		if err := e.StartScheduler(context.Background()); err != nil {
			t.Errorf("restart the environment's scheduler: %v", err)
		}
	})
	if err := e.StartSchedulerConf(ctx, conf); err != nil {
		t.Fatal(err)
	}

	// The new scheduler's fault tracker starts empty and counts a failure
	// only for a NIC it has seen listed: let it see the node whole before
	// the first failure, or that failure goes unseen (a NIC gone at its
	// first look is not known to it at all).
	waitSchedulerCycles(t, e, 2, func() {})
	flapping := zoneNICs[0][0]
	for i := 0; i < 3; i++ {
		f.FailNIC(ctx, node, flapping)
		waitSchedulerCycles(t, e, 2, func() {})
		f.RestoreNIC(ctx, node, flapping)
		waitSchedulerCycles(t, e, 2, func() {})
	}
	eventually(t, placeTimeout, func() (bool, string) {
		evs := eventsOn(t, e, "", node, "NICCoolingDown")
		return len(evs) > 0, fmt.Sprintf("%d NICCoolingDown events on KCNR %s", len(evs), node)
	})

	// Four single-NIC pods pinned to the node: three NICs are usable.
	one := podShape{GPUs: 1, NICs: 1}
	for i := 0; i < 4; i++ {
		p := rdmaPod(ns, fmt.Sprintf("pin-%d", i), one, nil)
		p.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
			RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
				MatchFields: []corev1.NodeSelectorRequirement{{Key: "metadata.name", Operator: corev1.NodeSelectorOpIn, Values: []string{node}}},
			}}},
		}}
		p.Labels = map[string]string{"app": "pin"}
		if _, err := e.Kube.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatalf("create pod %s: %v", p.Name, err)
		}
	}
	sel := metav1.ListOptions{LabelSelector: "app=pin"}
	eventually(t, placeTimeout, func() (bool, string) {
		bound := 0
		for _, p := range listPods(t, e, ns, sel) {
			if p.Spec.NodeName != "" {
				bound++
			}
		}
		return bound == 3, fmt.Sprintf("%d of 4 pinned pods bound, want 3", bound)
	})
	// It stays so while the NIC cools down: a few more cycles change
	// nothing.
	waitSchedulerCycles(t, e, 3, func() {})
	for _, p := range listPods(t, e, ns, sel) {
		if p.Spec.NodeName == "" {
			continue
		}
		if slices.Contains(splitList(p.Annotations[annNICs]), flapping) {
			t.Errorf("pod %s bound on the cooling NIC %s", p.Name, flapping)
		}
	}
	bound := 0
	for _, p := range listPods(t, e, ns, sel) {
		if p.Spec.NodeName != "" {
			bound++
		}
	}
	if bound != 3 {
		t.Errorf("%d pinned pods bound during the cool-down, want 3", bound)
	}
}
