package topologyallocate_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/kubewharf/katalyst-api/pkg/apis/node/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/rdmatopo/rdmatopo/core/ledger"
	"github.com/rdmatopo/rdmatopo/internal/testing/builders"
	"github.com/rdmatopo/rdmatopo/plugins/rdmatopology"
)

// containerNeed is what one container of a job's pods asks.
type containerNeed struct {
	name      string
	gpu, nics int
	// init makes it an init container; sidecar a restartable one.
	init, sidecar bool
}

// addContainerJob adds a PodGroup and n pods whose containers ask what
// needs says (each also 2 CPUs).
func (c *cluster) addContainerJob(name string, n int, ann map[string]string, needs ...containerNeed) {
	c.addJob(name, n, 0, 0, ann)
	always := corev1.ContainerRestartPolicyAlways
	for _, p := range c.jobPods(name) {
		p.Spec.Containers = nil
		for _, cn := range needs {
			q := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2")}
			if cn.gpu > 0 {
				q[builders.GPUResource] = *resource.NewQuantity(int64(cn.gpu), resource.DecimalSI)
			}
			if cn.nics > 0 {
				q[builders.RDMAResource] = *resource.NewQuantity(int64(cn.nics), resource.DecimalSI)
			}
			ctr := corev1.Container{Name: cn.name, Resources: corev1.ResourceRequirements{Requests: q, Limits: q.DeepCopy()}}
			delete(ctr.Resources.Limits, corev1.ResourceCPU)
			switch {
			case cn.sidecar:
				ctr.RestartPolicy = &always
				p.Spec.InitContainers = append(p.Spec.InitContainers, ctr)
			case cn.init:
				p.Spec.InitContainers = append(p.Spec.InitContainers, ctr)
			default:
				p.Spec.Containers = append(p.Spec.Containers, ctr)
			}
		}
	}
}

// setPolicy sets every node's topology policy.
func setPolicy(c *cluster, p v1alpha1.TopologyPolicy) {
	for _, cnr := range c.cnrs {
		cnr.Status.TopologyPolicy = p
	}
}

// TestContainerLevelNUMA: under SingleNUMANodeContainerLevel each
// container takes one zone and a pod's containers may take different
// ones; under SingleNUMANodePodLevel the whole pod takes one zone. Nodes
// are provider-shaped (2 zones of 4 GPUs and 2 NICs, zone 0 under leaf A,
// zone 1 under leaf B).
func TestContainerLevelNUMA(t *testing.T) {
	hardS0 := map[string]string{ledger.AnnotationMode: "hard", ledger.AnnotationHighestTier: "s0"}
	halfNode := []containerNeed{{name: "trainer", gpu: 4, nics: 2}, {name: "helper", gpu: 4, nics: 2}}
	quarter := []containerNeed{{name: "trainer", gpu: 2, nics: 1}, {name: "helper", gpu: 2, nics: 1}}
	cases := map[string]struct {
		policy v1alpha1.TopologyPolicy
		ann    map[string]string
		needs  []containerNeed
		// wantBound pods of the 2; wantZones: each bound pod's NUMA
		// annotation; wantSplit: pods annotated with their containers.
		wantBound  int
		wantZones  string
		wantSplit  bool
		wantLeaves []string
		wantReason string
	}{
		"container level: two containers that each fit a zone take both zones of a node": {
			policy: v1alpha1.TopologyPolicySingleNUMANodeContainerLevel, needs: halfNode,
			wantBound: 2, wantZones: "0,1", wantSplit: true, wantLeaves: []string{"A", "B"},
		},
		"pod level: the same pods fit no zone": {
			policy: v1alpha1.TopologyPolicySingleNUMANodePodLevel, needs: halfNode,
			wantBound: 0, wantReason: "cannot hold",
		},
		"pod level: containers that fit one zone together are placed per pod": {
			policy: v1alpha1.TopologyPolicySingleNUMANodePodLevel, needs: quarter, ann: hardS0,
			wantBound: 2, wantLeaves: []string{"A"},
		},
		"container level: containers that fit one zone together stay in it": {
			policy: v1alpha1.TopologyPolicySingleNUMANodeContainerLevel, needs: quarter, ann: hardS0,
			wantBound: 2, wantLeaves: []string{"A"},
		},
		"container level: an init container larger than each container keeps the pod in one zone": {
			policy:    v1alpha1.TopologyPolicySingleNUMANodeContainerLevel,
			needs:     append([]containerNeed{{name: "warmup", gpu: 6, init: true}}, halfNode...),
			wantBound: 0, wantReason: "cannot hold",
		},
		"container level: a sidecar takes a zone of its own": {
			policy:    v1alpha1.TopologyPolicySingleNUMANodeContainerLevel,
			needs:     []containerNeed{{name: "proxy", gpu: 4, nics: 2, sidecar: true}, {name: "trainer", gpu: 4, nics: 2}},
			wantBound: 2, wantZones: "0,1", wantSplit: true, wantLeaves: []string{"A", "B"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			c := &cluster{}
			c.addNode("n1", "A", "B")
			c.addNode("n2", "A", "B")
			setPolicy(c, tc.policy)
			c.addContainerJob("tc", 2, tc.ann, tc.needs...)
			o := runSession(t, c)
			checkBindsPlanned(t, o)
			if got := o.binds.Count("ns", "tc"); got != tc.wantBound {
				t.Fatalf("%d pods bound, want %d; condition %q", got, tc.wantBound, condition(o.pgs["ns/tc"]))
			}
			if tc.wantReason != "" {
				if got := condition(o.pgs["ns/tc"]); !strings.Contains(got, tc.wantReason) {
					t.Errorf("condition %q, want it to say %q", got, tc.wantReason)
				}
			}
			if tc.wantLeaves != nil {
				if diff := cmp.Diff(tc.wantLeaves, o.binds.Leaves("ns", "tc")); diff != "" {
					t.Errorf("leaves (-want,+got):\n%s", diff)
				}
			}
			for i := 0; i < tc.wantBound; i++ {
				task := o.binds[fmt.Sprintf("ns/tc-%d", i)]
				ann := task.Pod.Annotations
				if tc.wantZones != "" && (ann[ledger.AnnotationNUMA] != tc.wantZones || ann[rdmatopology.AnnotationNUMABindResult] != tc.wantZones) {
					t.Errorf("%s: NUMA %q, numa_bind_result %q, want %q", task.Pod.Name,
						ann[ledger.AnnotationNUMA], ann[rdmatopology.AnnotationNUMABindResult], tc.wantZones)
				}
				cs, err := ledger.ParseContainers(ann[ledger.AnnotationContainers])
				if err != nil || (len(cs) > 0) != tc.wantSplit {
					t.Errorf("%s: containers %q (%v), want a split: %v", task.Pod.Name, ann[ledger.AnnotationContainers], err, tc.wantSplit)
				}
				for _, g := range cs {
					if len(g.NICs) != 2 {
						t.Errorf("%s: containers %v got NICs %v, want 2", task.Pod.Name, g.Names, g.NICs)
					}
				}
			}
		})
	}
}
