package integration

import (
	"context"
	"fmt"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kubewharf/katalyst-api/pkg/consts"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/rdmatopo/rdmatopo/internal/testing/harness"
)

// trainJobPlaceTimeout bounds the wait for a TrainJob's pods: Trainer
// creates the JobSet and PodGroup, JobSet the Job, the Job controller the
// pods, and the scheduler binds them.
const trainJobPlaceTimeout = 2 * time.Minute

// runtimeCacheTimeout bounds the wait for Trainer's webhook to see a new
// runtime.
const runtimeCacheTimeout = 30 * time.Second

// Labels Trainer and JobSet put on a TrainJob's pods.
const (
	trainJobNameLabel = "jobset.sigs.k8s.io/jobset-name"
	replicatedJobName = "jobset.sigs.k8s.io/replicatedjob-name"
)

// trainJobExample is the README's TrainJob: a ClusterTrainingRuntime with
// podGroupPolicy.volcano and a TrainJob of 4 nodes × (4 GPUs + 2 RDMA NICs),
// hard mode s0 on its pod template through podTemplateOverrides.
const trainJobExample = "examples/trainjob.yaml"

// TestTrainJobPlacedUnderOneS0: the README's TrainJob, run by Kubeflow
// Trainer as a JobSet whose Job gets its pods from kube-controller-manager,
// is placed by rdmatopo with every NIC under one S0, NUMA-aligned, with
// katalyst's numa_bind_result written, and with ranks (the pods'
// job-completion index) contiguous: consecutive ranks share a node where
// they can, so the ring leaves each node and each leaf once.
//
// Fabric: nodes 1 and 2 cable both NUMA zones to leaf 0 (four zones, two
// per node); nodes 3-5 cable zone 0 to leaf 1 and zone 1 to leaf 2 (three
// zones per leaf). The four pods fit under one S0 only on leaf 0, two per
// node, so rank order decides which pods share a node.
func TestTrainJobPlacedUnderOneS0(t *testing.T) {
	e := requireEnv(t)
	ctx := context.Background()
	f := newFabric(t, e)
	ns := newNamespace(t, e)
	f.AddNode(ctx, nodeSpec{Index: 1, Leaves: [2]int{0, 0}})
	f.AddNode(ctx, nodeSpec{Index: 2, Leaves: [2]int{0, 0}})
	for i := 3; i <= 5; i++ {
		f.AddNode(ctx, nodeSpec{Index: i, Leaves: [2]int{1, 2}})
	}

	job := createTrainJobExample(t, e, ns, hardS0)
	sel := metav1.ListOptions{LabelSelector: trainJobNameLabel + "=" + job.name}
	pods := waitBound(t, e, ns, sel, job.numNodes, trainJobPlaceTimeout)

	for _, p := range pods {
		if p.Labels[replicatedJobName] != "node" {
			t.Errorf("pod %s/%s: %s=%q, want the runtime's replicated job node", p.Namespace, p.Name, replicatedJobName, p.Labels[replicatedJobName])
		}
		if p.Annotations[annMode] != hardS0.Mode || p.Annotations[annHighestTier] != hardS0.HighestTier {
			t.Errorf("pod %s/%s does not carry the TrainJob's podTemplateOverrides contract: %v", p.Namespace, p.Name, p.Annotations)
		}
		numa, hint := p.Annotations[annNUMA], p.Annotations[consts.PodAnnotationNUMABindResultKey]
		if numa == "" || hint != numa {
			t.Errorf("pod %s/%s: %s=%q, %s=%q; want equal and set", p.Namespace, p.Name,
				consts.PodAnnotationNUMABindResultKey, hint, annNUMA, numa)
		}
	}
	pg := podGroupOf(t, e, pods[0])
	if pg.Name != job.name || pg.Spec.MinMember != int32(job.numNodes) {
		t.Errorf("PodGroup %s/%s minMember %d, want Trainer's %s with minMember %d", pg.Namespace, pg.Name, pg.Spec.MinMember, job.name, job.numNodes)
	}
	if _, ok := pg.Annotations[annMode]; ok {
		t.Errorf("PodGroup %s/%s carries %s: the test means the contract to come from the pods only", pg.Namespace, pg.Name, annMode)
	}
	placed, leaf := checkGangUnderOneS0(t, f, pods, trainer)
	if leaf != f.Leaf(0) {
		t.Errorf("gang placed under S0 %s, which has room for 3 pods only: %s", leaf, describePlacement(placed))
	}
	checkRanksContiguous(t, f, pods)
}

