package explain

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/kubewharf/katalyst-api/pkg/apis/node/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	schedulingv1beta1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"

	"github.com/rdmatopo/rdmatopo/core/ledger"
	"github.com/rdmatopo/rdmatopo/core/placement"
	"github.com/rdmatopo/rdmatopo/core/topology"
	"github.com/rdmatopo/rdmatopo/internal/live"
	"github.com/rdmatopo/rdmatopo/internal/testing/builders"
	"github.com/rdmatopo/rdmatopo/internal/workload"
)

// gangOf is a PodGroup of size pods with the given mode and highest tier,
// and its pending pods of 4 GPU + 2 RDMA, each tolerating tolerate if set.
func gangOf(size int, mode, tier, tolerate string) (*schedulingv1beta1.PodGroup, []*corev1.Pod) {
	pg := &schedulingv1beta1.PodGroup{
		ObjectMeta: metav1.ObjectMeta{Namespace: "research", Name: "llm", Annotations: map[string]string{
			ledger.AnnotationMode: mode, ledger.AnnotationHighestTier: tier}},
		Spec: schedulingv1beta1.PodGroupSpec{MinMember: int32(size)},
	}
	var pods []*corev1.Pod
	for i := range size {
		w := builders.MakePod("research", fmt.Sprintf("llm-%d", i)).Group("llm").
			Req(builders.GPUResource, "4").Req(builders.RDMAResource, "2")
		if tolerate != "" {
			w = w.Tolerate(tolerate)
		}
		pods = append(pods, w.Obj())
	}
	return pg, pods
}

// fourNodes is TwoLeavesFourNodes (each leaf takes one 4 GPU + 2 RDMA pod
// per node) with edit applied to the Node named n1 and to all Nodes.
func fourNodes(n1, all func(*builders.NodeWrapper) *builders.NodeWrapper) ([]*corev1.Node, []*v1alpha1.CustomNodeResource) {
	_, cnrs := builders.TwoLeavesFourNodes()
	var nodes []*corev1.Node
	for i := 1; i <= 4; i++ {
		name := fmt.Sprintf("n%d", i)
		w := builders.MakeNode(name).Shared().GPU(8).RDMA(4).CPU("128").S1("s1-0")
		if all != nil {
			w = all(w)
		}
		if n1 != nil && name == "n1" {
			w = n1(w)
		}
		nodes = append(nodes, w.Obj())
	}
	return nodes, cnrs
}

// TestExplainNodeUsability checks that explain reads node usability as the
// scheduler's session does (rdmatopology.LimitNodes over NodeInfos built
// as Volcano's cache builds them): a Node without conditions is usable, a
// NotReady one is not, a cordoned one is not, and a taint excludes a node
// only for pods that do not tolerate it.
func TestExplainNodeUsability(t *testing.T) {
	const taint = "rdmatopo.io/maintenance"
	ready := func(w *builders.NodeWrapper) *builders.NodeWrapper { return w.Ready(corev1.ConditionTrue) }
	notReady := func(w *builders.NodeWrapper) *builders.NodeWrapper { return w.Ready(corev1.ConditionFalse) }
	cordon := func(w *builders.NodeWrapper) *builders.NodeWrapper { return w.Cordon() }
	tainted := func(w *builders.NodeWrapper) *builders.NodeWrapper {
		return w.Taint(taint, corev1.TaintEffectNoSchedule)
	}
	cases := map[string]struct {
		n1, all  func(*builders.NodeWrapper) *builders.NodeWrapper
		size     int
		mode     string
		tolerate string
		// wantBlocked is the reason; empty: wantNodes is the plan.
		wantBlocked string
		wantNodes   []string
	}{
		"no conditions, hard-s0 gang too big for any leaf": {
			size: 5, mode: "hard",
			wantBlocked: "TierLimit: no S0 can hold 5 pods of 4 GPU + 2 RDMA; the largest holds 4",
		},
		"Ready nodes, hard-s0 gang too big for any leaf": {
			all: ready, size: 5, mode: "hard",
			wantBlocked: "TierLimit: no S0 can hold 5 pods of 4 GPU + 2 RDMA; the largest holds 4",
		},
		"no conditions, gang that fits": {
			size: 4, mode: "hard", wantNodes: []string{"n1", "n2", "n3", "n4"},
		},
		"every node NotReady": {
			all: notReady, size: 4, mode: "hard",
			wantBlocked: "NoNodes: no RDMA node passes the filters of research/llm",
		},
		"one node NotReady": {
			n1: notReady, size: 4, mode: "hard",
			wantBlocked: "TierLimit: no S0 can hold 4 pods of 4 GPU + 2 RDMA; the largest holds 3",
		},
		"one node cordoned": {
			n1: cordon, size: 4, mode: "hard",
			wantBlocked: "TierLimit: no S0 can hold 4 pods of 4 GPU + 2 RDMA; the largest holds 3",
		},
		"one node cordoned, soft gang spreads": {
			n1: cordon, size: 4, mode: "soft", wantNodes: []string{"n2", "n4"},
		},
		"one node tainted, pods do not tolerate": {
			n1: tainted, size: 4, mode: "hard",
			wantBlocked: "TierLimit: no S0 can hold 4 pods of 4 GPU + 2 RDMA; the largest holds 3",
		},
		"one node tainted, pods tolerate": {
			n1: tainted, size: 4, mode: "hard", tolerate: taint, wantNodes: []string{"n1", "n2", "n3", "n4"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			nodes, cnrs := fourNodes(tc.n1, tc.all)
			pg, pods := gangOf(tc.size, tc.mode, "s0", tc.tolerate)
			snap := &live.Snapshot{Cluster: &workload.Cluster{Nodes: nodes, CNRs: cnrs}, Pending: pods,
				PodGroups: []*schedulingv1beta1.PodGroup{pg}}
			e := Explain(topology.Config{S1NodeLabel: builders.S1Label}, snap, pg)
			if diff := cmp.Diff(tc.wantBlocked, e.Blocked); diff != "" {
				t.Errorf("Blocked (-want,+got):\n%s", diff)
			}
			var got []string
			if e.Plan != nil {
				got = e.Plan.Nodes
			}
			if diff := cmp.Diff(tc.wantNodes, got); diff != "" {
				t.Errorf("plan nodes (-want,+got):\n%s", diff)
			}
		})
	}
}

