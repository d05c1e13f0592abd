package soak

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/kubewharf/katalyst-api/pkg/apis/node/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	schedulingv1beta1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"

	"github.com/rdmatopo/rdmatopo/core/ledger"
	"github.com/rdmatopo/rdmatopo/core/topology"
	"github.com/rdmatopo/rdmatopo/internal/testing/builders"
	"github.com/rdmatopo/rdmatopo/internal/workload"
)

var workloadEpoch = workload.Epoch

// boundPod returns a pod of gang g bound to node with the given NICs
// (NUMA ids derived from the fixture: 1a/3f on NUMA 0, d1/e7 on NUMA 1).
func boundPod(name, g, node string, nics ...string) *corev1.Pod {
	numa := map[string]string{"0000:1a:00.0": "0", "0000:3f:00.0": "0", "0000:d1:00.0": "1", "0000:e7:00.0": "1"}
	w := builders.MakePod(Namespace, name).Node(node).Group(g).
		Req(builders.GPUResource, "1").Req(builders.RDMAResource, "1")
	if len(nics) > 0 {
		w = w.Annotation(ledger.AnnotationNICs, joinComma(nics)).Annotation(ledger.AnnotationNUMA, numa[nics[0]])
	}
	return w.Obj()
}

func joinComma(items []string) string {
	out := ""
	for i, s := range items {
		if i > 0 {
			out += ","
		}
		out += s
	}
	return out
}

func podGroup(name string, minMember int32, ann map[string]string) *schedulingv1beta1.PodGroup {
	return &schedulingv1beta1.PodGroup{
		ObjectMeta: metav1.ObjectMeta{Namespace: Namespace, Name: name, Annotations: ann},
		Spec:       schedulingv1beta1.PodGroupSpec{MinMember: minMember},
	}
}

// rebuiltLedger is the ledger a correct plugin would hold for pods.
func rebuiltLedger(t *testing.T, pods []*corev1.Pod, f *topology.Fabric) []ledger.Reservation {
	t.Helper()
	l, errs := ledger.Rebuild(topology.Config{}, pods, f)
	if len(errs) > 0 {
		t.Fatalf("fixture does not rebuild: %v", errs)
	}
	return l.All()
}

type violationKey struct {
	Kind   Kind
	Object string
}

func keys(vs []Violation) []violationKey {
	var out []violationKey
	for _, v := range vs {
		out = append(out, violationKey{v.Kind, v.Object})
	}
	return out
}