// TestTrainJobRanksFollowLeaves: the README's TrainJob with hard mode s1
// instead of s0, on two nodes that cable NUMA zone 0 to leaf 0 and zone 1 to
// leaf 1 (provider cabling). The four pods need both nodes and both leaves;
// in the order the search fills nodes (zone by zone), ranks would change
// leaf at every step of the ring (4 crossings). Placed by rank, the ring
// crosses each leaf boundary once (2 crossings): two consecutive ranks
// under leaf 0, the other two under leaf 1.
func TestTrainJobRanksFollowLeaves(t *testing.T) {
	e := requireEnv(t)
	ctx := context.Background()
	f := newFabric(t, e)
	ns := newNamespace(t, e)
	f.AddNode(ctx, nodeSpec{Index: 1, Leaves: [2]int{0, 1}})
	f.AddNode(ctx, nodeSpec{Index: 2, Leaves: [2]int{0, 1}})

	hardS1 := contract{Mode: "hard", HighestTier: "s1"}
	job := createTrainJobExample(t, e, ns, hardS1)
	sel := metav1.ListOptions{LabelSelector: trainJobNameLabel + "=" + job.name}
	pods := waitBound(t, e, ns, sel, job.numNodes, trainJobPlaceTimeout)
	placed := checkGangNICs(t, f, pods, trainer)
	leaves := map[string]bool{}
	for _, pn := range placed {
		leaves[pn.S0] = true
	}
	if len(leaves) != 2 {
		t.Errorf("gang spans %d leaves, want both: %s", len(leaves), describePlacement(placed))
	}
	checkRanksContiguous(t, f, pods)
}

// checkRanksContiguous orders the pods by job-completion index and checks
// that along the ring of ranks (r to r+1, the last back to the first) the
// placement changes leaf exactly as many times as it uses leaves (none on
// one leaf), so every leaf holds one contiguous run of ranks, and that
// within each leaf's run the ranks change node only as often as the run
// has nodes less one (on a single leaf the ring closes within it: as often
// as it has nodes, or never on one node).
func checkRanksContiguous(t *testing.T, f *fabric, pods []corev1.Pod) {
	t.Helper()
	type ranked struct {
		rank            int
		pod, node, leaf string
	}
	var rs []ranked
	for _, p := range pods {
		idx, err := strconv.Atoi(p.Labels[batchv1.JobCompletionIndexAnnotation])
		if err != nil || p.Annotations[batchv1.JobCompletionIndexAnnotation] != p.Labels[batchv1.JobCompletionIndexAnnotation] {
			t.Fatalf("pod %s/%s: completion index label %q, annotation %q: want one number in both (%v)", p.Namespace, p.Name,
				p.Labels[batchv1.JobCompletionIndexAnnotation], p.Annotations[batchv1.JobCompletionIndexAnnotation], err)
		}
		rs = append(rs, ranked{rank: idx, pod: p.Name, node: p.Spec.NodeName, leaf: p.Annotations[annS0]})
	}
	sort.Slice(rs, func(i, j int) bool { return rs[i].rank < rs[j].rank })
	var order []string
	leafNodes := map[string]map[string]bool{}
	nodeCross := map[string]int{}
	leafCross := 0
	for i, r := range rs {
		if r.rank != i {
			t.Fatalf("completion indexes are not 0..%d: %v", len(rs)-1, rs)
		}
		if leafNodes[r.leaf] == nil {
			leafNodes[r.leaf] = map[string]bool{}
		}
		leafNodes[r.leaf][r.node] = true
		order = append(order, fmt.Sprintf("%d:%s/%.8s", r.rank, r.node, r.leaf))
	}
	for i, r := range rs {
		next := rs[(i+1)%len(rs)]
		switch {
		case next.leaf != r.leaf:
			leafCross++
		case next.node != r.node && (i+1 < len(rs) || len(leafNodes) == 1):
			nodeCross[r.leaf]++
		}
	}
	ring := func(n int) int {
		if n == 1 {
			return 0
		}
		return n
	}
	if leafCross != ring(len(leafNodes)) {
		t.Errorf("ranks not contiguous along leaves: the ring changes leaf %d times over %d leaves, want %d: %s",
			leafCross, len(leafNodes), ring(len(leafNodes)), strings.Join(order, " "))
	}
	for leaf, nodes := range leafNodes {
		want := len(nodes) - 1
		if len(leafNodes) == 1 {
			want = ring(len(nodes))
		}
		if nodeCross[leaf] != want {
			t.Errorf("ranks under leaf %.8s change node %d times over %d nodes, want %d: %s",
				leaf, nodeCross[leaf], len(nodes), want, strings.Join(order, " "))
		}
	}
	t.Logf("rank order: %s", strings.Join(order, " "))
}

