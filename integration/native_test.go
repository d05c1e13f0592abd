package integration

import (
	"context"
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/rdmatopo/rdmatopo/core/placement"
	"github.com/rdmatopo/rdmatopo/plugins/rdmatopology"
)

// nativeHardTier1 is Volcano's own spec.networkTopology: the gang within
// one tier-1 HyperNode, which rdmatopo reads as one S0.
var nativeHardTier1 = map[string]interface{}{"mode": "hard", "highestTierAllowed": int64(1)}

// createNativePodGroup creates, through the dynamic client (Volcano
// v1.10's typed client would drop the field), a PodGroup of minMember n
// with spec.networkTopology nt, and n trainer pods in it.
func createNativePodGroup(t *testing.T, e *Env, ns, name string, n int, nt map[string]interface{}) {
	t.Helper()
	ctx := context.Background()
	pg := &unstructured.Unstructured{Object: map[string]interface{}{
		"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup",
		"metadata": map[string]interface{}{"name": name, "namespace": ns},
		"spec":     map[string]interface{}{"minMember": int64(n), "queue": "default", "networkTopology": nt},
	}}
	if _, err := e.Dynamic.Resource(rdmatopology.PodGroupResource).Namespace(ns).Create(ctx, pg, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create PodGroup %s/%s: %v", ns, name, err)
	}
	for i := 0; i < n; i++ {
		p := rdmaPod(ns, fmt.Sprintf("%s-%d", name, i), trainer, map[string]string{groupNameAnnotation: name})
		p.Labels = map[string]string{"rdmatopo-it/gang": name}
		if _, err := e.Kube.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatalf("create pod %s/%s: %v", ns, p.Name, err)
		}
	}
}

// nativeTopologyOf returns the PodGroup's spec.networkTopology as the API
// server holds it (nil: absent).
func nativeTopologyOf(t *testing.T, e *Env, ns, name string) map[string]interface{} {
	t.Helper()
	u, err := e.Dynamic.Resource(rdmatopology.PodGroupResource).Namespace(ns).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("get PodGroup %s/%s: %v", ns, name, err)
	}
	nt, _, _ := unstructured.NestedMap(u.Object, "spec", "networkTopology")
	return nt
}

// TestNativeNetworkTopologyPodGroupHardTier1: a PodGroup whose
// spec.networkTopology is hard at tier 1 (Volcano's field, no rdmatopo.io
// annotation) waits whole, with the plugin's condition, while no S0 holds
// it, and is placed under one S0 once one does. The field survives Volcano
// v1.10's own PodGroup writes (which drop it; the scheduler writes it back).
//
// Fabric: two nodes whose NUMA-0 NICs hang off leaf 0 and NUMA-1 NICs off
// leaf 1: four trainer pods fit the cluster, three fit no S0; a third node
// of the same cabling gives leaf 0 room for three.
func TestNativeNetworkTopologyPodGroupHardTier1(t *testing.T) {
	e := requireEnv(t)
	ctx := context.Background()
	f := newFabric(t, e)
	ns := newNamespace(t, e)
	f.AddNode(ctx, nodeSpec{Index: 1, Leaves: [2]int{0, 1}})
	f.AddNode(ctx, nodeSpec{Index: 2, Leaves: [2]int{0, 1}})

	const name = "native"
	createNativePodGroup(t, e, ns, name, 3, nativeHardTier1)
	sel := metav1.ListOptions{LabelSelector: "rdmatopo-it/gang=" + name}
	waitHeldAtTierLimit(t, e, ns, name, sel, "no S0 holds the gang")
	eventually(t, placeTimeout, func() (bool, string) {
		nt := nativeTopologyOf(t, e, ns, name)
		return nt["highestTierAllowed"] == int64(1) && nt["mode"] == "hard", fmt.Sprintf("spec.networkTopology = %v", nt)
	})

	f.AddNode(ctx, nodeSpec{Index: 3, Leaves: [2]int{0, 1}})
	pods := waitBound(t, e, ns, sel, 3, placeTimeout)
	checkGangUnderOneS0(t, f, pods, trainer)
	for _, p := range pods {
		if _, ok := p.Annotations[annMode]; ok {
			t.Errorf("pod %s/%s carries %s: the contract is meant to come from spec.networkTopology only", p.Namespace, p.Name, annMode)
		}
	}
}

