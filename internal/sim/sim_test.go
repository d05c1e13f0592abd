package sim

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/kubewharf/katalyst-api/pkg/apis/node/v1alpha1"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	schedulingv1beta1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"

	"github.com/rdmatopo/rdmatopo/core/ledger"
	"github.com/rdmatopo/rdmatopo/core/topology"
	"github.com/rdmatopo/rdmatopo/internal/sim/nodeagent"
	"github.com/rdmatopo/rdmatopo/internal/testing/builders"
	"github.com/rdmatopo/rdmatopo/internal/workload"
)

// fourNodes is builders.TwoLeavesFourNodes with room for pods: 4 nodes, NUMA-0
// NICs under leafA, NUMA-1 NICs under leafB.
func fourNodes() *workload.Cluster {
	nodes, cnrs := builders.TwoLeavesFourNodes()
	return withPodRoom(nodes, cnrs)
}

// withPodRoom gives every node room for 110 pods (as a kubelet reports).
func withPodRoom(nodes []*corev1.Node, cnrs []*v1alpha1.CustomNodeResource) *workload.Cluster {
	for _, n := range nodes {
		n.Status.Allocatable[corev1.ResourcePods] = resource.MustParse("110")
		n.Status.Capacity[corev1.ResourcePods] = resource.MustParse("110")
	}
	return &workload.Cluster{Nodes: nodes, CNRs: cnrs}
}

// withMinResources sets each PodGroup's minResources to what its pods ask,
// as the job controllers do, so that enqueue weighs it.
func withMinResources(set *workload.Set) *workload.Set {
	for _, pg := range set.PodGroups {
		total := corev1.ResourceList{}
		for _, p := range set.Pods {
			for name, q := range p.Spec.Containers[0].Resources.Requests {
				cur := total[name]
				cur.Add(q)
				total[name] = cur
			}
		}
		pg.Spec.MinResources = &total
	}
	return set
}

// gang returns a PodGroup of n pods, each asking one NUMA zone (4 GPUs, 2
// NICs), created at second `at` after workload.Epoch.
func gang(name string, n int, at int) *workload.Set {
	created := workload.Epoch.Add(time.Duration(at) * time.Second)
	set := &workload.Set{Queues: []*schedulingv1beta1.Queue{workload.NewDefaultQueue()}}
	set.PodGroups = append(set.PodGroups, &schedulingv1beta1.PodGroup{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, CreationTimestamp: metav1.NewTime(created),
			UID: workload.StableUID(workload.KindPodGroup, "default", name)},
		Spec:   schedulingv1beta1.PodGroupSpec{MinMember: int32(n), Queue: workload.DefaultQueue},
		Status: schedulingv1beta1.PodGroupStatus{Phase: schedulingv1beta1.PodGroupPending},
	})
	for i := 0; i < n; i++ {
		set.Pods = append(set.Pods, builders.MakePod("default", fmt.Sprintf("%s-%d", name, i)).
			Req(builders.GPUResource, "4").Req(builders.RDMAResource, "2").Req(corev1.ResourceCPU, "8").
			Group(name).Created(created).Obj())
	}
	return set
}

// newSim builds a simulator with the conf text, cluster and options, and
// submits the sets.
func newSim(t *testing.T, text string, cluster *workload.Cluster, opts Options, sets ...*workload.Set) *Simulator {
	t.Helper()
	c, err := ParseConf(text)
	require.NoError(t, err)
	s, err := New(c, cluster, opts)
	require.NoError(t, err)
	for _, set := range sets {
		require.NoError(t, s.Submit(set))
	}
	return s
}

// boundNodes maps ns/name of bound workload pods to their node.
func boundNodes(s *Simulator) map[string]string {
	out := map[string]string{}
	for _, ps := range s.Pods() {
		if ps.Workload && ps.Pod.Spec.NodeName != "" {
			out[ps.Pod.Namespace+"/"+ps.Pod.Name] = ps.Pod.Spec.NodeName
		}
	}
	return out
}

// minipodConf reads S1 membership from the fixtures' miniPod label.
var minipodConf = confWith("      s1NodeLabel: " + builders.S1Label + "\n")

