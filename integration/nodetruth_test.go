package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/kubewharf/katalyst-api/pkg/consts"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
)

// TestNUMABindResultWritten: every RDMA pod of a placed VolcanoJob carries
// katalyst's numa_bind_result, equal to its rdmatopo.io/numa, so the node
// agent can follow the plan.
func TestNUMABindResultWritten(t *testing.T) {
	e := requireEnv(t)
	ctx := context.Background()
	f := newFabric(t, e)
	ns := newNamespace(t, e)
	twoGroups(ctx, f)

	job := volcanoJob{Name: "bind", Workers: 3, Shape: trainer, Contract: hardS0}
	job.Create(t, e, ns)
	pods := waitBound(t, e, ns, job.Selector(), job.Size(), placeTimeout)
	for _, p := range pods {
		numa, hint := p.Annotations[annNUMA], p.Annotations[consts.PodAnnotationNUMABindResultKey]
		if numa == "" || hint != numa {
			t.Errorf("pod %s/%s: %s=%q, %s=%q; want equal and set", p.Namespace, p.Name,
				consts.PodAnnotationNUMABindResultKey, hint, annNUMA, numa)
		}
	}
}

// TestNodeAgentChoseOtherNICs: the node agent lists a bound worker on the
// other NUMA zone's NICs. The scheduler adopts the KCNR's choice: it patches
// the pod's annotations, records a NICMismatch Event, shows the planned and
// the realized placement on the PodGroup, and gives the planned NICs, now
// free, to the next gang.
func TestNodeAgentChoseOtherNICs(t *testing.T) {
	e := requireEnv(t)
	ctx := context.Background()
	f := newFabric(t, e)
	ns := newNamespace(t, e)
	// Three nodes, NUMA-0 NICs under leaf 0 and NUMA-1 NICs under leaf 1:
	// a gang of three trainer pods fits under one S0, one pod per node.
	for i := 1; i <= 3; i++ {
		f.AddNode(ctx, nodeSpec{Index: i, Leaves: [2]int{0, 1}})
	}

	job := volcanoJob{Name: "moved", Workers: 2, Shape: trainer, Contract: hardS0}
	job.Create(t, e, ns)
	pods := waitBound(t, e, ns, job.Selector(), job.Size(), placeTimeout)
	checkGangUnderOneS0(t, f, pods, job.Shape)

	// The agent puts pods[0] on the other zone of its node.
	moved := pods[0]
	node := moved.Spec.NodeName
	planned := splitList(moved.Annotations[annNICs])
	plannedZone := f.nics[node][planned[0]].NUMA
	other := 1 - plannedZone
	realized := []string{zoneNICs[other][0], zoneNICs[other][1]}
	f.RecordAllocationsAs(ctx, pods, map[string][]string{moved.Namespace + "/" + moved.Name: realized})

	wantNICs := realized[0] + "," + realized[1]
	eventually(t, placeTimeout, func() (bool, string) {
		p, err := e.Kube.CoreV1().Pods(ns).Get(ctx, moved.Name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		got := fmt.Sprintf("nics=%s numa=%s s0=%s", p.Annotations[annNICs], p.Annotations[annNUMA], p.Annotations[annS0])
		want := fmt.Sprintf("nics=%s numa=%d s0=%s", wantNICs, other, f.nics[node][realized[0]].S0)
		return got == want, "annotations " + got + ", want " + want
	})
	eventually(t, placeTimeout, func() (bool, string) {
		evs, err := e.Kube.CoreV1().Events(ns).List(ctx, metav1.ListOptions{
			FieldSelector: fields.Set{"involvedObject.name": moved.Name, "reason": "NICMismatch"}.String()})
		if err != nil {
			return false, err.Error()
		}
		return len(evs.Items) > 0, fmt.Sprintf("%d NICMismatch events on pod %s", len(evs.Items), moved.Name)
	})
	eventually(t, placeTimeout, func() (bool, string) {
		pg := podGroupOf(t, e, moved)
		var got struct {
			placementAnnotation
			Planned *placementAnnotation `json:"planned"`
		}
		raw := pg.Annotations[annPlacement]
		if err := json.Unmarshal([]byte(raw), &got); err != nil {
			return false, fmt.Sprintf("placement %q: %v", raw, err)
		}
		ok := got.Planned != nil && got.Planned.Tier == "s0" && got.Tier == "s1" && len(got.S0) == 2
		return ok, "placement " + raw
	})

	// The planned zone of that node is free again: a pod pinned there gets
	// exactly the planned NICs.
	pin := rdmaPod(ns, "pinned", trainer, nil)
	pin.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
		RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
			MatchFields: []corev1.NodeSelectorRequirement{{Key: "metadata.name", Operator: corev1.NodeSelectorOpIn, Values: []string{node}}},
		}}},
	}}
	if _, err := e.Kube.CoreV1().Pods(ns).Create(ctx, pin, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create pinned pod: %v", err)
	}
	eventually(t, placeTimeout, func() (bool, string) {
		p, err := e.Kube.CoreV1().Pods(ns).Get(ctx, "pinned", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		want := planned[0] + "," + planned[1]
		return p.Spec.NodeName == node && p.Annotations[annNICs] == want,
			fmt.Sprintf("pinned pod on %q with NICs %q, want %s with %s", p.Spec.NodeName, p.Annotations[annNICs], node, want)
	})
}