// TestExplainRanks checks that explain lists a placed gang's bound pods in
// rank order with their leaves, and counts the leaf changes along the
// ring over them.
func TestExplainRanks(t *testing.T) {
	cases := map[string]struct {
		// zones[i] is the NUMA zone (0: leafA, 1: leafB) of pod llm-i on
		// node n<i+1>.
		zones     []int
		crossings int
		wantText  string
	}{
		"ranks contiguous": {zones: []int{0, 0, 1, 1}, crossings: 2,
			wantText: "Ring over ranks: 2 leaf crossings\n  rank 0: research/llm-0 on n1, S0 leafA\n  rank 1: research/llm-1 on n2, S0 leafA\n  rank 2: research/llm-2 on n3, S0 leafB\n  rank 3: research/llm-3 on n4, S0 leafB\n"},
		"ranks alternating": {zones: []int{0, 1, 0, 1}, crossings: 4,
			wantText: "Ring over ranks: 4 leaf crossings\n"},
		"one leaf": {zones: []int{1, 1, 1, 1}, crossings: 0,
			wantText: "Ring over ranks: 0 leaf crossings\n"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			nodes, cnrs := fourNodes(nil, nil)
			pg, _ := gangOf(len(tc.zones), "soft", "s1", "")
			var bound []*corev1.Pod
			// Listed out of rank order: the name's ordinal decides.
			for _, i := range []int{2, 0, 3, 1} {
				z := tc.zones[i]
				bound = append(bound, builders.MakePod("research", fmt.Sprintf("llm-%d", i)).Group("llm").
					Req(builders.GPUResource, "4").Req(builders.RDMAResource, "2").Node(fmt.Sprintf("n%d", i+1)).
					Annotation(ledger.AnnotationNICs, builders.NUMANICs[z][0]+","+builders.NUMANICs[z][1]).
					Annotation(ledger.AnnotationNUMA, fmt.Sprint(z)).Obj())
			}
			snap := &live.Snapshot{Cluster: &workload.Cluster{Nodes: nodes, CNRs: cnrs, Pods: bound},
				PodGroups: []*schedulingv1beta1.PodGroup{pg}}
			e := Explain(topology.Config{S1NodeLabel: builders.S1Label}, snap, pg)
			if e.RingCrossings == nil || *e.RingCrossings != tc.crossings {
				t.Fatalf("RingCrossings = %v, want %d", e.RingCrossings, tc.crossings)
			}
			var ranks []int
			for _, rp := range e.Ranked {
				ranks = append(ranks, rp.Rank)
			}
			if diff := cmp.Diff([]int{0, 1, 2, 3}, ranks); diff != "" {
				t.Errorf("ranks (-want,+got):\n%s", diff)
			}
			var b strings.Builder
			if err := e.WriteText(&b); err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(b.String(), tc.wantText) {
				t.Errorf("text does not contain %q:\n%s", tc.wantText, b.String())
			}
		})
	}
}

