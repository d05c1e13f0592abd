package topologyallocate_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/kubewharf/katalyst-api/pkg/apis/node/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	schedulingv1beta1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"

	"github.com/rdmatopo/rdmatopo/config"
	"github.com/rdmatopo/rdmatopo/core/ledger"
	"github.com/rdmatopo/rdmatopo/core/placement"
	"github.com/rdmatopo/rdmatopo/internal/sim/simtest"
	"github.com/rdmatopo/rdmatopo/internal/testing/builders"
	"github.com/rdmatopo/rdmatopo/internal/workload"
	"github.com/rdmatopo/rdmatopo/plugins/rdmatopology"
)

// cpuList is a container's request of cpu CPUs.
func cpuList(cpu string) corev1.ResourceList {
	return corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)}
}

// addCPUZoneNode adds a provider-cabled node (NUMA-0 NICs under leaf A,
// NUMA-1 NICs under leaf B) of two zones of cpu CPUs and 4 GPUs each,
// with the given topology policy.
func (c *cluster) addCPUZoneNode(name string, cpuMilli int64, policy v1alpha1.TopologyPolicy) {
	c.nodes = append(c.nodes, builders.ProviderNode(name).
		Resource("pods", "110").Resource("memory", "512Gi").Obj())
	c.cnrs = append(c.cnrs, builders.MakeCNR(name).Policy(policy).
		Zone(0, 4, cpuMilli).Zone(1, 4, cpuMilli).
		NIC(builders.NUMANICs[0][0], 0, "A").NIC(builders.NUMANICs[0][1], 0, "A").
		NIC(builders.NUMANICs[1][0], 1, "B").NIC(builders.NUMANICs[1][1], 1, "B").Obj())
}

// addPods adds a PodGroup of minMember n and n pods "<name>-<i>" that
// build makes.
func (c *cluster) addPods(name string, n int, build func(name string) *builders.PodWrapper) {
	c.pgs = append(c.pgs, builders.MakePodGroup("ns", name).MinMember(int32(n)).
		Phase(schedulingv1beta1.PodGroupInqueue).Obj())
	for i := 0; i < n; i++ {
		c.pods = append(c.pods, build(fmt.Sprintf("%s-%d", name, i)).Group(name).SchedulerName("volcano").Obj())
	}
}

// TestWhatKubeletAligns: the zones a pod needs are what kubelet's topology
// manager aligns, not the pod's whole request. A RuntimeClass overhead
// counts against the node only; at container scope each container (init
// containers and sidecars too) is aligned on its own, an init container's
// CPUs reused by the containers after it. Each case is one node that holds
// the gang only when counted as kubelet counts it.
func TestWhatKubeletAligns(t *testing.T) {
	cases := map[string]struct {
		zoneCPU int64
		policy  v1alpha1.TopologyPolicy
		n       int
		pod     func(name string) *builders.PodWrapper
		// overhead is the pods' spec.overhead CPU, as a RuntimeClass
		// sets it.
		overhead string
		// wantBound pods; wantZones: the planned NUMA zones of pod 0.
		wantBound int
		wantZones string
	}{
		"pod level: a 4-CPU overhead beside 30 CPUs fits a 32-CPU zone": {
			zoneCPU: 32000, policy: v1alpha1.TopologyPolicySingleNUMANodePodLevel, n: 2,
			overhead: "4",
			pod: func(name string) *builders.PodWrapper {
				return builders.MakePod("ns", name).Req(corev1.ResourceCPU, "30").
					Req(builders.GPUResource, "4").Req(builders.RDMAResource, "2")
			},
			wantBound: 2, wantZones: "0",
		},
		"container level: a 40-CPU sidecar and a 60-CPU init container take a zone each": {
			zoneCPU: 64000, policy: v1alpha1.TopologyPolicySingleNUMANodeContainerLevel, n: 1,
			pod: func(name string) *builders.PodWrapper {
				return builders.MakePod("ns", name).Req(corev1.ResourceCPU, "2").
					Req(builders.GPUResource, "4").Req(builders.RDMAResource, "2").
					Sidecar("proxy", cpuList("40")).InitContainer("warmup", cpuList("60"))
			},
			wantBound: 1, wantZones: "0,1",
		},
		"container level: an init container's CPUs are reused by the container after it": {
			// 60 + 60 CPUs of init containers, each beside nothing, and a
			// 60-CPU container reusing them: 60 per zone, not 120 or 180.
			zoneCPU: 64000, policy: v1alpha1.TopologyPolicySingleNUMANodeContainerLevel, n: 2,
			pod: func(name string) *builders.PodWrapper {
				return builders.MakePod("ns", name).Req(corev1.ResourceCPU, "60").
					Req(builders.GPUResource, "4").Req(builders.RDMAResource, "2").
					InitContainer("fetch", cpuList("60")).InitContainer("warmup", cpuList("60"))
			},
			wantBound: 2, wantZones: "0",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			c := &cluster{}
			c.addCPUZoneNode("n1", tc.zoneCPU, tc.policy)
			c.addPods("g", tc.n, tc.pod)
			if tc.overhead != "" {
				for _, p := range c.pods {
					p.Spec.Overhead = cpuList(tc.overhead)
				}
			}
			o := runSession(t, c)
			checkBindsPlanned(t, o)
			if got := len(o.binds); got != tc.wantBound {
				t.Fatalf("%d pods bound, want %d; condition %q", got, tc.wantBound, condition(o.pgs["ns/g"]))
			}
			if got := o.binds["ns/g-0"].Pod.Annotations[rdmatopology.AnnotationNUMABindResult]; got != tc.wantZones {
				t.Errorf("g-0 planned in zones %q, want %q", got, tc.wantZones)
			}
		})
	}
}

