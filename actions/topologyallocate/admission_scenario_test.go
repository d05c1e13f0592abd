package topologyallocate_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rdmatopo/rdmatopo/core/ledger"
	"github.com/rdmatopo/rdmatopo/internal/testing/builders"
)

// gpuTaint is what the NVIDIA GPU operator and most providers put on GPU
// nodes.
var gpuTaint = corev1.Taint{Key: "nvidia.com/gpu", Value: "present", Effect: corev1.TaintEffectNoSchedule}

// tolerateGPU is the toleration training pods carry for gpuTaint.
var tolerateGPU = corev1.Toleration{Key: "nvidia.com/gpu", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}

// node returns the cluster's node of that name.
func (c *cluster) node(name string) *corev1.Node {
	for _, n := range c.nodes {
		if n.Name == name {
			return n
		}
	}
	panic("no node " + name)
}

// pod returns the cluster's pod ns/name.
func (c *cluster) pod(name string) *corev1.Pod {
	for _, p := range c.pods {
		if p.Name == name {
			return p
		}
	}
	panic("no pod " + name)
}

// jobPods returns the cluster's pods of a job.
func (c *cluster) jobPods(job string) []*corev1.Pod {
	var out []*corev1.Pod
	for _, p := range c.pods {
		if strings.HasPrefix(p.Name, job+"-") {
			out = append(out, p)
		}
	}
	return out
}

// bindings returns pod name -> node of the job's bound pods.
func bindings(o *outcome, job string) map[string]string {
	out := map[string]string{}
	for name, task := range o.binds {
		if strings.HasPrefix(name, "ns/"+job+"-") {
			out[strings.TrimPrefix(name, "ns/")] = task.Node
		}
	}
	return out
}

// taintGPU puts gpuTaint on every node the cluster has so far.
func taintGPU(c *cluster) {
	for _, n := range c.nodes {
		n.Spec.Taints = []corev1.Taint{gpuTaint}
	}
}

// tolerateGPUIn makes every pod of the job tolerate gpuTaint.
func tolerateGPUIn(c *cluster, job string) {
	for _, p := range c.jobPods(job) {
		p.Spec.Tolerations = []corev1.Toleration{tolerateGPU}
	}
}

// label sets a label on a node.
func label(n *corev1.Node, key, value string) {
	if n.Labels == nil {
		n.Labels = map[string]string{}
	}
	n.Labels[key] = value
}

// fourNodesAB adds n1..n4 with NUMA 0 under leaf A and NUMA 1 under B.
func fourNodesAB(c *cluster) {
	for i := 1; i <= 4; i++ {
		c.addNode(fmt.Sprintf("n%d", i), "A", "B")
	}
}