func TestRunPlacesGangUnderOneLeaf(t *testing.T) {
	s := newSim(t, minipodConf, fourNodes(), Options{}, gang("g", 3, 0))
	reports, err := s.Run(10)
	require.NoError(t, err)
	require.GreaterOrEqual(t, len(reports), 2)
	last := reports[len(reports)-1]
	require.False(t, last.Progress(), "the run stops after a cycle that binds nothing")
	var binds int
	for _, r := range reports {
		binds += len(r.Binds)
		require.Positive(t, r.Duration)
	}
	require.Equal(t, 3, binds)

	for _, ps := range s.Pods() {
		require.NotEmpty(t, ps.Pod.Spec.NodeName, ps.Pod.Name)
		require.Equal(t, corev1.PodRunning, ps.Pod.Status.Phase)
		require.NotEmpty(t, ps.Pod.Annotations[ledger.AnnotationNICs], "annotations of bind time are kept")
		require.Positive(t, ps.BoundCycle)
	}
	pgs := s.PodGroups()
	require.Len(t, pgs, 1)
	require.Equal(t, schedulingv1beta1.PodGroupRunning, pgs[0].Status.Phase, "PodGroup status is written back")
	require.Contains(t, pgs[0].Annotations, ledger.AnnotationPlacement)

	rep := BuildReport(s)
	require.Len(t, rep.Jobs, 1)
	want := JobPlacement{Namespace: "default", Name: "g", MinMember: 3, Placed: true, BoundPods: 3, Pods: 3, RDMA: true,
		Tier: "s0", S0: []string{rep.Jobs[0].S0[0]}, S1: []string{"s1-0"}}
	if diff := cmp.Diff(want, rep.Jobs[0]); diff != "" {
		t.Errorf("job (-want +got):\n%s", diff)
	}
	for _, p := range rep.Pods {
		require.Len(t, p.NICs, 2)
		require.Equal(t, rep.Jobs[0].S0, p.S0)
		require.GreaterOrEqual(t, p.NUMA, 0)
	}
}

func TestStockConfPlacesWithoutNICs(t *testing.T) {
	s := newSim(t, stockConf, fourNodes(), Options{}, gang("g", 3, 0))
	_, err := s.Run(10)
	require.NoError(t, err)
	rep := BuildReport(s)
	require.True(t, rep.Jobs[0].Placed)
	require.Equal(t, "", rep.Jobs[0].Tier, "stock Volcano assigns no NICs, so no tier")
	for _, p := range rep.Pods {
		require.NotEmpty(t, p.Node)
		require.Equal(t, -1, p.NUMA)
		require.Empty(t, p.NICs)
	}
}

func TestUnplacedJobHasReason(t *testing.T) {
	// 8 zones in all: a 9-pod gang can never fit.
	s := newSim(t, topoConf, fourNodes(), Options{}, withMinResources(gang("big", 9, 0)))
	_, err := s.Run(10)
	require.NoError(t, err)
	rep := BuildReport(s)
	job := rep.Jobs[0]
	require.False(t, job.Placed)
	require.Equal(t, "", job.Tier)
	require.Zero(t, job.BoundPods)
	require.Contains(t, job.Reason, "not admitted to queue \"default\" by enqueue", "36 GPUs asked of 32: enqueue holds it")
	for _, p := range rep.Pods {
		require.Equal(t, "", p.Node)
		require.Equal(t, -1, p.NUMA)
	}
}

func TestHardModeReasonFromPlugin(t *testing.T) {
	nodes, cnrs := builders.TwoLeavesFourNodes()
	set := gang("hard", 3, 0)
	set.PodGroups[0].Annotations = map[string]string{ledger.AnnotationMode: "hard", ledger.AnnotationHighestTier: "s0"}
	// Two nodes: each leaf has two zones, the gang needs three under one.
	s := newSim(t, minipodConf, withPodRoom(nodes[:2], cnrs[:2]), Options{}, set)
	_, err := s.Run(10)
	require.NoError(t, err)
	job := BuildReport(s).Jobs[0]
	require.False(t, job.Placed)
	require.Contains(t, job.Reason, "S0", "the rdma-topology plugin's condition explains it")
	require.NotContains(t, job.Reason, "enqueue")
}

func TestBindHookFailureRetries(t *testing.T) {
	failed := map[string]bool{}
	hook := func(pod *corev1.Pod, node string) error {
		if pod.Name == "g-1" && !failed[pod.Name] {
			failed[pod.Name] = true
			return errors.New("injected: API server unavailable")
		}
		return nil
	}
	var seen []int
	opts := Options{BindHook: hook, OnCycle: func(r *CycleReport) { seen = append(seen, r.Cycle) }}
	s := newSim(t, topoConf, fourNodes(), opts, gang("g", 3, 0))
	reports, err := s.Run(10)
	require.NoError(t, err)

	var failedBinds []string
	for _, r := range reports {
		for _, b := range r.FailedBinds {
			failedBinds = append(failedBinds, b.Pod.Name)
			require.Error(t, b.Err)
		}
	}
	require.Equal(t, []string{"g-1"}, failedBinds)
	require.Len(t, boundNodes(s), 3, "the failed pod is bound again in a later cycle")
	require.Len(t, seen, len(reports), "OnCycle sees every cycle")
}

