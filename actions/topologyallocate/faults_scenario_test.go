package topologyallocate_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/kubewharf/katalyst-api/pkg/apis/node/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"
	schedulingv1beta1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"

	"github.com/rdmatopo/rdmatopo/config"
	"github.com/rdmatopo/rdmatopo/core/ledger"
	"github.com/rdmatopo/rdmatopo/internal/sim"
	"github.com/rdmatopo/rdmatopo/internal/sim/simtest"
	"github.com/rdmatopo/rdmatopo/internal/testing/builders"
	"github.com/rdmatopo/rdmatopo/plugins/rdmatopology"
)

// faultNode describes a provider-shaped node of a fault scenario: NUMA 0's
// NICs under leaf0, NUMA 1's under leaf1, the running pods it holds, and
// its failed NICs (gone from the KCNR, or listed at allocatable 0).
type faultNode struct {
	name, leaf0, leaf1 string
	pods               []zonePod
	gone, zero         []string
}

// cnr is the node's KCNR as its agent reports it.
func (n faultNode) cnr() *v1alpha1.CustomNodeResource {
	w := builders.MakeCNR(n.name).Policy(v1alpha1.TopologyPolicySingleNUMANodeContainerLevel).
		Zone(0, 4, 64000).Zone(1, 4, 64000)
	for numa, leaf := range []string{n.leaf0, n.leaf1} {
		for _, pci := range builders.NUMANICs[numa] {
			if !slices.Contains(n.gone, pci) {
				w.NIC(pci, numa, leaf)
			}
			if slices.Contains(n.zero, pci) {
				w.Units(pci, 0)
			}
		}
	}
	for _, zp := range n.pods {
		consumer := builders.Consumer("ns", zp.name, "u-"+zp.name)
		for _, pci := range builders.NUMANICs[zp.numa] {
			if !slices.Contains(n.gone, pci) {
				w.UseNIC(pci, consumer)
			}
		}
		w.Alloc(zp.numa, consumer, corev1.ResourceList{builders.GPUResource: resource.MustParse("4")})
	}
	return w.Obj()
}

// runningPod is a pod of the node holding a whole zone, annotated as
// rdmatopo annotates the pods it places.
func runningPod(node string, zp zonePod) *corev1.Pod {
	nics := builders.NUMANICs[zp.numa]
	return builders.MakePod("ns", zp.name).UID("u-"+zp.name).Node(node).Phase(corev1.PodRunning).Group(zp.group).
		Req("cpu", "4").Req("memory", "8Gi").Req(builders.GPUResource, "4").Req(builders.RDMAResource, "2").
		Annotation(ledger.AnnotationNICs, nics[0]+","+nics[1]).Annotation(ledger.AnnotationNUMA, fmt.Sprint(zp.numa)).
		SchedulerName("volcano").Obj()
}

// recreated is a pod re-created by its job controller after a loss: same
// name, new UID, pending.
func recreated(group, name string) *corev1.Pod {
	p := builders.MakePod("ns", name).Group(group).Req("cpu", "4").Req("memory", "8Gi").
		Req(builders.GPUResource, "4").Req(builders.RDMAResource, "2").SchedulerName("volcano").Obj()
	p.UID = types.UID("u-" + name + "-2")
	return p
}

// startFaults starts a scenario on the nodes, with running gangs of
// minMember members each, and runs a first session in which nothing fails.
func startFaults(t *testing.T, nodes []faultNode, gangs map[string]int) *simtest.Scenario {
	t.Helper()
	return startFaultsWith(t, nodes, gangs, nil)
}

// startFaultsWith is startFaults with annotations on some gangs' PodGroups
// (by gang name).
func startFaultsWith(t *testing.T, nodes []faultNode, gangs map[string]int, ann map[string]map[string]string) *simtest.Scenario {
	t.Helper()
	var c simtest.Cluster
	for _, n := range nodes {
		c.Nodes = append(c.Nodes, builders.ProviderNode(n.name).
			Resource("pods", "110").Resource("memory", "512Gi").Ready(corev1.ConditionTrue).Obj())
		c.CNRs = append(c.CNRs, n.cnr())
		for _, zp := range n.pods {
			c.Pods = append(c.Pods, runningPod(n.name, zp))
		}
	}
	for _, name := range sortedNames(gangs) {
		c.PodGroups = append(c.PodGroups, builders.MakePodGroup("ns", name).MinMember(int32(gangs[name])).
			Phase("Running").Annotations(ann[name]).Obj())
	}
	sc := simtest.Start(t, config.SchedulerConf, c, sim.Options{})
	if o := sc.Session(); len(o.Binds) != 0 {
		t.Fatalf("first session bound %d pods, want none", len(o.Binds))
	}
	return sc
}