// TestKubernetesAdmission: the gang is planned on what Volcano's
// predicates and the node's resources admit for each of its pods, so a
// gang stock allocate places is placed, at the fewest leaves the
// constraints allow, and a gang the predicates refuse everywhere says why.
func TestKubernetesAdmission(t *testing.T) {
	hardS0 := map[string]string{ledger.AnnotationMode: "hard", ledger.AnnotationHighestTier: "s0"}
	cases := map[string]struct {
		build func(c *cluster)
		job   string
		// wantBound is the number of the job's pods bound.
		wantBound int
		// wantLeaves, wantNodes and wantOn, when set, are the leaves,
		// the number of distinct nodes and the pod -> node bindings.
		wantLeaves []string
		wantNodes  int
		wantOn     map[string]string
		// wantReason is a substring of the PodGroup condition when the
		// gang is not placed.
		wantReason string
		// s1s reads each node's S1 from builders.S1Label.
		s1s bool
	}{
		"every node carries the GPU taint, the pods tolerate it": {
			build: func(c *cluster) {
				fourNodesAB(c)
				taintGPU(c)
				c.addJob("g", 4, 4, 2, hardS0)
				tolerateGPUIn(c, "g")
			},
			job: "g", wantBound: 4, wantLeaves: []string{"A"},
		},
		"every node carries the GPU taint, the pods do not tolerate it": {
			build: func(c *cluster) {
				fourNodesAB(c)
				taintGPU(c)
				c.addJob("g", 2, 4, 2, nil)
			},
			job: "g", wantBound: 0, wantReason: "untolerated taint",
		},
		"a leaf of tainted nodes holds a tolerating hard s0 gang": {
			build: func(c *cluster) {
				fourNodesAB(c)
				taintGPU(c)
				c.addNode("u1", "C", "D")
				c.addNode("u2", "C", "D")
				c.addJob("g", 4, 4, 2, hardS0)
				tolerateGPUIn(c, "g")
			},
			job: "g", wantBound: 4, wantLeaves: []string{"A"},
		},
		"master and workers select different pools": {
			build: func(c *cluster) {
				fourNodesAB(c)
				label(c.node("n1"), "pool", "head")
				for _, n := range []string{"n2", "n3", "n4"} {
					label(c.node(n), "pool", "gpu")
				}
				c.addJob("pt", 4, 4, 2, nil)
				for i, p := range c.jobPods("pt") {
					p.Spec.NodeSelector = map[string]string{"pool": "gpu"}
					if i == 0 {
						p.Spec.NodeSelector = map[string]string{"pool": "head"}
					}
				}
			},
			job: "pt", wantBound: 4, wantLeaves: []string{"A"},
			wantOn: map[string]string{"pt-0": "n1"},
		},
		"two pods pinned to two nodes by required node affinity": {
			build: func(c *cluster) {
				fourNodesAB(c)
				c.addJob("pin", 2, 4, 2, nil)
				for i, p := range c.jobPods("pin") {
					p.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
						RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
							MatchFields: []corev1.NodeSelectorRequirement{{Key: "metadata.name", Operator: corev1.NodeSelectorOpIn,
								Values: []string{fmt.Sprintf("n%d", 3+i)}}},
						}}}}}
				}
			},
			job: "pin", wantBound: 2, wantLeaves: []string{"A"},
			wantOn: map[string]string{"pin-0": "n3", "pin-1": "n4"},
		},
		"a selector on the master alone leaves the workers free": {
			build: func(c *cluster) {
				fourNodesAB(c)
				label(c.node("n4"), "pool", "head")
				c.addJob("m", 4, 4, 2, nil)
				c.pod("m-0").Spec.NodeSelector = map[string]string{"pool": "head"}
			},
			job: "m", wantBound: 4, wantLeaves: []string{"A"},
			wantOn: map[string]string{"m-0": "n4"},
		},
		"memory admits one pod per node": {
			build: func(c *cluster) {
				fourNodesAB(c)
				c.addJob("mem", 2, 2, 1, nil)
				for _, p := range c.jobPods("mem") {
					p.Spec.Containers[0].Resources.Requests[corev1.ResourceMemory] = resource.MustParse("300Gi")
				}
			},
			job: "mem", wantBound: 2, wantLeaves: []string{"A"}, wantNodes: 2,
		},
		"a declared host port admits one pod per node": {
			build: func(c *cluster) {
				fourNodesAB(c)
				c.addJob("port", 2, 2, 1, nil)
				for _, p := range c.jobPods("port") {
					p.Spec.Containers[0].Ports = []corev1.ContainerPort{{ContainerPort: 29500, HostPort: 29500, Protocol: corev1.ProtocolTCP}}
				}
			},
			job: "port", wantBound: 2, wantLeaves: []string{"A"}, wantNodes: 2,
		},
		"required anti-affinity on the hostname among the gang's pods": {
			build: func(c *cluster) {
				fourNodesAB(c)
				c.addJob("anti", 2, 2, 1, nil)
				for _, p := range c.jobPods("anti") {
					p.Labels = map[string]string{"app": "anti"}
					p.Spec.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{
						RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
							LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "anti"}},
							TopologyKey:   corev1.LabelHostname,
						}}}}
				}
			},
			job: "anti", wantBound: 2, wantLeaves: []string{"A"}, wantNodes: 2,
		},
		"nodes that admit one more pod each": {
			build: func(c *cluster) {
				fourNodesAB(c)
				for _, n := range c.nodes {
					n.Status.Allocatable[corev1.ResourcePods] = resource.MustParse("1")
					n.Status.Capacity[corev1.ResourcePods] = resource.MustParse("1")
				}
				c.addJob("few", 2, 2, 1, nil)
			},
			job: "few", wantBound: 2, wantLeaves: []string{"A"}, wantNodes: 2,
		},
		"GPU-only pods listed before the RDMA pods of their gang": {
			build: func(c *cluster) {
				for i := 1; i <= 3; i++ {
					c.addNode(fmt.Sprintf("n%d", i), "A", "B")
				}
				// 3 pods of 4 GPUs without RDMA, then 2 of 4 GPUs + 2 NICs:
				// 20 of the 24 GPUs.
				c.addJob("mix", 5, 4, 0, nil)
				for _, p := range c.jobPods("mix")[3:] {
					p.Spec.Containers[0].Resources.Requests[builders.RDMAResource] = resource.MustParse("2")
					p.Spec.Containers[0].Resources.Limits = corev1.ResourceList{builders.RDMAResource: resource.MustParse("2"),
						builders.GPUResource: resource.MustParse("4")}
				}
			},
			job: "mix", wantBound: 5,
		},
		"mixed shapes, hard s0: the one placement leaf A has": {
			// Leaf A has n1's NUMA 0 (2 GPUs free, 2 NICs) and n2's (4
			// GPUs, 2 NICs); leaf B is busy. The master (2 GPU + 2 RDMA)
			// fits A only on n1, the two workers (2 GPU + 1 RDMA) then
			// on n2.
			build: func(c *cluster) {
				c.addBusyNode("n1", "A", "B", busy{numa: 0, gpu: 2}, busy{numa: 1, gpu: 4, nics: []int{0, 1}})
				c.addBusyNode("n2", "A", "B", busy{numa: 1, gpu: 4, nics: []int{0, 1}})
				c.addJob("vj", 3, 2, 1, hardS0)
				setShape(c, "vj", 0, 2, 2)
			},
			job: "vj", wantBound: 3, wantLeaves: []string{"A"},
			wantOn: map[string]string{"vj-0": "n1", "vj-1": "n2", "vj-2": "n2"},
		},
		"mixed shapes, soft: one leaf where the greedy fill takes two": {
			build: func(c *cluster) {
				c.addBusyNode("n1", "A", "B", busy{numa: 0, gpu: 2})
				c.addNode("n2", "A", "B")
				c.addJob("vj", 3, 2, 1, nil)
				setShape(c, "vj", 0, 2, 2)
			},
			job: "vj", wantBound: 3, wantLeaves: []string{"A"},
		},
		"mixed shapes, hard s1: the one S1 that holds the gang": {
			// S1 x: leaf A has n1's NUMA 0 (2 GPUs free, 2 NICs) and
			// n2's (4 GPUs, 2 NICs), leaf B n1's NUMA 1 with one NIC
			// free. Only the master on n1 NUMA 0, two workers on n2 and
			// one on n1 NUMA 1 fit. S1 y (n3) holds two pods at most.
			build: func(c *cluster) {
				c.addBusyNode("n1", "A", "B", busy{numa: 0, gpu: 2}, busy{numa: 1, nics: []int{0}})
				c.addBusyNode("n2", "A", "B", busy{numa: 1, gpu: 4, nics: []int{0, 1}})
				c.addBusyNode("n3", "C", "D", busy{numa: 1, gpu: 4, nics: []int{0, 1}})
				for _, n := range []string{"n1", "n2"} {
					label(c.node(n), builders.S1Label, "x")
				}
				label(c.node("n3"), builders.S1Label, "y")
				c.addJob("vj", 4, 2, 1, map[string]string{ledger.AnnotationMode: "hard", ledger.AnnotationHighestTier: "s1"})
				setShape(c, "vj", 0, 2, 2)
			},
			job: "vj", wantBound: 4, wantLeaves: []string{"A", "B"}, s1s: true,
			wantOn: map[string]string{"vj-0": "n1"},
		},
		"Volcano's network-topology annotations hold a gang under one S0": {
			// Five whole-zone pods: one leaf holds four. Read as Volcano
			// >= 1.13 users write it, the limit keeps the gang waiting
			// (the defaults would place it soft over both leaves).
			build: func(c *cluster) {
				fourNodesAB(c)
				c.addJob("vt", 5, 4, 2, map[string]string{"volcano.sh/network-topology-mode": "hard",
					"volcano.sh/network-topology-highest-tier": "1"})
			},
			job: "vt", wantBound: 0, wantReason: "no S0 can hold 5 pods",
		},
		"two pods: one leaf over two nodes before one node over two leaves": {
			build: func(c *cluster) {
				fourNodesAB(c)
				c.addJob("pair", 2, 4, 2, nil)
			},
			job: "pair", wantBound: 2, wantLeaves: []string{"A"}, wantNodes: 2,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			c := &cluster{}
			tc.build(c)
			var opts []option
			if tc.s1s {
				opts = append(opts, pluginArgs("s1NodeLabel: "+builders.S1Label))
			}
			o := runSession(t, c, opts...)
			checkBindsPlanned(t, o)
			if got := o.binds.Count("ns", tc.job); got != tc.wantBound {
				t.Fatalf("%s: %d pods bound, want %d; condition %q", tc.job, got, tc.wantBound, condition(o.pgs["ns/"+tc.job]))
			}
			if tc.wantLeaves != nil {
				if diff := cmp.Diff(tc.wantLeaves, o.binds.Leaves("ns", tc.job)); diff != "" {
					t.Errorf("leaves (-want,+got):\n%s", diff)
				}
			}
			if tc.wantNodes > 0 {
				if got := o.binds.Nodes("ns", tc.job); len(got) != tc.wantNodes {
					t.Errorf("nodes %v, want %d", got, tc.wantNodes)
				}
			}
			on := bindings(o, tc.job)
			for pod, node := range tc.wantOn {
				if on[pod] != node {
					t.Errorf("%s on %q, want %q", pod, on[pod], node)
				}
			}
			if tc.wantReason != "" {
				if got := condition(o.pgs["ns/"+tc.job]); !strings.Contains(got, tc.wantReason) {
					t.Errorf("condition %q, want it to say %q", got, tc.wantReason)
				}
			}
		})
	}
}