// trainJobRef names a submitted TrainJob.
type trainJobRef struct {
	name     string
	numNodes int
}

// createTrainJobExample creates the README's ClusterTrainingRuntime and its
// TrainJob (in ns) with the contract c in its podTemplateOverrides (the
// example's is hard s0); both are deleted when the test ends, with the
// JobSet, Jobs and pods they made. Each of mutate changes the runtime
// before it is created.
func createTrainJobExample(t *testing.T, e *Env, ns string, c contract, mutate ...func(runtime *unstructured.Unstructured)) trainJobRef {
	t.Helper()
	ctx := context.Background()
	objs, err := harness.ReadManifests(filepath.Join(e.RepoRoot, trainJobExample))
	if err != nil {
		t.Fatal(err)
	}
	var runtime, job *unstructured.Unstructured
	for _, o := range objs {
		switch o.GetKind() {
		case "ClusterTrainingRuntime":
			runtime = o
		case "TrainJob":
			job = o
		}
	}
	if runtime == nil || job == nil {
		t.Fatalf("%s: want a ClusterTrainingRuntime and a TrainJob", trainJobExample)
	}
	for _, m := range mutate {
		m(runtime)
	}
	if _, err := e.Dynamic.Resource(clusterTrainingRuntimeGVR).Create(ctx, runtime, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create ClusterTrainingRuntime %s: %v", runtime.GetName(), err)
	}
	t.Cleanup(func() {
		deleteTrainJobs(t, e, ns)
		if err := e.Dynamic.Resource(clusterTrainingRuntimeGVR).Delete(ctx, runtime.GetName(), metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("delete ClusterTrainingRuntime %s: %v", runtime.GetName(), err)
		}
	})
	job.SetNamespace(ns)
	setOverrideContract(t, job, c)
	// Trainer's webhook checks the runtime reference against its informer
	// cache, which sees the new runtime a moment later: until then it
	// denies the TrainJob with "... not found".
	var created *unstructured.Unstructured
	eventually(t, runtimeCacheTimeout, func() (bool, string) {
		var err error
		created, err = e.Dynamic.Resource(trainJobGVR).Namespace(ns).Create(ctx, job, metav1.CreateOptions{})
		if err != nil && !strings.Contains(err.Error(), fmt.Sprintf("%q not found", runtime.GetName())) {
			t.Fatalf("create TrainJob %s/%s: %v", ns, job.GetName(), err)
		}
		return err == nil, fmt.Sprintf("create TrainJob %s/%s: %v", ns, job.GetName(), err)
	})
	n, ok, err := unstructured.NestedInt64(created.Object, "spec", "trainer", "numNodes")
	if err != nil || !ok || n < 1 {
		t.Fatalf("%s: TrainJob %s: spec.trainer.numNodes %d (%v), want a positive number", trainJobExample, job.GetName(), n, err)
	}
	return trainJobRef{name: job.GetName(), numNodes: int(n)}
}