func TestCheckerFindsViolations(t *testing.T) {
	nodes, cnrs := builders.TwoLeavesFourNodes()
	fabric := topology.Build(topology.Config{}.WithDefaults(), nodes, cnrs)
	hardS0 := map[string]string{ledger.AnnotationMode: "hard", ledger.AnnotationHighestTier: "s0"}
	// The fixture KCNR of n1 lists a consumer on NIC 1a.
	n1Used := builders.MakeCNR("n1").Zone(0, 4, 64000).Zone(1, 4, 64000).
		NIC("0000:1a:00.0", 0, "leafA").NIC("0000:3f:00.0", 0, "leafA").
		NIC("0000:d1:00.0", 1, "leafB").NIC("0000:e7:00.0", 1, "leafB").
		UseNIC("0000:1a:00.0", builders.Consumer(Namespace, "gone", "uid-gone")).Obj()

	cases := map[string]struct {
		pods        []*corev1.Pod
		groups      []*schedulingv1beta1.PodGroup
		sessionCNRs bool
		justBound   []string
		// ledger overrides the rebuilt ledger when set.
		ledger   func(rebuilt []ledger.Reservation) []ledger.Reservation
		failedIn int // cycle of the gang's last failed bind (0: none)
		cycle    int
		want     []violationKey
	}{
		"clean gang": {
			pods:   []*corev1.Pod{boundPod("a-0", "a", "n1", "0000:1a:00.0"), boundPod("a-1", "a", "n2", "0000:1a:00.0")},
			groups: []*schedulingv1beta1.PodGroup{podGroup("a", 2, hardS0)},
		},
		"double-booked NIC": {
			pods:   []*corev1.Pod{boundPod("a-0", "a", "n1", "0000:1a:00.0"), boundPod("b-0", "b", "n1", "0000:1a:00.0")},
			groups: []*schedulingv1beta1.PodGroup{podGroup("a", 1, nil), podGroup("b", 1, nil)},
			// A correct rebuild skips the second holder; give the ledger both
			// so only the object-level check fires.
			ledger: func([]ledger.Reservation) []ledger.Reservation { return nil },
			want:   []violationKey{{KindDoubleBooked, "n1/0000:1a:00.0"}},
		},
		"NIC the session's KCNR showed consumed by another pod": {
			pods:        []*corev1.Pod{boundPod("a-0", "a", "n1", "0000:1a:00.0")},
			groups:      []*schedulingv1beta1.PodGroup{podGroup("a", 1, nil)},
			sessionCNRs: true,
			justBound:   []string{"a-0"},
			want:        []violationKey{{KindKCNRConflict, Namespace + "/a-0"}},
		},
		"stale KCNR consumer after the pod was placed is the lag": {
			pods:        []*corev1.Pod{boundPod("a-0", "a", "n1", "0000:1a:00.0")},
			groups:      []*schedulingv1beta1.PodGroup{podGroup("a", 1, nil)},
			sessionCNRs: true,
		},
		"partial gang without a failed bind": {
			pods:   []*corev1.Pod{boundPod("a-0", "a", "n1", "0000:1a:00.0")},
			groups: []*schedulingv1beta1.PodGroup{podGroup("a", 2, nil)},
			cycle:  5,
			want:   []violationKey{{KindPartialGang, Namespace + "/a"}},
		},
		"partial gang within the grace after a failed bind": {
			pods:     []*corev1.Pod{boundPod("a-0", "a", "n1", "0000:1a:00.0")},
			groups:   []*schedulingv1beta1.PodGroup{podGroup("a", 2, nil)},
			failedIn: 3,
			cycle:    5,
		},
		"partial gang beyond the grace": {
			pods:     []*corev1.Pod{boundPod("a-0", "a", "n1", "0000:1a:00.0")},
			groups:   []*schedulingv1beta1.PodGroup{podGroup("a", 2, nil)},
			failedIn: 2,
			cycle:    5,
			want:     []violationKey{{KindPartialGang, Namespace + "/a"}},
		},
		"hard s0 gang over two S0s": {
			pods:   []*corev1.Pod{boundPod("a-0", "a", "n1", "0000:1a:00.0"), boundPod("a-1", "a", "n2", "0000:d1:00.0")},
			groups: []*schedulingv1beta1.PodGroup{podGroup("a", 2, hardS0)},
			want:   []violationKey{{KindHardLimit, Namespace + "/a"}},
		},
		"hard s0 gang on one node whose NICs hang off two S0s": {
			pods:   []*corev1.Pod{boundPod("a-0", "a", "n1", "0000:1a:00.0"), boundPod("a-1", "a", "n1", "0000:d1:00.0")},
			groups: []*schedulingv1beta1.PodGroup{podGroup("a", 2, hardS0)},
			want:   []violationKey{{KindHardLimit, Namespace + "/a"}},
		},
		"hard s0 gang on one node under one S0": {
			pods:   []*corev1.Pod{boundPod("a-0", "a", "n1", "0000:1a:00.0"), boundPod("a-1", "a", "n1", "0000:3f:00.0")},
			groups: []*schedulingv1beta1.PodGroup{podGroup("a", 2, hardS0)},
		},
		"bound RDMA pod without NICs": {
			pods:   []*corev1.Pod{boundPod("a-0", "a", "n1")},
			groups: []*schedulingv1beta1.PodGroup{podGroup("a", 1, nil)},
			want:   []violationKey{{KindNICCount, Namespace + "/a-0"}},
		},
		"leaked reservation": {
			pods:   []*corev1.Pod{boundPod("a-0", "a", "n1", "0000:1a:00.0")},
			groups: []*schedulingv1beta1.PodGroup{podGroup("a", 1, nil)},
			ledger: func(rebuilt []ledger.Reservation) []ledger.Reservation {
				leak := ledger.Reservation{UID: "uid-x", Namespace: Namespace, Name: "x", Node: "n2",
					Zones: []ledger.ZoneUse{{NUMA: 0, NICs: []topology.NICID{"0000:1a:00.0"}}}}
				return append(rebuilt, leak)
			},
			want: []violationKey{{KindLedgerMismatch, Namespace + "/x"}},
		},
		"missing reservation": {
			pods:   []*corev1.Pod{boundPod("a-0", "a", "n1", "0000:1a:00.0")},
			groups: []*schedulingv1beta1.PodGroup{podGroup("a", 1, nil)},
			ledger: func([]ledger.Reservation) []ledger.Reservation { return []ledger.Reservation{} },
			want:   []violationKey{{KindLedgerMismatch, Namespace + "/a-0"}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			c := NewChecker(topology.Config{}, 2)
			if tc.failedIn > 0 {
				c.Check(&Observation{Cycle: tc.failedIn, Fabric: fabric, GangFailures: map[string][]string{Namespace + "/a": {"n2"}}})
			}
			o := &Observation{Cycle: max(tc.cycle, 1), Pods: tc.pods, PodGroups: tc.groups, Fabric: fabric,
				JustBound: map[string]bool{}}
			for _, p := range tc.justBound {
				o.JustBound["uid-"+Namespace+"-"+p] = true
			}
			if tc.sessionCNRs {
				o.SessionCNRs = append(o.SessionCNRs, n1Used)
			}
			o.Ledger = rebuiltLedger(t, tc.pods[:1], fabric)
			if tc.ledger != nil {
				o.Ledger = tc.ledger(rebuiltLedger(t, tc.pods[:1], fabric))
			} else {
				o.Ledger = rebuiltLedger(t, tc.pods, fabric)
			}
			got := keys(c.Check(o))
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("violations (-want +got):\n%s", diff)
			}
		})
	}
}

// TestCheckerPartialGangWhileSlotDrained: a gang whose failed bind was on a
// node that then leaves the cluster waits for capacity; the grace restarts
// when the node is back.
func TestCheckerPartialGangWhileSlotDrained(t *testing.T) {
	nodes, cnrs := builders.TwoLeavesFourNodes()
	cfg := topology.Config{}.WithDefaults()
	full := topology.Build(cfg, nodes, cnrs)
	var keptNodes []*corev1.Node
	for _, n := range nodes {
		if n.Name != "n2" {
			keptNodes = append(keptNodes, n)
		}
	}
	var keptCNRs []*v1alpha1.CustomNodeResource
	for _, c := range cnrs {
		if c.Name != "n2" {
			keptCNRs = append(keptCNRs, c)
		}
	}
	drained := topology.Build(cfg, keptNodes, keptCNRs)
	pods := []*corev1.Pod{boundPod("a-0", "a", "n1", "0000:1a:00.0")}
	groups := []*schedulingv1beta1.PodGroup{podGroup("a", 2, nil)}

	c := NewChecker(cfg, 2)
	c.Check(&Observation{Cycle: 2, Fabric: full, GangFailures: map[string][]string{Namespace + "/a": {"n2"}}})
	for _, step := range []struct {
		cycle int
		f     *topology.Fabric
		want  []violationKey
	}{
		{cycle: 3, f: drained},
		{cycle: 7, f: drained}, // far beyond the grace, but n2 is away
		{cycle: 8, f: full},    // back: the grace counts from cycle 7
		{cycle: 9, f: full},
		{cycle: 10, f: full, want: []violationKey{{KindPartialGang, Namespace + "/a"}}},
	} {
		o := &Observation{Cycle: step.cycle, Pods: pods, PodGroups: groups, Fabric: step.f,
			JustBound: map[string]bool{}, Ledger: rebuiltLedger(t, pods, full)}
		if diff := cmp.Diff(step.want, keys(c.Check(o))); diff != "" {
			t.Errorf("cycle %d: violations (-want +got):\n%s", step.cycle, diff)
		}
	}
}