// busy is a running pod of job "other" in one NUMA zone: its GPUs and the
// zone's NICs it holds (indexes into builders.NUMANICs[numa]).
type busy struct {
	numa int
	gpu  int
	nics []int
}

// addBusyNode adds a provider-shaped node as addNode does, with running
// pods of job "other" on it, listed in its KCNR (GPUs per zone, NICs by
// consumer) and annotated as rdmatopo annotates the pods it places.
func (c *cluster) addBusyNode(name, leaf0, leaf1 string, pods ...busy) {
	c.addNode(name, leaf0, leaf1)
	w := builders.ProviderCNR(name, leaf0, leaf1)
	if len(pods) > 0 && !c.hasGroup("other") {
		c.addRunningGroup("other", 1, nil)
	}
	for i, b := range pods {
		pod, uid := fmt.Sprintf("other-%s-%d", name, i), fmt.Sprintf("u-other-%s-%d", name, i)
		consumer := builders.Consumer("ns", pod, uid)
		pw := builders.MakePod("ns", pod).UID(uid).Node(name).Phase(corev1.PodRunning).Group("other").Req("cpu", "1").
			SchedulerName("volcano")
		if b.gpu > 0 {
			pw = pw.Req(builders.GPUResource, fmt.Sprint(b.gpu))
			w.Alloc(b.numa, consumer, corev1.ResourceList{builders.GPUResource: *resource.NewQuantity(int64(b.gpu), resource.DecimalSI)})
		}
		var held []string
		for _, k := range b.nics {
			held = append(held, builders.NUMANICs[b.numa][k])
			w.UseNIC(builders.NUMANICs[b.numa][k], consumer)
		}
		if len(held) > 0 {
			pw = pw.Req(builders.RDMAResource, fmt.Sprint(len(held))).
				Annotation(ledger.AnnotationNICs, strings.Join(held, ",")).Annotation(ledger.AnnotationNUMA, fmt.Sprint(b.numa))
		}
		c.pods = append(c.pods, pw.Obj())
	}
	c.cnrs[len(c.cnrs)-1] = w.Obj()
}

