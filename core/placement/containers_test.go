package placement

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/kubewharf/katalyst-api/pkg/apis/node/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	resourcehelper "k8s.io/kubernetes/pkg/api/v1/resource"

	"github.com/rdmatopo/rdmatopo/core/ledger"
	"github.com/rdmatopo/rdmatopo/core/topology"
	"github.com/rdmatopo/rdmatopo/internal/testing/builders"
)

// twoContainers is a pod of two containers, each asking for half of
// total.
func twoContainers(total Shape) Shape {
	half := Part{GPU: total.GPU / 2, NICs: total.NICs / 2, CPUMilli: total.CPUMilli / 2}
	a, b := half, half
	a.Names, b.Names = []string{"a"}, []string{"b"}
	return SplitShape(total, []Part{a, b})
}

func TestSplitShape(t *testing.T) {
	total := Shape{GPU: 8, NICs: 4, CPUMilli: 16000}
	cases := map[string]struct {
		total Shape
		parts []Part
		want  []Part
	}{
		"one container: not split": {
			total: total,
			parts: []Part{{Names: []string{"main"}, GPU: 8, NICs: 4, CPUMilli: 16000}},
		},
		"a container asking nothing is dropped": {
			total: total,
			parts: []Part{{Names: []string{"main"}, GPU: 8, NICs: 4, CPUMilli: 16000}, {Names: []string{"log"}}},
		},
		"largest first, ties by name": {
			total: total,
			parts: []Part{
				{Names: []string{"z"}, GPU: 2, NICs: 1, CPUMilli: 4000},
				{Names: []string{"b"}, GPU: 4, NICs: 2, CPUMilli: 8000},
				{Names: []string{"a"}, GPU: 2, NICs: 1, CPUMilli: 4000},
			},
			want: []Part{
				{Names: []string{"b"}, GPU: 4, NICs: 2, CPUMilli: 8000},
				{Names: []string{"a"}, GPU: 2, NICs: 1, CPUMilli: 4000},
				{Names: []string{"z"}, GPU: 2, NICs: 1, CPUMilli: 4000},
			},
		},
		"what the pod asks beyond its parts stays with the pod, not a part": {
			total: Shape{GPU: 8, NICs: 4, CPUMilli: 60000},
			parts: []Part{
				{Names: []string{"a"}, GPU: 4, NICs: 2, CPUMilli: 8000, Order: 1},
				{Names: []string{"b"}, GPU: 4, NICs: 2, CPUMilli: 8000, Order: 2},
				{Names: []string{"warmup"}, CPUMilli: 60000, Init: true},
			},
			want: []Part{
				{Names: []string{"a"}, GPU: 4, NICs: 2, CPUMilli: 8000, Order: 1},
				{Names: []string{"b"}, GPU: 4, NICs: 2, CPUMilli: 8000, Order: 2},
				{Names: []string{"warmup"}, CPUMilli: 60000, Init: true},
			},
		},
		"an init container asking for NICs keeps the pod whole": {
			total: total,
			parts: []Part{
				{Names: []string{"a"}, GPU: 4, NICs: 2, CPUMilli: 8000, Order: 1},
				{Names: []string{"b"}, GPU: 4, NICs: 2, CPUMilli: 8000, Order: 2},
				{Names: []string{"probe"}, NICs: 1, Init: true},
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := SplitShape(tc.total, tc.parts)
			if diff := cmp.Diff(tc.want, got.Parts(), cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("parts (-want +got):\n%s", diff)
			}
			if got.GPU != tc.total.GPU || got.NICs != tc.total.NICs || got.CPUMilli != tc.total.CPUMilli {
				t.Errorf("total changed: %+v, want %+v", got, tc.total)
			}
		})
	}
	t.Run("beyond the most parts the smallest running side by side merge", func(t *testing.T) {
		var parts []Part
		for i := 0; i < maxParts+2; i++ {
			parts = append(parts, Part{Names: []string{fmt.Sprintf("c%d", i)}, CPUMilli: int64(1000 * (maxParts + 2 - i)), Order: i + 1})
		}
		// The smallest init container stays a part of its own.
		parts = append(parts, Part{Names: []string{"init"}, CPUMilli: 500, Init: true})
		got := SplitShape(Shape{CPUMilli: 1000 * int64((maxParts+2)*(maxParts+3)/2)}, parts).Parts()
		if len(got) != maxParts {
			t.Fatalf("%d parts, want %d", len(got), maxParts)
		}
		merged := got[maxParts-2]
		want := Part{Names: []string{"c6", "c7", "c8", "c9"}, CPUMilli: 10000, Order: 7}
		if diff := cmp.Diff(want, merged); diff != "" {
			t.Errorf("merged part (-want +got):\n%s", diff)
		}
		if last := got[maxParts-1]; !last.Init {
			t.Errorf("last part %+v, want the init container", last)
		}
	})
	t.Run("equal pods of equal containers have equal shapes", func(t *testing.T) {
		if twoContainers(total) != twoContainers(total) {
			t.Error("shapes differ")
		}
		if twoContainers(total) == total {
			t.Error("a split shape equals the unsplit one")
		}
	})
}