// listingCNR is node's fixture KCNR listing each consumer on the NICs given.
func listingCNR(node string, uses map[string][]string) *v1alpha1.CustomNodeResource {
	w := builders.MakeCNR(node).Zone(0, 4, 64000).Zone(1, 4, 64000).
		NIC("0000:1a:00.0", 0, "leafA").NIC("0000:3f:00.0", 0, "leafA").
		NIC("0000:d1:00.0", 1, "leafB").NIC("0000:e7:00.0", 1, "leafB")
	for _, consumer := range sortedKeys(boolSetOf(uses)) {
		for _, n := range uses[consumer] {
			w = w.UseNIC(n, consumer)
		}
	}
	return w.Obj()
}

// TestCheckerNodeTruth runs the checks that judge a node agent's choice:
// the KCNR is the truth for every pod it lists (KCNRDivergence), hard
// limits are judged on the plan (realized wider is the node's doing,
// unless the node follows the plan), mismatches are counted, and a failed
// bind's room the node gave away extends the partial-gang grace.
func TestCheckerNodeTruth(t *testing.T) {
	nodes, cnrs := builders.TwoLeavesFourNodes()
	fabric := topology.Build(topology.Config{}.WithDefaults(), nodes, cnrs)
	hardS0 := map[string]string{ledger.AnnotationMode: "hard", ledger.AnnotationHighestTier: "s0"}
	consumer := func(name string) string { return builders.Consumer(Namespace, name, "uid-"+Namespace+"-"+name) }
	oneNIC := func(name, node string, nics ...string) ledger.Reservation {
		return ledger.Reservation{UID: "uid-" + Namespace + "-" + name, Namespace: Namespace, Name: name, Job: Namespace + "/a", Node: node,
			Zones: []ledger.ZoneUse{{NUMA: 0, GPU: 1, NICs: toNICs(nics)}}}
	}
	type step struct {
		pods   []*corev1.Pod
		groups []*schedulingv1beta1.PodGroup
		// listed maps node -> consumer -> NICs its KCNR lists.
		listed map[string]map[string][]string
		// ledger overrides the rebuilt ledger when set.
		ledger []ledger.Reservation
		// failed names the NICs of this cycle's failed binds of gang a.
		failed []NodeNIC
		want   []violationKey
	}
	type counts struct{ NICMismatches, RealizedWider int }
	cases := map[string]struct {
		followsPlan bool
		steps       []step
		want        counts
	}{
		"listed as reserved": {
			steps: []step{{
				pods:   []*corev1.Pod{boundPod("a-0", "a", "n1", "0000:1a:00.0")},
				groups: []*schedulingv1beta1.PodGroup{podGroup("a", 1, nil)},
				listed: map[string]map[string][]string{"n1": {consumer("a-0"): {"0000:1a:00.0"}}},
			}},
		},
		"not listed yet: nothing to compare": {
			steps: []step{{
				pods:   []*corev1.Pod{boundPod("a-0", "a", "n1", "0000:1a:00.0")},
				groups: []*schedulingv1beta1.PodGroup{podGroup("a", 1, nil)},
			}},
		},
		"ledger kept the planned NIC the KCNR does not list": {
			steps: []step{
				{pods: []*corev1.Pod{boundPod("a-0", "a", "n1", "0000:1a:00.0")}, groups: []*schedulingv1beta1.PodGroup{podGroup("a", 1, nil)}},
				{
					pods:   []*corev1.Pod{boundPod("a-0", "a", "n1", "0000:1a:00.0")},
					groups: []*schedulingv1beta1.PodGroup{podGroup("a", 1, nil)},
					listed: map[string]map[string][]string{"n1": {consumer("a-0"): {"0000:3f:00.0"}}},
					want:   []violationKey{{KindKCNRDivergence, Namespace + "/a-0"}},
				},
			},
			want: counts{NICMismatches: 1},
		},
		"adopted: annotations and ledger follow the KCNR": {
			steps: []step{
				{pods: []*corev1.Pod{boundPod("a-0", "a", "n1", "0000:1a:00.0")}, groups: []*schedulingv1beta1.PodGroup{podGroup("a", 1, nil)}},
				{
					pods:   []*corev1.Pod{boundPod("a-0", "a", "n1", "0000:3f:00.0")},
					groups: []*schedulingv1beta1.PodGroup{podGroup("a", 1, nil)},
					listed: map[string]map[string][]string{"n1": {consumer("a-0"): {"0000:3f:00.0"}}},
				},
			},
			want: counts{NICMismatches: 1},
		},
		"ledger holds a NIC the listed pod does not have (leak)": {
			steps: []step{{
				pods:   []*corev1.Pod{boundPod("a-0", "a", "n1", "0000:1a:00.0")},
				groups: []*schedulingv1beta1.PodGroup{podGroup("a", 1, nil)},
				listed: map[string]map[string][]string{"n1": {consumer("a-0"): {"0000:1a:00.0"}}},
				ledger: []ledger.Reservation{oneNIC("a-0", "n1", "0000:1a:00.0", "0000:3f:00.0")},
				want:   []violationKey{{KindKCNRDivergence, Namespace + "/a-0"}, {KindLedgerMismatch, Namespace + "/a-0"}},
			}},
		},
		"listed pod without a reservation": {
			steps: []step{{
				pods:   []*corev1.Pod{boundPod("a-0", "a", "n1", "0000:1a:00.0")},
				groups: []*schedulingv1beta1.PodGroup{podGroup("a", 1, nil)},
				listed: map[string]map[string][]string{"n1": {consumer("a-0"): {"0000:1a:00.0"}}},
				ledger: []ledger.Reservation{},
				want:   []violationKey{{KindKCNRDivergence, Namespace + "/a-0"}, {KindLedgerMismatch, Namespace + "/a-0"}},
			}},
		},
		"hard s0 gang the node realized wider: counted, not a breach": {
			steps: []step{
				{
					pods:   []*corev1.Pod{boundPod("a-0", "a", "n1", "0000:1a:00.0"), boundPod("a-1", "a", "n2", "0000:1a:00.0")},
					groups: []*schedulingv1beta1.PodGroup{podGroup("a", 2, hardS0)},
				},
				{
					pods:   []*corev1.Pod{boundPod("a-0", "a", "n1", "0000:1a:00.0"), boundPod("a-1", "a", "n2", "0000:d1:00.0")},
					groups: []*schedulingv1beta1.PodGroup{podGroup("a", 2, hardS0)},
					listed: map[string]map[string][]string{"n2": {consumer("a-1"): {"0000:d1:00.0"}}},
				},
			},
			want: counts{NICMismatches: 1, RealizedWider: 1},
		},
		"hard s0 gang realized wider by a node that follows the plan: breach": {
			followsPlan: true,
			steps: []step{
				{
					pods:   []*corev1.Pod{boundPod("a-0", "a", "n1", "0000:1a:00.0"), boundPod("a-1", "a", "n2", "0000:1a:00.0")},
					groups: []*schedulingv1beta1.PodGroup{podGroup("a", 2, hardS0)},
				},
				{
					pods:   []*corev1.Pod{boundPod("a-0", "a", "n1", "0000:1a:00.0"), boundPod("a-1", "a", "n2", "0000:d1:00.0")},
					groups: []*schedulingv1beta1.PodGroup{podGroup("a", 2, hardS0)},
					listed: map[string]map[string][]string{"n2": {consumer("a-1"): {"0000:d1:00.0"}}},
					want:   []violationKey{{KindHardLimit, Namespace + "/a"}},
				},
			},
			want: counts{NICMismatches: 1},
		},
		"hard s0 gang planned wider: breach whatever the node did": {
			steps: []step{{
				pods:   []*corev1.Pod{boundPod("a-0", "a", "n1", "0000:1a:00.0"), boundPod("a-1", "a", "n2", "0000:d1:00.0")},
				groups: []*schedulingv1beta1.PodGroup{podGroup("a", 2, hardS0)},
				listed: map[string]map[string][]string{"n2": {consumer("a-1"): {"0000:d1:00.0"}}},
				want:   []violationKey{{KindHardLimit, Namespace + "/a"}},
			}},
		},
		"partial gang whose freed room the node gave to another pod waits": {
			steps: []step{
				{
					pods:   []*corev1.Pod{boundPod("a-0", "a", "n1", "0000:1a:00.0"), boundPod("b-0", "b", "n2", "0000:1a:00.0")},
					groups: []*schedulingv1beta1.PodGroup{podGroup("a", 2, nil), podGroup("b", 1, nil)},
					failed: []NodeNIC{{Node: "n2", NIC: "0000:3f:00.0"}},
				},
				{
					pods:   []*corev1.Pod{boundPod("a-0", "a", "n1", "0000:1a:00.0"), boundPod("b-0", "b", "n2", "0000:3f:00.0")},
					groups: []*schedulingv1beta1.PodGroup{podGroup("a", 2, nil), podGroup("b", 1, nil)},
					listed: map[string]map[string][]string{"n2": {consumer("b-0"): {"0000:3f:00.0"}}},
				},
				{
					pods:   []*corev1.Pod{boundPod("a-0", "a", "n1", "0000:1a:00.0"), boundPod("b-0", "b", "n2", "0000:3f:00.0")},
					groups: []*schedulingv1beta1.PodGroup{podGroup("a", 2, nil), podGroup("b", 1, nil)},
					listed: map[string]map[string][]string{"n2": {consumer("b-0"): {"0000:3f:00.0"}}},
				},
				{
					pods:   []*corev1.Pod{boundPod("a-0", "a", "n1", "0000:1a:00.0"), boundPod("b-0", "b", "n2", "0000:3f:00.0")},
					groups: []*schedulingv1beta1.PodGroup{podGroup("a", 2, nil), podGroup("b", 1, nil)},
					listed: map[string]map[string][]string{"n2": {consumer("b-0"): {"0000:3f:00.0"}}},
				},
			},
			want: counts{NICMismatches: 1},
		},
		"partial gang whose freed room stays free: beyond the grace": {
			steps: []step{
				{
					pods:   []*corev1.Pod{boundPod("a-0", "a", "n1", "0000:1a:00.0")},
					groups: []*schedulingv1beta1.PodGroup{podGroup("a", 2, nil)},
					failed: []NodeNIC{{Node: "n2", NIC: "0000:3f:00.0"}},
				},
				{pods: []*corev1.Pod{boundPod("a-0", "a", "n1", "0000:1a:00.0")}, groups: []*schedulingv1beta1.PodGroup{podGroup("a", 2, nil)}},
				{pods: []*corev1.Pod{boundPod("a-0", "a", "n1", "0000:1a:00.0")}, groups: []*schedulingv1beta1.PodGroup{podGroup("a", 2, nil)}},
				{
					pods:   []*corev1.Pod{boundPod("a-0", "a", "n1", "0000:1a:00.0")},
					groups: []*schedulingv1beta1.PodGroup{podGroup("a", 2, nil)},
					want:   []violationKey{{KindPartialGang, Namespace + "/a"}},
				},
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			c := NewChecker(topology.Config{}, 2)
			c.NodeFollowsPlan = tc.followsPlan
			for i, st := range tc.steps {
				o := &Observation{Cycle: i + 1, Pods: st.pods, PodGroups: st.groups, Fabric: fabric,
					JustBound: map[string]bool{}, GangFailures: map[string][]string{}, GangFailedNICs: map[string][]NodeNIC{}}
				for _, n := range []string{"n1", "n2", "n3", "n4"} {
					o.SessionCNRs = append(o.SessionCNRs, listingCNR(n, st.listed[n]))
				}
				if len(st.failed) > 0 {
					o.GangFailures[Namespace+"/a"] = []string{st.failed[0].Node}
					o.GangFailedNICs[Namespace+"/a"] = st.failed
				}
				o.Ledger = rebuiltLedger(t, st.pods, fabric)
				if st.ledger != nil {
					o.Ledger = st.ledger
				}
				if diff := cmp.Diff(st.want, keys(c.Check(o))); diff != "" {
					t.Errorf("cycle %d: violations (-want +got):\n%s", i+1, diff)
				}
			}
			if diff := cmp.Diff(tc.want, counts{c.NICMismatches, c.RealizedWider}); diff != "" {
				t.Errorf("counts (-want +got):\n%s", diff)
			}
		})
	}
}