// addPods adds pods the scenario had under the same names before (a job
// controller re-creating them).
func addPods(t *testing.T, sc *simtest.Scenario, pods ...*corev1.Pod) {
	t.Helper()
	for _, p := range pods {
		if err := sc.Sim.AddPod(p); err != nil {
			t.Fatalf("re-create %s: %v", p.Name, err)
		}
	}
}

func sortedNames(m map[string]int) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// eventsWith returns the session's Events whose reason is reason.
func eventsWith(o *simtest.Outcome, reason string) []string {
	var out []string
	for _, e := range o.Events {
		if strings.Contains(e, " "+reason+" ") {
			out = append(out, e)
		}
	}
	return out
}

// TestLeafLostWholeScenario: a gang of four runs two pods under leaf A (n1,
// n2 NUMA 0) and two under B (NUMA 1). Every NIC under A fails at once
// (gone from n1's KCNR, allocatable 0 on n2's): the leaf is reported once,
// the two pods under it fail and are re-created, and their replacements go
// under the gang's S1, never under A, ahead of a pending gang, and the
// PodGroup names what failed and where each replacement went.
func TestLeafLostWholeScenario(t *testing.T) {
	nodes := []faultNode{
		{name: "n1", leaf0: "A", leaf1: "B", pods: []zonePod{{"g", "g-0", 0}, {"g", "g-2", 1}}},
		{name: "n2", leaf0: "A", leaf1: "B", pods: []zonePod{{"g", "g-1", 0}, {"g", "g-3", 1}}},
		{name: "n3", leaf0: "C", leaf1: "C"},
	}
	sc := startFaults(t, nodes, map[string]int{"g": 4})

	// Leaf A fails: n1 drops its NUMA-0 NICs, n2 lists them at 0.
	nodes[0].gone = builders.NUMANICs[0][:]
	nodes[1].zero = builders.NUMANICs[0][:]
	for _, n := range nodes[:2] {
		sc.Sim.UpsertCNR(n.cnr())
	}
	sc.Finish("ns/g-0", "ns/g-1")
	// A pending gang of two competes for the same room.
	other := builders.MakePodGroup("ns", "other").MinMember(2).Phase("Inqueue").Obj()
	addPods(t, sc, recreated("g", "g-0"), recreated("g", "g-1"))
	sc.Submit([]*schedulingv1beta1.PodGroup{other}, []*corev1.Pod{recreated("other", "other-0"), recreated("other", "other-1")})

	o := sc.Session()
	if got := eventsWith(o, rdmatopology.ReasonLeafFailed); len(got) != 1 || !strings.Contains(got[0], "every NIC under leaf A failed") {
		t.Errorf("LeafFailed events = %q, want one for leaf A", got)
	}
	for _, name := range []string{"g-0", "g-1"} {
		b := o.Binds["ns/"+name]
		if b == nil {
			t.Fatalf("replacement %s not bound; PodGroup condition %q", name, condition(o.PodGroups["ns/g"]))
		}
		if leaf := b.Pod.Annotations[ledger.AnnotationS0]; leaf != "C" {
			t.Errorf("replacement %s under leaf %q on %s, want C (the S1's only healthy leaf with room)", name, leaf, b.Node)
		}
	}
	for name, b := range o.Binds {
		if b.Pod.Annotations[ledger.AnnotationS0] == "A" {
			t.Errorf("%s bound under failed leaf A", name)
		}
	}
	placed := eventsWith(o, rdmatopology.ReasonReplacementPlaced)
	if len(placed) != 2 {
		t.Fatalf("ReplacementPlaced events = %q, want 2", placed)
	}
	for _, e := range placed {
		if !strings.Contains(e, "leaf A failed") || !strings.Contains(e, "placed on node n3") {
			t.Errorf("event %q does not name the failed leaf and the replacement's node", e)
		}
	}
	// The failed leaf is reported once, however many sessions see it.
	if o := sc.Session(); len(eventsWith(o, rdmatopology.ReasonLeafFailed)) != 0 {
		t.Errorf("leaf A reported again in the next session")
	}
}