func TestMutationsBetweenCycles(t *testing.T) {
	nodes, cnrs := builders.TwoLeavesFourNodes()
	cluster := withPodRoom(nodes[:2], cnrs[:2]) // 4 zones: one 4-pod gang
	s := newSim(t, topoConf, cluster, Options{}, gang("first", 4, 0), gang("second", 4, 1))
	_, err := s.Run(10)
	require.NoError(t, err)
	rep := BuildReport(s)
	require.True(t, rep.Jobs[0].Placed)
	require.False(t, rep.Jobs[1].Placed, "no room for the second gang")

	// The first gang finishes: its pods go away and the second one fits.
	for i := 0; i < 4; i++ {
		require.NoError(t, s.DeletePod("default", fmt.Sprintf("first-%d", i)))
	}
	require.NoError(t, s.DeletePodGroup("default", "first"))
	_, err = s.Run(10)
	require.NoError(t, err)
	rep = BuildReport(s)
	require.Len(t, rep.Jobs, 1)
	require.True(t, rep.Jobs[0].Placed)

	// New capacity arrives: two more nodes, then a third gang.
	more := withPodRoom(nodes[2:], cnrs[2:])
	for i := range more.Nodes {
		s.UpsertNode(more.Nodes[i])
		s.UpsertCNR(more.CNRs[i])
	}
	require.NoError(t, s.Submit(gang("third", 4, 2)))
	_, err = s.Run(10)
	require.NoError(t, err)
	rep = BuildReport(s)
	require.True(t, rep.Jobs[1].Placed)
	for _, p := range rep.Pods {
		if p.Job == "default/third" {
			require.Contains(t, []string{"n3", "n4"}, p.Node)
		}
	}
	require.Error(t, s.DeleteNode("nope"))
	require.Error(t, s.DeleteCNR("nope"))
	require.Error(t, s.Submit(gang("third", 1, 3)), "PodGroup names must be new")
}

func TestRunIsDeterministic(t *testing.T) {
	run := func() *Report {
		nodes, cnrs := builders.ClusterShape{Nodes: 12, ZonesPerLeaf: 3, LeavesPerS1: 4, SpanningEvery: 4}.Generate()
		s := newSim(t, topoConf, withPodRoom(nodes, cnrs), Options{},
			gang("a", 3, 0), gang("b", 5, 1), gang("c", 2, 2), gang("d", 7, 3))
		_, err := s.Run(20)
		require.NoError(t, err)
		return BuildReport(s)
	}
	first := run()
	for i := 0; i < 3; i++ {
		if diff := cmp.Diff(first, run()); diff != "" {
			t.Fatalf("run %d differs (-first +now):\n%s", i+2, diff)
		}
	}
}

func TestRunLimit(t *testing.T) {
	s := newSim(t, topoConf, fourNodes(), Options{}, gang("g", 3, 0))
	_, err := s.Run(1)
	require.Error(t, err, "one cycle binds, so a limit of one cycle is exceeded")
}

func TestNewRejectsUnboundClusterPod(t *testing.T) {
	c, err := ParseConf(topoConf)
	require.NoError(t, err)
	cluster := fourNodes()
	cluster.Pods = []*corev1.Pod{builders.MakePod("ns", "p").Obj()}
	_, err = New(c, cluster, Options{})
	require.Error(t, err)
}

func TestLocateUnknownNIC(t *testing.T) {
	s := newSim(t, minipodConf, fourNodes(), Options{})
	f := s.Fabric()
	cases := map[string]struct {
		node, nic string
		want      nicPlace
	}{
		"known NIC": {node: "n1", nic: builders.NUMANICs[1][0],
			want: nicPlace{numa: 1, s0: "leafB", s1: "s1-0", known: true}},
		"NIC the KCNR does not list": {node: "n1", nic: "0000:99:00.0",
			want: nicPlace{numa: -1, s0: "unknown:n1/0000:99:00.0", s1: "s1-0"}},
		"node the fabric does not know": {node: "ghost", nic: "0000:1a:00.0",
			want: nicPlace{numa: -1, s0: "unknown:ghost/0000:1a:00.0"}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := locate(f, tc.node, topology.NICID(tc.nic))
			require.Equal(t, tc.want, got)
		})
	}
}