// policyNode adds a provider node (2 zones x 4 GPUs x 2 NICs, zone 0 under
// leaf0, zone 1 under leaf1) with the given topology policy.
func (f *fixture) policyNode(name string, policy v1alpha1.TopologyPolicy, leaf0, leaf1 string) *builders.CNRWrapper {
	return f.node(name, "s1-0", leaf0, leaf1).Policy(policy)
}

func TestPlanContainerLevel(t *testing.T) {
	whole2 := twoContainers(whole)  // 2 x (4 GPU + 2 RDMA): needs both zones
	small2 := twoContainers(worker) // 2 x (2 GPU + 1 RDMA): fits one zone
	type want struct {
		placed bool
		// zones and containers of pod p0
		zones      []int
		containers []ledger.ContainerUse
	}
	cases := map[string]struct {
		policy v1alpha1.TopologyPolicy
		busy   bool // zone 0 of n1 fully taken
		g      Gang
		want   want
	}{
		"container level: each container in a zone of its own": {
			policy: v1alpha1.TopologyPolicySingleNUMANodeContainerLevel, g: gang(2, whole2),
			want: want{placed: true, zones: []int{0, 1}, containers: []ledger.ContainerUse{
				{Names: []string{"a"}, NUMA: 0, NICs: []topology.NICID{topology.NICID(builders.NUMANICs[0][0]), topology.NICID(builders.NUMANICs[0][1])}},
				{Names: []string{"b"}, NUMA: 1, NICs: []topology.NICID{topology.NICID(builders.NUMANICs[1][0]), topology.NICID(builders.NUMANICs[1][1])}},
			}},
		},
		"pod level: the whole pod in one zone, which none holds": {
			policy: v1alpha1.TopologyPolicySingleNUMANodePodLevel, g: gang(2, whole2),
		},
		"container level, unsplit pod: one zone, which none holds": {
			policy: v1alpha1.TopologyPolicySingleNUMANodeContainerLevel, g: gang(2, whole),
		},
		"container level: containers that fit one zone together stay there": {
			policy: v1alpha1.TopologyPolicySingleNUMANodeContainerLevel, g: gang(2, small2),
			want: want{placed: true, zones: []int{0}},
		},
		"spanning node: the pod spans zones, no container split": {
			policy: v1alpha1.TopologyPolicyNone, g: gang(2, whole2),
			want: want{placed: true, zones: []int{0, 1}},
		},
		"container level: a node with a busy zone cannot take a split pod": {
			policy: v1alpha1.TopologyPolicySingleNUMANodeContainerLevel, busy: true, g: gang(2, whole2),
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			f := &fixture{}
			w := f.policyNode("n1", tc.policy, "A", "B")
			if tc.busy {
				usedZone(w, 0)
			}
			f.add(w)
			f.add(f.policyNode("n2", tc.policy, "A", "B"))
			s := NewState(f.fabric(), ledger.New())
			plan, fail := s.Plan(tc.g)
			if (plan != nil) != tc.want.placed {
				t.Fatalf("placed = %v (failure %v), want %v", plan != nil, fail, tc.want.placed)
			}
			if plan == nil {
				return
			}
			checkPlan(t, s, tc.g, plan)
			a := plan.Assignments[0]
			var zones []int
			for _, z := range a.Zones {
				zones = append(zones, z.NUMA)
			}
			if diff := cmp.Diff(tc.want.zones, zones); diff != "" {
				t.Errorf("zones of %s (-want +got):\n%s", a.PodUID, diff)
			}
			if diff := cmp.Diff(tc.want.containers, a.Containers, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("containers of %s (-want +got):\n%s", a.PodUID, diff)
			}
			if a.Containers != nil {
				r := ledger.Reservation{UID: a.PodUID, Name: a.PodUID, Node: a.Node, Zones: a.Zones, Containers: a.Containers}
				if err := ledger.New().Reserve(r); err != nil {
					t.Errorf("the ledger refuses the assignment: %v", err)
				}
			}
		})
	}
}