// TestExplainVolcanoJobTaskOrder checks that explain ranks a Volcano Job's
// pods as the scheduler does: by the Job's spec.tasks order when the
// snapshot has the Job, else by task name.
func TestExplainVolcanoJobTaskOrder(t *testing.T) {
	cases := map[string]struct {
		tasks map[string][]string
		want  []string
	}{
		"spec.tasks lists worker before chief": {
			tasks: map[string][]string{"research/vj": {"worker", "chief"}},
			want:  []string{"research/vj-worker-0", "research/vj-worker-1", "research/vj-chief-0", "research/vj-chief-1"},
		},
		"Job not read: tasks by name": {
			want: []string{"research/vj-chief-0", "research/vj-chief-1", "research/vj-worker-0", "research/vj-worker-1"},
		},
		"another Job's order does not apply": {
			tasks: map[string][]string{"research/other": {"worker", "chief"}},
			want:  []string{"research/vj-chief-0", "research/vj-chief-1", "research/vj-worker-0", "research/vj-worker-1"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			nodes, cnrs := fourNodes(nil, nil)
			pg, _ := gangOf(4, "soft", "s1", "")
			var bound []*corev1.Pod
			for n, task := range []string{"worker", "worker", "chief", "chief"} {
				idx := fmt.Sprint(n % 2)
				z := n / 2
				bound = append(bound, builders.MakePod("research", fmt.Sprintf("vj-%s-%s", task, idx)).Group("llm").
					Req(builders.GPUResource, "4").Req(builders.RDMAResource, "2").Node(fmt.Sprintf("n%d", n+1)).
					Label(placement.KeyTaskSpec, task).Label(placement.KeyTaskIndex, idx).
					Annotation(placement.KeyTaskSpec, task).Annotation(placement.KeyTaskIndex, idx).
					Annotation("volcano.sh/job-name", "vj").
					Annotation(ledger.AnnotationNICs, builders.NUMANICs[z][0]+","+builders.NUMANICs[z][1]).
					Annotation(ledger.AnnotationNUMA, fmt.Sprint(z)).Obj())
			}
			snap := &live.Snapshot{Cluster: &workload.Cluster{Nodes: nodes, CNRs: cnrs, Pods: bound},
				PodGroups: []*schedulingv1beta1.PodGroup{pg}, VolcanoJobTasks: tc.tasks}
			e := Explain(topology.Config{S1NodeLabel: builders.S1Label}, snap, pg)
			var got []string
			for _, rp := range e.Ranked {
				got = append(got, rp.Pod)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("pods in rank order (-want,+got):\n%s", diff)
			}
		})
	}
}

// TestExplainNativeTopology: a PodGroup's spec.networkTopology (read raw
// into the snapshot) is the contract explain shows; a field rdmatopo
// cannot honour is the contract error, naming it, and blocks the gang.
func TestExplainNativeTopology(t *testing.T) {
	cases := map[string]struct {
		nt          string
		wantTier    string
		wantErr     string
		wantBlocked bool
	}{
		"hard at tier 1": {nt: `{"mode":"hard","highestTierAllowed":1}`, wantTier: "s0"},
		"a typo": {nt: `{"mode":"hard","highestTierAlowed":1}`, wantTier: "s1", wantBlocked: true,
			wantErr: "invalid job contract: field spec.networkTopology.highestTierAlowed: unknown field: rdmatopo cannot honour it"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			nodes, cnrs := fourNodes(nil, nil)
			pg, pods := gangOf(2, "", "", "")
			pg.Annotations = nil
			for _, p := range pods {
				delete(p.Annotations, "rdmatopo.io/mode")
				delete(p.Annotations, "rdmatopo.io/highest-tier")
			}
			snap := &live.Snapshot{Cluster: &workload.Cluster{Nodes: nodes, CNRs: cnrs}, Pending: pods,
				PodGroups: []*schedulingv1beta1.PodGroup{pg},
				Native:    map[string]*placement.NativeTopology{pg.Namespace + "/" + pg.Name: placement.DecodeNativeTopology([]byte(tc.nt), nil)}}
			e := Explain(topology.Config{S1NodeLabel: builders.S1Label}, snap, pg)
			if e.Contract.HighestTier != tc.wantTier || e.Contract.Error != tc.wantErr {
				t.Errorf("contract = %+v, want tier %s, error %q", e.Contract, tc.wantTier, tc.wantErr)
			}
			if blocked := e.Blocked != ""; blocked != tc.wantBlocked {
				t.Errorf("Blocked = %q, want blocked %v", e.Blocked, tc.wantBlocked)
			}
		})
	}
}