func toNICs(ids []string) []topology.NICID {
	out := make([]topology.NICID, len(ids))
	for i, id := range ids {
		out[i] = topology.NICID(id)
	}
	return out
}

func TestCheckerEvictions(t *testing.T) {
	nodes, cnrs := builders.TwoLeavesFourNodes()
	fabric := topology.Build(topology.Config{}.WithDefaults(), nodes, cnrs)
	prios := map[string]int32{Namespace + "/low": 10, Namespace + "/mid": 100, Namespace + "/high": 1000, Namespace + "/peer": 1000}
	evict := func(pod, gang, preemptor string, own int32) Eviction {
		return Eviction{Pod: Namespace + "/" + pod, Gang: Namespace + "/" + gang, Preemptor: preemptor, Priority: own, Reason: "r"}
	}
	hardS0 := map[string]string{ledger.AnnotationMode: "hard", ledger.AnnotationHighestTier: "s0"}
	cases := map[string]struct {
		pods      []*corev1.Pod
		pgs       []*schedulingv1beta1.PodGroup
		evictions []Eviction
		relaxed   map[string]bool
		// queues and marked are the gangs' Queues and non-preemptable marks.
		queues map[string]string
		marked map[string]bool
		want   []violationKey
	}{
		"a higher-priority gang of a reclaimable queue reclaimed for another queue": {
			pgs:       []*schedulingv1beta1.PodGroup{podGroup("peer", 1, nil)},
			evictions: []Eviction{evict("peer-0", "peer", Namespace+"/low", 0)},
			queues:    map[string]string{Namespace + "/peer": soakQueues[1].name, Namespace + "/low": soakQueues[0].name},
		},
		"a pod of a queue that is not reclaimable evicted for another queue": {
			pgs:       []*schedulingv1beta1.PodGroup{podGroup("low", 1, nil)},
			evictions: []Eviction{evict("low-0", "low", Namespace+"/high", 0)},
			queues:    map[string]string{Namespace + "/low": soakQueues[0].name, Namespace + "/high": soakQueues[1].name},
			want:      []violationKey{{KindWrongQueueEvicted, Namespace + "/low-0"}},
		},
		"a non-preemptable pod evicted": {
			pgs:       []*schedulingv1beta1.PodGroup{podGroup("low", 1, nil)},
			evictions: []Eviction{evict("low-0", "low", Namespace+"/high", 0)},
			marked:    map[string]bool{Namespace + "/low": true},
			want:      []violationKey{{KindNonPreemptableEvicted, Namespace + "/low-0"}},
		},
		"a lower-priority gang evicted whole": {
			pgs:       []*schedulingv1beta1.PodGroup{podGroup("low", 2, nil)},
			evictions: []Eviction{evict("low-0", "low", Namespace+"/high", 0), evict("low-1", "low", Namespace+"/high", 0)},
		},
		"an equal-priority pod evicted": {
			pods:      []*corev1.Pod{boundPod("peer-1", "peer", "n2", "0000:1a:00.0")},
			pgs:       []*schedulingv1beta1.PodGroup{podGroup("peer", 1, nil)},
			evictions: []Eviction{evict("peer-0", "peer", Namespace+"/high", 0)},
			want:      []violationKey{{KindHigherPriorityEvicted, Namespace + "/peer-0"}},
		},
		"a pod whose own priority is the preemptor's": {
			pgs:       []*schedulingv1beta1.PodGroup{podGroup("low", 1, nil)},
			evictions: []Eviction{evict("low-0", "low", Namespace+"/mid", 100)},
			want:      []violationKey{{KindHigherPriorityEvicted, Namespace + "/low-0"}},
		},
		"an eviction naming no preemptor": {
			pgs:       []*schedulingv1beta1.PodGroup{podGroup("low", 1, nil)},
			evictions: []Eviction{evict("low-0", "low", "", 0)},
			want:      []violationKey{{KindHigherPriorityEvicted, Namespace + "/low-0"}},
		},
		"an eviction naming an unknown preemptor": {
			pgs:       []*schedulingv1beta1.PodGroup{podGroup("low", 1, nil)},
			evictions: []Eviction{evict("low-0", "low", Namespace+"/ghost", 0)},
			want:      []violationKey{{KindHigherPriorityEvicted, Namespace + "/low-0"}},
		},
		"a victim gang left below minMember": {
			pods: []*corev1.Pod{boundPod("mid-1", "mid", "n1", "0000:1a:00.0"),
				boundPod("mid-2", "mid", "n2", "0000:1a:00.0")},
			pgs:       []*schedulingv1beta1.PodGroup{podGroup("mid", 3, nil)},
			evictions: []Eviction{evict("mid-0", "mid", Namespace+"/high", 0)},
			// It is a partial gang as well.
			want: []violationKey{{KindPartialGang, Namespace + "/mid"}, {KindPartialVictim, Namespace + "/mid"}},
		},
		"a victim gang keeping minMember pods loses one beyond it": {
			pods: []*corev1.Pod{boundPod("mid-1", "mid", "n1", "0000:1a:00.0"),
				boundPod("mid-2", "mid", "n2", "0000:1a:00.0")},
			pgs:       []*schedulingv1beta1.PodGroup{podGroup("mid", 2, nil)},
			evictions: []Eviction{evict("mid-0", "mid", Namespace+"/high", 0)},
		},
		"a hard gang placed wider after its max-wait is not a breach": {
			pods: []*corev1.Pod{boundPod("high-0", "high", "n1", "0000:1a:00.0"),
				boundPod("high-1", "high", "n1", "0000:d1:00.0"), boundPod("high-2", "high", "n3", "0000:1a:00.0")},
			pgs:     []*schedulingv1beta1.PodGroup{podGroup("high", 3, hardS0)},
			relaxed: map[string]bool{Namespace + "/high": true},
		},
		"the same gang before its max-wait is": {
			pods: []*corev1.Pod{boundPod("high-0", "high", "n1", "0000:1a:00.0"),
				boundPod("high-1", "high", "n1", "0000:d1:00.0"), boundPod("high-2", "high", "n3", "0000:1a:00.0")},
			pgs:  []*schedulingv1beta1.PodGroup{podGroup("high", 3, hardS0)},
			want: []violationKey{{KindHardLimit, Namespace + "/high"}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			c := NewChecker(topology.Config{}, 2)
			o := &Observation{Cycle: 1, Pods: tc.pods, PodGroups: tc.pgs, Fabric: fabric, Evictions: tc.evictions,
				Priorities: prios, Relaxed: tc.relaxed, JustBound: map[string]bool{}, Queues: tc.queues, NonPreemptable: tc.marked}
			for _, p := range tc.pods {
				o.JustBound[string(p.UID)] = true
			}
			if diff := cmp.Diff(tc.want, keys(c.Check(o))); diff != "" {
				t.Errorf("violations (-want,+got):\n%s", diff)
			}
		})
	}
}