// TestNodeNotReadyScenario: a gang of two runs under leaf A on n1 and n2; n1
// goes NotReady (tainted as the node lifecycle controller taints it) and
// its pod fails. Until the job controller re-creates it, the room left
// under A (n3's NUMA 0) is kept for the replacement, so a pending gang
// takes n3's NUMA 1 (leaf B) instead; the replacement then lands under A,
// not on n1, with an Event naming the failed node.
func TestNodeNotReadyScenario(t *testing.T) {
	nodes := []faultNode{
		{name: "n1", leaf0: "A", leaf1: "B", pods: []zonePod{{"g", "g-0", 0}}},
		{name: "n2", leaf0: "A", leaf1: "B", pods: []zonePod{{"g", "g-1", 0}, {"busy", "busy-0", 1}}},
		{name: "n3", leaf0: "A", leaf1: "B"},
	}
	sc := startFaults(t, nodes, map[string]int{"g": 2, "busy": 1})

	down := builders.ProviderNode("n1").Resource("pods", "110").Resource("memory", "512Gi").
		Ready(corev1.ConditionFalse).Taint(corev1.TaintNodeNotReady, corev1.TaintEffectNoExecute).Obj()
	sc.Sim.UpsertNode(down)
	sc.Finish("ns/g-0")
	other := builders.MakePodGroup("ns", "other").MinMember(1).Phase("Inqueue").Obj()
	sc.Submit([]*schedulingv1beta1.PodGroup{other}, []*corev1.Pod{recreated("other", "other-0")})
	o := sc.Session()
	b := o.Binds["ns/other-0"]
	if b == nil {
		t.Fatalf("other-0 not bound; condition %q", condition(o.PodGroups["ns/other"]))
	}
	if got := b.Node + "/" + b.Pod.Annotations[ledger.AnnotationS0]; got != "n3/B" {
		t.Errorf("other-0 on %s, want n3/B: n3/A is kept for g's replacement", got)
	}

	addPods(t, sc, recreated("g", "g-0"))
	o = sc.Session()
	b = o.Binds["ns/g-0"]
	if b == nil {
		t.Fatalf("replacement g-0 not bound; condition %q", condition(o.PodGroups["ns/g"]))
	}
	if got := b.Node + "/" + b.Pod.Annotations[ledger.AnnotationS0]; got != "n3/A" {
		t.Errorf("replacement g-0 on %s, want n3/A (its gang's leaf, not the NotReady n1)", got)
	}
	placed := eventsWith(o, rdmatopology.ReasonReplacementPlaced)
	if len(placed) != 1 || !strings.Contains(placed[0], "node n1 is NotReady or gone") || !strings.Contains(placed[0], "a leaf the gang holds") {
		t.Errorf("ReplacementPlaced events = %q, want one naming NotReady n1 and the gang's leaf", placed)
	}
}

// notReady is n1 as the node lifecycle controller leaves it when it stops
// reporting: NotReady, tainted NoExecute.
func notReady(name string) *corev1.Node {
	return builders.ProviderNode(name).Resource("pods", "110").Resource("memory", "512Gi").
		Ready(corev1.ConditionFalse).Taint(corev1.TaintNodeNotReady, corev1.TaintEffectNoExecute).Obj()
}