func TestConfirmPodAndRelease(t *testing.T) {
	s := newSim(t, minipodConf, fourNodes(), Options{}, gang("g", 2, 0))
	_, err := s.Run(10)
	require.NoError(t, err)

	// usedNICs counts the NICs the fabric (the KCNRs) shows in use, and
	// whether the pod's consumer id holds them.
	usedNICs := func(pod *corev1.Pod) (used, byPod int) {
		f := s.Fabric()
		for _, name := range f.NodeNames() {
			n, _ := f.Node(name)
			for _, z := range n.Zones {
				for _, nic := range z.NICs {
					if !nic.Free {
						used++
					}
					for _, c := range nic.Consumers {
						if c == nodeagent.Consumer(pod) {
							byPod++
						}
					}
				}
			}
		}
		return used, byPod
	}
	pods := s.Pods()
	first := pods[0].Pod
	used, _ := usedNICs(first)
	require.Zero(t, used, "a bind alone does not reach the KCNR")

	require.NoError(t, confirmErr(s.ConfirmPod("default", "g-0")))
	require.NoError(t, confirmErr(s.ConfirmPod("default", "g-0")), "confirming twice is harmless")
	used, byPod := usedNICs(first)
	require.Equal(t, 2, used)
	require.Equal(t, 2, byPod)
	cnrs := s.CNRs()
	var numaAlloc *v1alpha1.Allocation
	for _, c := range cnrs {
		if c.Name != first.Spec.NodeName {
			continue
		}
		for _, socket := range c.Status.TopologyZone {
			for _, numa := range socket.Children {
				for _, a := range numa.Allocations {
					if a.Consumer == nodeagent.Consumer(first) {
						numaAlloc = a
					}
				}
			}
		}
	}
	require.NotNil(t, numaAlloc, "the NUMA zone lists the pod")
	gpus := (*numaAlloc.Requests)[builders.GPUResource]
	require.Equal(t, int64(4), gpus.Value())

	// Once the KCNR shows both pods, the scheduler counts each NIC once:
	// the six zones left take a 6-pod gang.
	require.NoError(t, confirmErr(s.ConfirmPod("default", "g-1")))
	require.NoError(t, s.Submit(gang("h", 6, 1)))
	_, err = s.Run(10)
	require.NoError(t, err)
	require.True(t, BuildReport(s).Jobs[1].Placed)

	require.NoError(t, s.DeletePod("default", "g-0"))
	used, byPod = usedNICs(first)
	require.Zero(t, byPod, "a deleted pod leaves the KCNR")
	require.Equal(t, 2, used, "g-1 stays in the KCNR; h's binds are not confirmed")
	require.Error(t, confirmErr(s.ConfirmPod("default", "g-0")))
	require.Error(t, confirmErr(s.ConfirmPod("default", "nope")))
}

func TestDeletedPodsAreForgotten(t *testing.T) {
	s := newSim(t, topoConf, fourNodes(), Options{})
	names := func() []string {
		var out []string
		for _, ps := range s.Pods() {
			out = append(out, ps.Pod.Name)
		}
		return out
	}
	pod := func(name string) *corev1.Pod {
		return builders.MakePod("default", name).Req(corev1.ResourceCPU, "1").Group("g").Obj()
	}
	for _, n := range []string{"a", "b", "c", "d"} {
		require.NoError(t, s.AddPod(pod(n)))
	}
	require.Error(t, s.AddPod(pod("a")), "names are unique")
	require.NoError(t, s.DeletePod("default", "a"))
	require.Error(t, s.DeletePod("default", "a"))
	require.Equal(t, []string{"b", "c", "d"}, names())
	require.NoError(t, s.AddPod(pod("a")), "a deleted pod's name can come back")
	require.Equal(t, []string{"b", "c", "d", "a"}, names(), "in its new arrival position")
	for _, n := range []string{"b", "c", "d"} {
		require.NoError(t, s.DeletePod("default", n))
	}
	require.Equal(t, []string{"a"}, names())
	require.LessOrEqual(t, len(s.podOrder), 2, "stale entries are compacted")
}

func TestReportOnTopologyUnknownNodes(t *testing.T) {
	// Nodes with RDMA but no KCNR: every NIC is a leaf of its own, with a
	// synthetic id the report must still show.
	nodes, _ := builders.TwoLeavesFourNodes()
	s := newSim(t, topoConf, withPodRoom(nodes, nil), Options{}, gang("g", 2, 0))
	_, err := s.Run(10)
	require.NoError(t, err)
	rep := BuildReport(s)
	job := rep.Jobs[0]
	require.True(t, job.Placed)
	require.True(t, job.RDMA)
	require.NotEmpty(t, job.Tier)
	for _, p := range rep.Pods {
		require.Len(t, p.NICs, 2, "synthetic NIC ids are reported")
		for _, s0 := range p.S0 {
			require.True(t, topology.S0ID(s0).IsUnknown(), s0)
		}
	}
	// Without an S1 label every leaf is in the one S1: each pod's two NICs
	// are two leaves, so tier s1 even when both pods share a node.
	require.Equal(t, "s1", job.Tier)
}