// setOverrideContract sets c as the annotations of the TrainJob's one
// podTemplateOverride, failing the test if the example has another shape.
func setOverrideContract(t *testing.T, job *unstructured.Unstructured, c contract) {
	t.Helper()
	overrides, _, err := unstructured.NestedSlice(job.Object, "spec", "podTemplateOverrides")
	if err != nil || len(overrides) != 1 {
		t.Fatalf("%s: TrainJob %s: want one spec.podTemplateOverrides entry, have %d (%v)", trainJobExample, job.GetName(), len(overrides), err)
	}
	o, _ := overrides[0].(map[string]interface{})
	ann := map[string]interface{}{}
	for k, v := range c.annotations() {
		ann[k] = v
	}
	if err := unstructured.SetNestedMap(o, ann, "metadata", "annotations"); err != nil {
		t.Fatal(err)
	}
	overrides[0] = o
	if err := unstructured.SetNestedSlice(job.Object, overrides, "spec", "podTemplateOverrides"); err != nil {
		t.Fatal(err)
	}
}

// deleteTrainJobs deletes the namespace's TrainJobs, JobSets, Jobs and pods
// until none is left: without a garbage collector, a JobSet left behind
// would recreate its Jobs and a Job its pods. The Job controller lifts its
// tracking finalizer from the pods of deleted Jobs.
func deleteTrainJobs(t *testing.T, e *Env, ns string) {
	t.Helper()
	ctx := context.Background()
	now := int64(0)
	background := metav1.DeletePropagationBackground
	del := metav1.DeleteOptions{GracePeriodSeconds: &now, PropagationPolicy: &background}
	all := metav1.ListOptions{}
	eventually(t, time.Minute, func() (bool, string) {
		var left []string
		for _, r := range []struct {
			kind string
			gvr  schema.GroupVersionResource
		}{{"TrainJobs", trainJobGVR}, {"JobSets", jobSetGVR}} {
			res := e.Dynamic.Resource(r.gvr).Namespace(ns)
			if err := res.DeleteCollection(ctx, del, all); err != nil {
				return false, fmt.Sprintf("delete %s in %s: %v", r.kind, ns, err)
			}
			l, err := res.List(ctx, all)
			if err != nil {
				return false, fmt.Sprintf("list %s in %s: %v", r.kind, ns, err)
			}
			if len(l.Items) > 0 {
				left = append(left, fmt.Sprintf("%d %s", len(l.Items), r.kind))
			}
		}
		jobs := e.Kube.BatchV1().Jobs(ns)
		if err := jobs.DeleteCollection(ctx, del, all); err != nil {
			return false, fmt.Sprintf("delete Jobs in %s: %v", ns, err)
		}
		if l, err := jobs.List(ctx, all); err != nil {
			return false, fmt.Sprintf("list Jobs in %s: %v", ns, err)
		} else if len(l.Items) > 0 {
			left = append(left, fmt.Sprintf("%d Jobs", len(l.Items)))
		}
		pods := e.Kube.CoreV1().Pods(ns)
		if err := pods.DeleteCollection(ctx, del, all); err != nil {
			return false, fmt.Sprintf("delete pods in %s: %v", ns, err)
		}
		if l, err := pods.List(ctx, all); err != nil {
			return false, fmt.Sprintf("list pods in %s: %v", ns, err)
		} else if len(l.Items) > 0 {
			left = append(left, fmt.Sprintf("%d pods (finalizers %v)", len(l.Items), l.Items[0].Finalizers))
		}
		return len(left) == 0, fmt.Sprintf("left in %s: %s", ns, strings.Join(left, ", "))
	})
}