// TestContainerLevelFitAndExactFill: the plugin's per-node check (Fit) and
// the backtracking fill place a split pod container by container too.
func TestContainerLevelFitAndExactFill(t *testing.T) {
	f := &fixture{}
	f.add(f.policyNode("n1", v1alpha1.TopologyPolicySingleNUMANodeContainerLevel, "A", "B"))
	f.add(f.policyNode("n2", v1alpha1.TopologyPolicySingleNUMANodePodLevel, "A", "B"))
	s := NewState(f.fabric(), ledger.New())
	sh := twoContainers(whole)
	if a, ok := s.Fit("n1", sh, nil); !ok || len(a.Containers) != 2 {
		t.Errorf("Fit(n1, container level) = %+v, %v; want two containers in two zones", a, ok)
	}
	if _, ok := s.Fit("n2", sh, nil); ok {
		t.Error("Fit(n2, pod level) placed a pod no zone holds")
	}
	g := gang(1, sh)
	p := &planner{s: s, g: &g, main: mainShape(g.Pods), groups: groupsOf(g.Pods)}
	assign, ok := p.exactFill(g.Pods, []string{"n2", "n1"}, nil)
	if !ok || assign[0].Node != "n1" || len(assign[0].Containers) != 2 {
		t.Errorf("exactFill = %+v, %v; want the pod on n1, container by container", assign, ok)
	}
}

// TestZoneNeedIsPodRequests holds zoneNeed equal to Kubernetes' effective
// request of a pod made of the zone's containers, in kubelet's order: the
// count kubelet's CPU and device managers reach with init containers'
// resources reused by the containers after them.
func TestZoneNeedIsPodRequests(t *testing.T) {
	rng := rand.New(rand.NewPCG(43, 1))
	always := corev1.ContainerRestartPolicyAlways
	for run := 0; run < 500; run++ {
		pod := &corev1.Pod{}
		var parts []Part
		n := 1 + rng.IntN(6)
		for i := 0; i < n; i++ {
			p := Part{Names: []string{fmt.Sprintf("c%d", i)}, GPU: rng.Int64N(5), CPUMilli: 1000 * rng.Int64N(50), Order: i}
			c := corev1.Container{Name: p.Names[0], Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
				corev1.ResourceCPU:   *resource.NewMilliQuantity(p.CPUMilli, resource.DecimalSI),
				builders.GPUResource: *resource.NewQuantity(p.GPU, resource.DecimalSI),
			}}}
			switch rng.IntN(3) {
			case 0: // init container
				p.Init = true
				pod.Spec.InitContainers = append(pod.Spec.InitContainers, c)
			case 1: // sidecar
				c.RestartPolicy = &always
				pod.Spec.InitContainers = append(pod.Spec.InitContainers, c)
			default: // regular container, after every init container
				p.Order = 100 + i
				pod.Spec.Containers = append(pod.Spec.Containers, c)
			}
			parts = append(parts, p)
		}
		in := make([]int, len(parts))
		for i := range in {
			in[i] = len(parts) - 1 - i // the order of parts in a zone does not matter
		}
		gpu, cpu, _ := zoneNeed(parts, in)
		want := resourcehelper.PodRequests(pod, resourcehelper.PodResourcesOptions{ExcludeOverhead: true})
		wantGPU := want[builders.GPUResource]
		if gpu != wantGPU.Value() || cpu != want.Cpu().MilliValue() {
			t.Fatalf("run %d: zoneNeed %d GPU %dm CPU, PodRequests %s GPU %s CPU; pod %+v", run, gpu, cpu, wantGPU.String(), want.Cpu(), pod.Spec)
		}
	}
}