// TestReplacementRoomKeptFromPodsWithoutRDMA: a gang of two runs under leaf
// A on n1 and n2; n1 goes NotReady and its pod fails, so n3's NUMA 0 (4 of
// its 8 GPUs, under A) is kept for the replacement. A pending job of
// another gang that requests GPUs and no RDMA may take what is not kept,
// never the kept room; the replacement then lands there.
func TestReplacementRoomKeptFromPodsWithoutRDMA(t *testing.T) {
	cases := map[string]struct {
		gpus string
		// wantNode is where the pod without RDMA binds ("": nowhere).
		wantNode string
	}{
		"the node's GPUs beside the room": {gpus: "4", wantNode: "n3"},
		"the whole node, the room too":    {gpus: "8", wantNode: ""},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			nodes := []faultNode{
				{name: "n1", leaf0: "A", leaf1: "B", pods: []zonePod{{"g", "g-0", 0}}},
				{name: "n2", leaf0: "A", leaf1: "B", pods: []zonePod{{"g", "g-1", 0}, {"busy", "busy-0", 1}}},
				{name: "n3", leaf0: "A", leaf1: "B"},
			}
			sc := startFaults(t, nodes, map[string]int{"g": 2, "busy": 1})
			sc.Sim.UpsertNode(notReady("n1"))
			sc.Finish("ns/g-0")
			plain := builders.MakePodGroup("ns", "plain").MinMember(1).Phase("Inqueue").Obj()
			pod := builders.MakePod("ns", "plain-0").Group("plain").Req("cpu", "4").Req("memory", "8Gi").
				Req(builders.GPUResource, tc.gpus).SchedulerName("volcano").Obj()
			sc.Submit([]*schedulingv1beta1.PodGroup{plain}, []*corev1.Pod{pod})
			o := sc.Session()
			got := ""
			if b := o.Binds["ns/plain-0"]; b != nil {
				got = b.Node
			}
			if got != tc.wantNode {
				t.Errorf("pod without RDMA (%s GPUs) bound on %q, want %q: n3's NUMA 0 is kept for g's replacement", tc.gpus, got, tc.wantNode)
			}

			addPods(t, sc, recreated("g", "g-0"))
			o = sc.Session()
			b := o.Binds["ns/g-0"]
			if b == nil {
				t.Fatalf("replacement g-0 not bound; condition %q", condition(o.PodGroups["ns/g"]))
			}
			if got := b.Node + "/" + b.Pod.Annotations[ledger.AnnotationS0]; got != "n3/A" {
				t.Errorf("replacement g-0 on %s, want n3/A (the room kept for it)", got)
			}
		})
	}
}

// TestReplacementRoomWithinHardTier: a gang of two runs under leaf A on n1
// and n2, n1 goes NotReady and its pod fails. Leaf A has no room left;
// leaf C (n3, the same S1) has. A soft gang's replacement may go there, so
// one of n3's zones is kept for it and a pending gang of two does not fit;
// a hard s0 gang's replacement may not, so nothing is kept there and the
// pending gang takes n3.
func TestReplacementRoomWithinHardTier(t *testing.T) {
	cases := map[string]struct {
		ann       map[string]string
		wantOther bool
	}{
		"soft":    {ann: nil, wantOther: false},
		"hard s0": {ann: map[string]string{ledger.AnnotationMode: "hard", ledger.AnnotationHighestTier: "s0"}, wantOther: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			nodes := []faultNode{
				{name: "n1", leaf0: "A", leaf1: "B", pods: []zonePod{{"g", "g-0", 0}}},
				{name: "n2", leaf0: "A", leaf1: "B", pods: []zonePod{{"g", "g-1", 0}, {"busy", "busy-0", 1}}},
				{name: "n3", leaf0: "C", leaf1: "C"},
			}
			sc := startFaultsWith(t, nodes, map[string]int{"g": 2, "busy": 1}, map[string]map[string]string{"g": tc.ann})
			sc.Sim.UpsertNode(notReady("n1"))
			sc.Finish("ns/g-0")
			other := builders.MakePodGroup("ns", "other").MinMember(2).Phase("Inqueue").Obj()
			sc.Submit([]*schedulingv1beta1.PodGroup{other}, []*corev1.Pod{recreated("other", "other-0"), recreated("other", "other-1")})
			o := sc.Session()
			placed := o.Binds["ns/other-0"] != nil && o.Binds["ns/other-1"] != nil
			if placed != tc.wantOther {
				t.Errorf("pending gang placed = %v, want %v; its condition %q", placed, tc.wantOther, condition(o.PodGroups["ns/other"]))
			}
		})
	}
}