// TestCheckerRoomOutranked: a gang left partial by a failed bind waits
// without violation while the NIC that bind freed is held by a gang ahead
// of it in the job order (higher priority, or equal and older); a gang
// behind it taking the room is the scheduler's fault once the grace ends.
func TestCheckerRoomOutranked(t *testing.T) {
	nodes, cnrs := builders.TwoLeavesFourNodes()
	fabric := topology.Build(topology.Config{}.WithDefaults(), nodes, cnrs)
	at := func(min int) metav1.Time { return metav1.NewTime(workloadEpoch.Add(time.Duration(min) * time.Minute)) }
	pg := func(name string, created int) *schedulingv1beta1.PodGroup {
		g := podGroup(name, 2, nil)
		g.CreationTimestamp = at(created)
		return g
	}
	cases := map[string]struct {
		takerPrio    int32
		takerCreated int
		want         []violationKey
	}{
		"higher priority, younger": {takerPrio: 100, takerCreated: 9},
		"equal priority, older":    {takerPrio: 10, takerCreated: 1},
		"equal priority, younger": {takerPrio: 10, takerCreated: 9,
			want: []violationKey{{KindPartialGang, Namespace + "/a"}}},
		"lower priority, older": {takerPrio: 1, takerCreated: 1,
			want: []violationKey{{KindPartialGang, Namespace + "/a"}}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			prios := map[string]int32{Namespace + "/a": 10, Namespace + "/b": tc.takerPrio}
			// a's bind to NIC 3f of n1 failed in cycle 2; b holds 3f since.
			pods := []*corev1.Pod{boundPod("a-0", "a", "n1", "0000:1a:00.0"), boundPod("b-0", "b", "n1", "0000:3f:00.0"),
				boundPod("b-1", "b", "n2", "0000:1a:00.0")}
			groups := []*schedulingv1beta1.PodGroup{pg("a", 5), pg("b", tc.takerCreated)}
			c := NewChecker(topology.Config{}, 2)
			c.Check(&Observation{Cycle: 2, Fabric: fabric, Priorities: prios,
				GangFailures:   map[string][]string{Namespace + "/a": {"n1"}},
				GangFailedNICs: map[string][]NodeNIC{Namespace + "/a": {{Node: "n1", NIC: "0000:3f:00.0"}}}})
			var got []violationKey
			for cycle := 3; cycle <= 6; cycle++ {
				got = append(got, keys(c.Check(&Observation{Cycle: cycle, Pods: pods, PodGroups: groups, Fabric: fabric,
					Priorities: prios, JustBound: map[string]bool{}}))...)
			}
			if diff := cmp.Diff(tc.want, dedupe(got)); diff != "" {
				t.Errorf("violations (-want +got):\n%s", diff)
			}
		})
	}
}