func TestStockConfReportsRDMAJobs(t *testing.T) {
	s := newSim(t, stockConf, fourNodes(), Options{}, gang("g", 2, 0))
	_, err := s.Run(10)
	require.NoError(t, err)
	job := BuildReport(s).Jobs[0]
	require.True(t, job.RDMA)
	require.Equal(t, "", job.Tier)
}

// TestRestartRebuildsFromObjects restarts the simulated scheduler after a
// gang was bound: the new Volcano cache holds the bound pods, the ledger
// starts empty and is rebuilt from their annotations, and the next gang is
// placed on what is left without double-booking a NIC.
func TestRestartRebuildsFromObjects(t *testing.T) {
	s := newSim(t, minipodConf, fourNodes(), Options{}, gang("g1", 3, 0))
	_, err := s.Run(5)
	require.NoError(t, err)
	require.Len(t, boundNodes(s), 3)
	before := s.Ledger().All()
	require.Len(t, before, 3)
	oldCache := s.cache

	s.Restart()
	require.NotSame(t, oldCache, s.cache, "Volcano's cache is rebuilt")
	require.Zero(t, s.Ledger().Len(), "the ledger starts empty")
	tasks := 0
	for _, n := range s.cache.Nodes {
		tasks += len(n.Tasks)
	}
	require.Equal(t, 3, tasks, "the new cache holds the bound pods")
	require.Len(t, s.cache.Jobs, 1)

	// Five zones are left: a gang of five fits exactly, a sixth pod does not.
	require.NoError(t, s.Submit(gang("g2", 5, 1)))
	require.NoError(t, s.Submit(gang("g3", 1, 2)))
	_, err = s.Run(5)
	require.NoError(t, err)
	bound := boundNodes(s)
	require.Len(t, bound, 8)
	require.NotContains(t, bound, "default/g3-0")
	require.NoError(t, s.Ledger().CheckInvariants())
	after := map[string]ledger.Reservation{}
	for _, r := range s.Ledger().All() {
		after[r.UID] = r
	}
	require.Len(t, after, 8)
	for _, r := range before {
		got, ok := after[r.UID]
		require.True(t, ok, "reservation of %s restored", r.Name)
		require.Equal(t, r.NICs(), got.NICs(), "pod %s keeps its NICs", r.Name)
	}
}

// confirmErr drops ConfirmPod's reservation.
func confirmErr(_ ledger.Reservation, err error) error { return err }

// TestReinstallKnowsPodsFromKCNRs: after a gang was bound (and its KCNRs
// list it, the default node agent confirming every bind), Reinstall strips
// its pods' annotations and restarts: the next session restores each pod's
// reservation from what its KCNR lists, on the same NICs, and the next
// gang is placed around them.
func TestReinstallKnowsPodsFromKCNRs(t *testing.T) {
	s := newSim(t, minipodConf, fourNodes(), Options{NodeAgent: nodeagent.Default}, gang("g1", 3, 0))
	_, err := s.Run(5)
	require.NoError(t, err)
	before := s.Ledger().All()
	require.Len(t, before, 3)
	var keys []string
	for _, r := range before {
		keys = append(keys, r.Namespace+"/"+r.Name)
	}
	require.NoError(t, s.Reinstall(keys))
	for _, ps := range s.Pods() {
		for k := range ps.Pod.Annotations {
			require.NotContains(t, k, "rdmatopo.io/", "pod %s keeps annotation %s", ps.Pod.Name, k)
		}
	}
	require.Zero(t, s.Ledger().Len(), "the ledger starts empty")
	require.NoError(t, s.Submit(gang("g2", 5, 1)))
	_, err = s.Run(5)
	require.NoError(t, err)
	require.Len(t, boundNodes(s), 8)
	require.NoError(t, s.Ledger().CheckInvariants())
	after := map[string]ledger.Reservation{}
	for _, r := range s.Ledger().All() {
		after[r.UID] = r
	}
	for _, r := range before {
		got, ok := after[r.UID]
		require.True(t, ok, "reservation of %s restored from its KCNR", r.Name)
		require.Equal(t, r.NICs(), got.NICs(), "pod %s keeps its NICs", r.Name)
	}
	require.Error(t, s.Reinstall([]string{"default/nobody"}))
}