// TestExplainOtherScheduler: pending pods whose spec.schedulerName is not
// Volcano's are named with the scheduler they wait for, and explain no
// longer says the gang "waits for something else".
func TestExplainOtherScheduler(t *testing.T) {
	cases := map[string]struct {
		names     []string // schedulerName of each pod
		wantOther map[string][]string
		wantNote  string
	}{
		"all Volcano's": {names: []string{"volcano", "volcano"}, wantNote: "waits for something else"},
		"default scheduler (spec names none on the API server)": {
			names:     []string{corev1.DefaultSchedulerName, corev1.DefaultSchedulerName},
			wantOther: map[string][]string{corev1.DefaultSchedulerName: {"llm-0", "llm-1"}},
			wantNote:  `2 pending pod(s) (llm-0, llm-1) wait for the scheduler "default-scheduler" (what a pod gets when its spec names no scheduler), not Volcano's "volcano"`,
		},
		"one pod of another scheduler": {
			names:     []string{"volcano", "kueue-sched"},
			wantOther: map[string][]string{"kueue-sched": {"llm-1"}},
			wantNote:  `1 pending pod(s) (llm-1) wait for the scheduler "kueue-sched", not Volcano's "volcano"`,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			nodes, cnrs := fourNodes(nil, nil)
			pg, pods := gangOf(len(tc.names), "soft", "s1", "")
			for i, n := range tc.names {
				pods[i].Spec.SchedulerName = n
			}
			snap := &live.Snapshot{Cluster: &workload.Cluster{Nodes: nodes, CNRs: cnrs}, Pending: pods,
				PodGroups: []*schedulingv1beta1.PodGroup{pg}}
			e := Explain(topology.Config{S1NodeLabel: builders.S1Label}, snap, pg)
			if diff := cmp.Diff(tc.wantOther, e.OtherSchedulers); diff != "" {
				t.Errorf("OtherSchedulers (-want,+got):\n%s", diff)
			}
			notes := strings.Join(e.Notes, "\n")
			if !strings.Contains(notes, tc.wantNote) {
				t.Errorf("notes %q do not say %q", notes, tc.wantNote)
			}
			if tc.wantOther != nil && strings.Contains(notes, "waits for something else") {
				t.Errorf("notes %q still say the gang waits for something else", notes)
			}
		})
	}
}

// TestExplainGangWithoutNICs: for a gang whose pods request no RDMA NICs,
// explain says how it is placed: as allocate places it, within one domain
// of its hard highest tier when it has one.
func TestExplainGangWithoutNICs(t *testing.T) {
	cases := map[string]struct {
		mode, tier string
		wantNote   string
	}{
		"soft": {mode: "soft", tier: "s0",
			wantNote: "no pending pod requests vke.volcengine.com/rdma: its pods are placed as stock Volcano's allocate places them"},
		"hard s0": {mode: "hard", tier: "s0",
			wantNote: "no pending pod requests vke.volcengine.com/rdma: its pods are placed as stock Volcano's allocate places them, within one s0 domain (the nodes with a NIC under one leaf)"},
		"hard cluster": {mode: "hard", tier: "cluster",
			wantNote: "no pending pod requests vke.volcengine.com/rdma: its pods are placed as stock Volcano's allocate places them"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			nodes, cnrs := fourNodes(nil, nil)
			pg, _ := gangOf(2, tc.mode, tc.tier, "")
			pods := []*corev1.Pod{
				builders.MakePod("research", "llm-0").Group("llm").Req("cpu", "2").Obj(),
				builders.MakePod("research", "llm-1").Group("llm").Req("cpu", "2").Obj(),
			}
			snap := &live.Snapshot{Cluster: &workload.Cluster{Nodes: nodes, CNRs: cnrs}, Pending: pods,
				PodGroups: []*schedulingv1beta1.PodGroup{pg}}
			e := Explain(topology.Config{S1NodeLabel: builders.S1Label}, snap, pg)
			if !slices.Contains(e.Notes, tc.wantNote) {
				t.Errorf("notes %q do not hold %q", e.Notes, tc.wantNote)
			}
		})
	}
}