// dedupe drops repeats of a violation key, keeping the first.
func dedupe(ks []violationKey) []violationKey {
	seen := map[violationKey]bool{}
	var out []violationKey
	for _, k := range ks {
		if !seen[k] {
			seen[k] = true
			out = append(out, k)
		}
	}
	return out
}

// TestCheckerPipelinedReservations: the ledger may keep, until the next
// session, the reservation of a pending pod pipelined by a preemption
// (nominated to the reservation's node, or of a gang this cycle's
// evictions name as preemptor); any other reservation of a pending pod is
// a leak.
func TestCheckerPipelinedReservations(t *testing.T) {
	nodes, cnrs := builders.TwoLeavesFourNodes()
	fabric := topology.Build(topology.Config{}.WithDefaults(), nodes, cnrs)
	pending := func(nominated string) *corev1.Pod {
		p := builders.MakePod(Namespace, "p-0").Group("p").Req(builders.GPUResource, "1").Req(builders.RDMAResource, "1").Obj()
		p.Status.NominatedNodeName = nominated
		return p
	}
	res := ledger.Reservation{UID: "uid-" + Namespace + "-p-0", Namespace: Namespace, Name: "p-0", Node: "n1",
		Zones: []ledger.ZoneUse{{NUMA: 0, GPU: 1, NICs: []topology.NICID{"0000:1a:00.0"}}}}
	cases := map[string]struct {
		nominated string
		evictions []Eviction
		want      []violationKey
	}{
		"nominated to the reservation's node": {nominated: "n1"},
		"of a gang preempting this cycle": {evictions: []Eviction{{Pod: Namespace + "/v-0", Gang: Namespace + "/v",
			Preemptor: Namespace + "/p"}}},
		"nominated elsewhere":           {nominated: "n2", want: []violationKey{{KindLedgerMismatch, Namespace + "/p-0"}}},
		"neither: a leaked reservation": {want: []violationKey{{KindLedgerMismatch, Namespace + "/p-0"}}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			p := pending(tc.nominated)
			r := res
			r.UID = string(p.UID)
			o := &Observation{Cycle: 1, Pods: []*corev1.Pod{p}, PodGroups: []*schedulingv1beta1.PodGroup{podGroup("p", 1, nil)},
				Fabric: fabric, Ledger: []ledger.Reservation{r}, Evictions: tc.evictions, JustBound: map[string]bool{},
				Priorities: map[string]int32{Namespace + "/p": 100, Namespace + "/v": 1}}
			var got []violationKey
			for _, k := range keys(NewChecker(topology.Config{}, 2).Check(o)) {
				if k.Kind == KindLedgerMismatch {
					got = append(got, k)
				}
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("ledger violations (-want +got):\n%s", diff)
			}
		})
	}
}