// hasGroup reports whether the cluster has the PodGroup ns/name.
func (c *cluster) hasGroup(name string) bool {
	for _, pg := range c.pgs {
		if pg.Name == name {
			return true
		}
	}
	return false
}

// setShape gives the job's pod i GPUs and NICs of its own (requests and
// limits of its first container).
func setShape(c *cluster, job string, i, gpu, nics int) {
	p := c.jobPods(job)[i]
	r := &p.Spec.Containers[0].Resources
	r.Requests[builders.GPUResource] = *resource.NewQuantity(int64(gpu), resource.DecimalSI)
	r.Requests[builders.RDMAResource] = *resource.NewQuantity(int64(nics), resource.DecimalSI)
	if r.Limits != nil {
		r.Limits[builders.GPUResource] = r.Requests[builders.GPUResource]
		r.Limits[builders.RDMAResource] = r.Requests[builders.RDMAResource]
	}
}

// TestHostPortGangsInOneSession: gangs whose pods declare one host port,
// placed one after another in a session, each see the nodes the previous
// ones took refused (the node sets are walked again over the nodes that
// changed), so no two share a node and the gang that finds no free port
// is not placed; a gang without the port still uses those nodes.
func TestHostPortGangsInOneSession(t *testing.T) {
	c := &cluster{}
	fourNodesAB(c)
	port := []corev1.ContainerPort{{ContainerPort: 29500, HostPort: 29500, Protocol: corev1.ProtocolTCP}}
	for _, job := range []string{"p1", "p2", "p3"} {
		c.addJob(job, 2, 4, 2, nil)
		for _, p := range c.jobPods(job) {
			p.Spec.Containers[0].Ports = port
		}
	}
	c.addJob("free", 4, 2, 1, nil)
	o := runSession(t, c)
	checkBindsPlanned(t, o)
	used := map[string]string{}
	placed := 0
	for _, job := range []string{"p1", "p2", "p3"} {
		switch got := o.binds.Count("ns", job); got {
		case 0:
			continue
		case 2:
			placed++
		default:
			t.Fatalf("%s: %d pods bound, want 0 or 2", job, got)
		}
		for _, n := range o.binds.Nodes("ns", job) {
			if other, ok := used[n]; ok {
				t.Errorf("%s and %s both hold host port 29500 on %s", other, job, n)
			}
			used[n] = job
		}
	}
	if placed != 2 {
		t.Errorf("%d host-port gangs placed, want 2 (one pod per node on 4 nodes)", placed)
	}
	if got := o.binds.Count("ns", "free"); got != 4 {
		t.Errorf("free: %d pods bound, want 4 (ports do not limit it)", got)
	}
}