// elasticJob is a Volcano Job of minAvailable 3: task "worker" (3
// replicas, minAvailable 2) listed before task "master" (1 replica,
// minAvailable 1), each pod 4 GPUs and 2 RDMA units.
const elasticJob = `
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata: {name: vj, namespace: ns}
spec:
  schedulerName: volcano
  minAvailable: 3
  tasks:
  - name: worker
    replicas: 3
    minAvailable: 2
    template:
      spec:
        containers:
        - name: main
          resources:
            requests: {cpu: "4", nvidia.com/gpu: "4", vke.volcengine.com/rdma: "2"}
            limits: {nvidia.com/gpu: "4", vke.volcengine.com/rdma: "2"}
  - name: master
    replicas: 1
    minAvailable: 1
    template:
      spec:
        containers:
        - name: main
          resources:
            requests: {cpu: "4", nvidia.com/gpu: "4", vke.volcengine.com/rdma: "2"}
            limits: {nvidia.com/gpu: "4", vke.volcengine.com/rdma: "2"}
`

// TestTaskMinimaOfAnElasticGang: with room for exactly 3 of a Volcano
// Job's 4 pods, the plan takes the 3 that meet every task's minAvailable
// (2 workers and the master), which Volcano's task check accepts, not
// the first 3 by rank (3 workers).
func TestTaskMinimaOfAnElasticGang(t *testing.T) {
	set, err := workload.LoadWorkload("job.yaml", []byte(elasticJob))
	if err != nil {
		t.Fatal(err)
	}
	c := &cluster{pgs: set.PodGroups, pods: set.Pods, tasks: set.VolcanoJobTasks}
	c.addNode("n1", "A", "B")
	c.addBusyNode("n2", "C", "D", busy{numa: 1, gpu: 4, nics: []int{0, 1}})
	o := runSession(t, c)
	checkBinds(t, o)
	roles := map[string]int{}
	for _, b := range o.binds {
		if b.Pod.Labels["volcano.sh/job-name"] == "vj" {
			roles[b.Pod.Annotations["volcano.sh/task-spec"]]++
		}
	}
	if diff := cmp.Diff(map[string]int{"worker": 2, "master": 1}, roles); diff != "" {
		var pg *schedulingv1beta1.PodGroup
		for _, p := range o.pgs {
			if p.Name != "other" {
				pg = p
			}
		}
		t.Errorf("bound pods per task (-want,+got):\n%s\ncondition %q", diff, condition(pg))
	}
}

// TestKCNRWithoutNodeDecidesNoS1: a KCNR whose Node is gone (n0, first by
// name, its NUMA-0 NICs under leaf A) has no S1 to give; leaf A's S1 is
// that of n1, which has a Node in miniPod p1, so a hard-s1 gang that fits
// n1 (leaves A and B, both in p1) is placed.
func TestKCNRWithoutNodeDecidesNoS1(t *testing.T) {
	c := &cluster{}
	c.nodes = append(c.nodes, builders.MakeNode("n1").Shared().S1("p1").GPU(8).RDMA(4).CPU("128").
		Resource("pods", "110").Resource("memory", "512Gi").Obj())
	for _, n := range []struct{ name, leaf1 string }{{"n0", "Z"}, {"n1", "B"}} {
		c.cnrs = append(c.cnrs, builders.ProviderCNR(n.name, "A", n.leaf1).Obj())
	}
	c.addJob("g", 2, 4, 2, map[string]string{ledger.AnnotationMode: "hard", ledger.AnnotationHighestTier: "s1"})
	o := runSession(t, c)
	checkBinds(t, o)
	if got := o.binds.Count("ns", "g"); got != 2 {
		t.Fatalf("%d pods bound, want 2; condition %q", got, condition(o.pgs["ns/g"]))
	}
	if diff := cmp.Diff([]string{"A", "B"}, o.binds.Leaves("ns", "g")); diff != "" {
		t.Errorf("leaves (-want,+got):\n%s", diff)
	}
}