// TestNativeNetworkTopologyTrainJob: a TrainJob whose runtime sets
// podGroupPolicy.volcano.networkTopology hard at tier 1, and no rdmatopo.io
// annotation anywhere. Trainer v2.1.0 copies the field's mode and
// highestTierAllowed to the PodGroup's spec.networkTopology; rdmatopo reads
// it there and places the gang under one S0.
//
// Fabric: nodes 1 and 2 cable both zones to leaf 0 (four zones), nodes 3-5
// zone 0 to leaf 1 and zone 1 to leaf 2 (three zones per leaf): the four
// pods fit one S0 only under leaf 0.
func TestNativeNetworkTopologyTrainJob(t *testing.T) {
	e := requireEnv(t)
	ctx := context.Background()
	f := newFabric(t, e)
	ns := newNamespace(t, e)
	f.AddNode(ctx, nodeSpec{Index: 1, Leaves: [2]int{0, 0}})
	f.AddNode(ctx, nodeSpec{Index: 2, Leaves: [2]int{0, 0}})
	for i := 3; i <= 5; i++ {
		f.AddNode(ctx, nodeSpec{Index: i, Leaves: [2]int{1, 2}})
	}

	withTopology := func(rt *unstructured.Unstructured) {
		if err := unstructured.SetNestedMap(rt.Object, nativeHardTier1, "spec", "podGroupPolicy", "volcano", "networkTopology"); err != nil {
			t.Fatal(err)
		}
	}
	job := createTrainJobExample(t, e, ns, contract{}, withTopology)
	sel := metav1.ListOptions{LabelSelector: trainJobNameLabel + "=" + job.name}
	pods := waitBound(t, e, ns, sel, job.numNodes, trainJobPlaceTimeout)
	for _, p := range pods {
		for _, k := range []string{annMode, annHighestTier} {
			if _, ok := p.Annotations[k]; ok {
				t.Errorf("pod %s/%s carries %s: the contract is meant to come from the runtime only", p.Namespace, p.Name, k)
			}
		}
	}
	placed, leaf := checkGangUnderOneS0(t, f, pods, trainer)
	if leaf != f.Leaf(0) {
		t.Errorf("gang placed under S0 %s, which has room for 3 pods only: %s", leaf, describePlacement(placed))
	}
	if nt := nativeTopologyOf(t, e, ns, job.name); nt["highestTierAllowed"] != int64(1) {
		t.Errorf("PodGroup %s/%s spec.networkTopology = %v, want Trainer's copy of the runtime's", ns, job.name, nt)
	}
}

// TestNativeNetworkTopologyPodGroupWithoutNICs: a PodGroup whose pods
// request no RDMA NICs and whose spec.networkTopology is hard at tier 1 is
// kept within the nodes of one leaf: with two nodes on different leaves
// (each with room for one pod) it waits, with the plugin's condition,
// where stock allocate would take both nodes; once a third node shares a
// leaf with the first, it is placed on those two.
func TestNativeNetworkTopologyPodGroupWithoutNICs(t *testing.T) {
	e := requireEnv(t)
	ctx := context.Background()
	f := newFabric(t, e)
	ns := newNamespace(t, e)
	n1 := f.AddNode(ctx, nodeSpec{Index: 1, Leaves: [2]int{0, 1}})
	f.AddNode(ctx, nodeSpec{Index: 2, Leaves: [2]int{2, 3}})

	const name = "cpu"
	pg := &unstructured.Unstructured{Object: map[string]interface{}{
		"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup",
		"metadata": map[string]interface{}{"name": name, "namespace": ns},
		"spec":     map[string]interface{}{"minMember": int64(2), "queue": "default", "networkTopology": nativeHardTier1},
	}}
	if _, err := e.Dynamic.Resource(rdmatopology.PodGroupResource).Namespace(ns).Create(ctx, pg, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create PodGroup %s/%s: %v", ns, name, err)
	}
	for i := 0; i < 2; i++ {
		p := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s-%d", name, i), Namespace: ns,
				Annotations: map[string]string{groupNameAnnotation: name}, Labels: map[string]string{"rdmatopo-it/gang": name}},
			Spec: corev1.PodSpec{SchedulerName: schedulerName, RestartPolicy: corev1.RestartPolicyNever,
				Containers: []corev1.Container{{Name: "etl", Image: image, Resources: corev1.ResourceRequirements{
					Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("40"), corev1.ResourceMemory: resource.MustParse("8Gi")}}}}},
		}
		if _, err := e.Kube.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatalf("create pod %s/%s: %v", ns, p.Name, err)
		}
	}
	sel := metav1.ListOptions{LabelSelector: "rdmatopo-it/gang=" + name}
	waitHeldAtTierLimit(t, e, ns, name, sel, "no leaf's nodes hold the gang")

	n3 := f.AddNode(ctx, nodeSpec{Index: 3, Leaves: [2]int{0, 1}})
	pods := waitBound(t, e, ns, sel, 2, placeTimeout)
	got := map[string]bool{}
	for _, p := range pods {
		got[p.Spec.NodeName] = true
	}
	if !got[n1] || !got[n3] {
		t.Errorf("pods bound to %v, want %s and %s (the nodes of leaf 0)", got, n1, n3)
	}
}

// waitHeldAtTierLimit waits until PodGroup ns/name waits with reason
// TierLimit, and then pendingCycles more scheduling cycles, failing the
// test as soon as a pod sel selects is bound (why says what forbids it).
func waitHeldAtTierLimit(t *testing.T, e *Env, ns, name string, sel metav1.ListOptions, why string) {
	t.Helper()
	noneBound := func() {
		for _, p := range listPods(t, e, ns, sel) {
			if p.Spec.NodeName != "" {
				t.Fatalf("pod %s/%s bound to %s although %s", p.Namespace, p.Name, p.Spec.NodeName, why)
			}
		}
	}
	eventually(t, placeTimeout, func() (bool, string) {
		noneBound()
		pg, err := e.Volcano.SchedulingV1beta1().PodGroups(ns).Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		c := condition(pg, placedCondition)
		ok := c != nil && c.Status == corev1.ConditionFalse && c.Reason == string(placement.ReasonTierLimit)
		return ok, describePodGroup(pg)
	})
	waitSchedulerCycles(t, e, pendingCycles, noneBound)
}