// TestCheckerGradesReplacements: gang g lost g-1, which ran under leafA;
// its replacement binds under leafB (n2's NUMA 1). leafA's NUMA-0 NICs on
// n1, n3 and n4 are taken by running pods; n2's are free unless the case
// takes them. The replacement is within tier only when leafA had no room.
func TestCheckerGradesReplacements(t *testing.T) {
	nodes, cnrs := builders.TwoLeavesFourNodes()
	fabric := topology.Build(topology.Config{S1NodeLabel: builders.S1Label}.WithDefaults(), nodes, cnrs)
	byName := map[string]*corev1.Node{}
	for _, n := range nodes {
		byName[n.Name] = n
	}
	n2NUMA0 := []NodeNIC{{Node: "n2", NIC: "0000:1a:00.0"}, {Node: "n2", NIC: "0000:3f:00.0"}}
	cases := map[string]struct {
		// sibling, when set, is another replacement of g bound in the cycle
		// on n2's NUMA 0.
		sibling bool
		// failed are the NICs each gang's failed binds named in the cycle.
		failed     map[string][]NodeNIC
		wantWithin int
	}{
		"leafA had room on n2":                            {wantWithin: 0},
		"a sibling replacement bound there":               {sibling: true, wantWithin: 1},
		"a sibling replacement's bind there failed":       {failed: map[string][]NodeNIC{Namespace + "/g": n2NUMA0}, wantWithin: 1},
		"another gang's bind there failed: room was free": {failed: map[string][]NodeNIC{Namespace + "/x": n2NUMA0}, wantWithin: 0},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			repl := boundPod("g-1", "g", "n2", "0000:d1:00.0")
			pods := []*corev1.Pod{repl, boundPod("g-0", "g", "n1", "0000:d1:00.0"),
				boundPod("x-1", "x", "n1", "0000:1a:00.0", "0000:3f:00.0"),
				boundPod("x-3", "x", "n3", "0000:1a:00.0", "0000:3f:00.0"),
				boundPod("x-4", "x", "n4", "0000:1a:00.0", "0000:3f:00.0")}
			loss := Loss{Gang: Namespace + "/g", Cycle: 1, Kind: "nic", Leaves: []topology.S0ID{"leafA"}, S1s: []topology.S1ID{"s1-0"}}
			lost := map[string]Loss{Namespace + "/g-1": loss}
			just := map[string]bool{string(repl.UID): true}
			if tc.sibling {
				sib := boundPod("g-2", "g", "n2", "0000:1a:00.0", "0000:3f:00.0")
				pods = append(pods, sib)
				lost[Namespace+"/g-2"] = loss
				just[string(sib.UID)] = true
			}
			c := NewChecker(topology.Config{}.WithDefaults(), 2)
			c.Check(&Observation{Cycle: 3, Pods: pods, Fabric: fabric, SessionCNRs: cnrs, JustBound: just,
				GangFailedNICs: tc.failed,
				Faults: &FaultView{Lost: lost, SessionFabric: fabric, Nodes: byName,
					FailedNodes: map[string]bool{}, Down: map[nicKey]bool{}, Cooling: map[nicKey]bool{}}})
			within := c.ReplacementsWithinTier
			if tc.sibling {
				within-- // the sibling itself, under leafA
			}
			if within != tc.wantWithin || len(c.OutsideTier) != 1-tc.wantWithin {
				t.Errorf("g-1 graded within tier %d times, want %d; outside: %q", within, tc.wantWithin, c.OutsideTier)
			}
		})
	}
}