// TestQuantitiesTheSchedulerCannotCount: a pod asking for more CPU than
// the scheduler's int64 millicores hold ("9e18" wraps to 0 in Volcano's
// counters) is never placed on that basis: it stays pending, the reason
// naming the field; RDMA or not.
func TestQuantitiesTheSchedulerCannotCount(t *testing.T) {
	cases := map[string]struct {
		gpu, rdma string
		field     string
	}{
		"a pod without RDMA":    {field: "spec.containers[0].resources.limits[cpu]"},
		"a pod of an RDMA gang": {gpu: "4", rdma: "2", field: "spec.containers[0].resources.limits[cpu]"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			c := &cluster{}
			c.addNode("n1", "A", "B")
			c.addPods("g", 1, func(name string) *builders.PodWrapper {
				w := builders.MakePod("ns", name)
				if tc.gpu != "" {
					w = w.Req(builders.GPUResource, tc.gpu).Req(builders.RDMAResource, tc.rdma)
				}
				return w
			})
			for _, p := range c.pods {
				q := resource.MustParse("9e18")
				p.Spec.Containers[0].Resources.Limits[corev1.ResourceCPU] = q
				p.Spec.Containers[0].Resources.Requests[corev1.ResourceCPU] = q
			}
			st := &setup{conf: config.SchedulerConf}
			sc := simtest.Start(t, st.conf, simtest.Cluster{Nodes: c.nodes, CNRs: c.cnrs, PodGroups: c.pgs, Pods: c.pods}, st.opts)
			o := sc.Session()
			if len(o.Binds) != 0 {
				t.Fatalf("bound %v, want nothing bound", o.Binds)
			}
			// The pod's FailedScheduling Event (and the gang's) names the
			// field (the plugin's own Warning is TestFindUncountable's).
			want := tc.field + ": 9e18: more cpu than the scheduler can count"
			if !slices.ContainsFunc(o.Events, func(e string) bool {
				return strings.HasPrefix(e, "Warning FailedScheduling ") && strings.Contains(e, want)
			}) {
				t.Errorf("events %q, want a FailedScheduling naming %q", o.Events, want)
			}
		})
	}
}

// TestDuplicateRanksKeepTheGangPending: two pods of one gang annotated
// rdmatopo.io/rank "0" leave the gang pending (InvalidAnnotation), the
// reason naming both pods, rather than placed in an order nobody asked for.
func TestDuplicateRanksKeepTheGangPending(t *testing.T) {
	c := &cluster{}
	c.addNode("n1", "A", "B")
	c.addPods("g", 2, func(name string) *builders.PodWrapper {
		return builders.MakePod("ns", name).Req(corev1.ResourceCPU, "4").Req(builders.GPUResource, "4").
			Req(builders.RDMAResource, "2").Annotation(placement.AnnotationRank, "0")
	})
	o := runSession(t, c)
	if got := o.binds.Count("ns", "g"); got != 0 {
		t.Fatalf("%d pods bound, want 0", got)
	}
	got := condition(o.pgs["ns/g"])
	if !strings.Contains(got, "rank 0 is also given to pod") || !strings.Contains(got, "g-0") || !strings.Contains(got, "g-1") {
		t.Errorf("condition %q, want it to name both pods of rank 0", got)
	}
}

// TestFewestS1sOnAFragmentedCluster: each node has its NUMA-0 zone free
// (one 4 GPU + 2 RDMA pod) under its leaf, NUMA 1 busy. No S1 holds 10
// pods; the largest leaves first are a1, b1 and c1 (three S1s), while a1
// with c1 and c2 hold them in two. The gang takes three leaves in two
// S1s.
func TestFewestS1sOnAFragmentedCluster(t *testing.T) {
	c := &cluster{}
	for _, l := range []struct {
		s1, leaf string
		nodes    int
	}{{"a", "a1", 4}, {"b", "b1", 4}, {"c", "c1", 3}, {"c", "c2", 3}} {
		for i := 1; i <= l.nodes; i++ {
			c.addBusyNode(fmt.Sprintf("%s-%d", l.leaf, i), l.leaf, l.leaf+"-busy", busy{numa: 1, gpu: 4, nics: []int{0, 1}})
			c.nodes[len(c.nodes)-1].Labels[builders.S1Label] = l.s1
		}
	}
	c.addJob("g", 10, 4, 2, nil)
	o := runSession(t, c)
	checkBinds(t, o)
	if got := o.binds.Count("ns", "g"); got != 10 {
		t.Fatalf("%d pods bound, want 10; condition %q", got, condition(o.pgs["ns/g"]))
	}
	if diff := cmp.Diff([]string{"a1", "c1", "c2"}, o.binds.Leaves("ns", "g")); diff != "" {
		t.Errorf("leaves (-want,+got):\n%s", diff)
	}
}