// TestCheckerSharedNICs: on NICs of two RDMA units, two live pods on one
// NIC share it, a third is one too many, and a pod placed on a NIC is in
// conflict with the session's KCNR only when other consumers held all of
// its units.
func TestCheckerSharedNICs(t *testing.T) {
	const nic = "0000:1a:00.0"
	shared := func(name string) *builders.CNRWrapper {
		return builders.MakeCNR(name).Zone(0, 4, 64000).Zone(1, 4, 64000).
			NIC(nic, 0, "leafA").NIC("0000:3f:00.0", 0, "leafA").
			NIC("0000:d1:00.0", 1, "leafB").NIC("0000:e7:00.0", 1, "leafB").
			Units(nic, 2).Units("0000:3f:00.0", 2).Units("0000:d1:00.0", 2).Units("0000:e7:00.0", 2)
	}
	nodes, _ := builders.TwoLeavesFourNodes()
	var cnrs []*v1alpha1.CustomNodeResource
	for _, n := range nodes {
		cnrs = append(cnrs, shared(n.Name).Obj())
	}
	fabric := topology.Build(topology.Config{}.WithDefaults(), nodes, cnrs)
	consumer := func(name string) string { return builders.Consumer(Namespace, name, "uid-"+name) }
	groups := []*schedulingv1beta1.PodGroup{podGroup("a", 1, nil), podGroup("b", 1, nil), podGroup("c", 1, nil)}

	cases := map[string]struct {
		pods []*corev1.Pod
		// sessionCNR is n1's KCNR as the session saw it (nil: none).
		sessionCNR *v1alpha1.CustomNodeResource
		justBound  string
		want       []violationKey
	}{
		"two pods share a NIC of two units": {
			pods: []*corev1.Pod{boundPod("a-0", "a", "n1", nic), boundPod("b-0", "b", "n1", nic)},
		},
		"three pods on a NIC of two units": {
			pods: []*corev1.Pod{boundPod("a-0", "a", "n1", nic), boundPod("b-0", "b", "n1", nic), boundPod("c-0", "c", "n1", nic)},
			// The ledger rebuilt from the pods cannot hold the third either.
			want: []violationKey{{KindDoubleBooked, "n1/" + nic}, {KindLedgerMismatch, "rebuild"}},
		},
		"placed beside one consumer the session's KCNR showed": {
			pods:       []*corev1.Pod{boundPod("a-0", "a", "n1", nic)},
			sessionCNR: shared("n1").UseNIC(nic, consumer("x")).Obj(),
			justBound:  "a-0",
		},
		"placed on a NIC whose units the session's KCNR showed consumed": {
			pods:       []*corev1.Pod{boundPod("a-0", "a", "n1", nic)},
			sessionCNR: shared("n1").UseNIC(nic, consumer("x")).UseNIC(nic, consumer("y")).Obj(),
			justBound:  "a-0",
			want:       []violationKey{{KindKCNRConflict, Namespace + "/a-0"}},
		},
		"one consumer holding both units": {
			pods:       []*corev1.Pod{boundPod("a-0", "a", "n1", nic)},
			sessionCNR: shared("n1").UseNICUnits(nic, consumer("x"), 2).Obj(),
			justBound:  "a-0",
			want:       []violationKey{{KindKCNRConflict, Namespace + "/a-0"}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			c := NewChecker(topology.Config{}, 2)
			c.NICUnits = 2
			o := &Observation{Cycle: 1, Pods: tc.pods, PodGroups: groups, Fabric: fabric, JustBound: map[string]bool{}}
			if tc.justBound != "" {
				o.JustBound["uid-"+Namespace+"-"+tc.justBound] = true
			}
			if tc.sessionCNR != nil {
				o.SessionCNRs = []*v1alpha1.CustomNodeResource{tc.sessionCNR}
			}
			// A correct rebuild keeps at most two holders of a NIC; the
			// object-level checks are what this test is about.
			o.Ledger = rebuiltLedger(t, tc.pods[:min(len(tc.pods), 2)], fabric)
			got := keys(c.Check(o))
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("violations (-want +got):\n%s", diff)
			}
		})
	}
}
