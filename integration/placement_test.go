package integration

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rdmatopo/rdmatopo/core/placement"
)

// placeTimeout bounds the wait for a gang to be created by its controller
// and bound by the scheduler.
const placeTimeout = 90 * time.Second

// twoGroups builds the fabric of the placement tests: nodes 1-3 put their
// NUMA-0 NICs under leaf 0 and their NUMA-1 NICs under leaf 1 (three zones
// per leaf), nodes 4-7 theirs under leaves 2 and 3 (four zones per leaf).
// A gang of four single-zone pods fits under one S0 only on leaf 2 or 3,
// one pod per node; a topology-blind scheduler may put it anywhere.
func twoGroups(ctx context.Context, f *fabric) (wideLeaves map[string]bool) {
	for i := 1; i <= 7; i++ {
		leaves := [2]int{0, 1}
		if i >= 4 {
			leaves = [2]int{2, 3}
		}
		f.AddNode(ctx, nodeSpec{Index: i, Leaves: leaves})
	}
	return map[string]bool{f.Leaf(2): true, f.Leaf(3): true}
}

// TestVolcanoJobPlacedUnderOneS0: a VolcanoJob (master + 3 workers, 4 GPUs
// and 2 NICs each, hard s0) is expanded by Volcano's job controller and
// placed by rdmatopo's scheduler with every NIC under one S0, NUMA-aligned.
func TestVolcanoJobPlacedUnderOneS0(t *testing.T) {
	e := requireEnv(t)
	ctx := context.Background()
	f := newFabric(t, e)
	ns := newNamespace(t, e)
	wide := twoGroups(ctx, f)

	job := volcanoJob{Name: "llm", Workers: 3, Shape: trainer, Contract: hardS0}
	job.Create(t, e, ns)
	pods := waitBound(t, e, ns, job.Selector(), job.Size(), placeTimeout)

	pg := podGroupOf(t, e, pods[0])
	if pg.Annotations[annMode] != hardS0.Mode || pg.Annotations[annHighestTier] != hardS0.HighestTier {
		t.Errorf("PodGroup %s/%s does not carry the job's contract annotations: %v", pg.Namespace, pg.Name, pg.Annotations)
	}
	placed, leaf := checkGangUnderOneS0(t, f, pods, job.Shape)
	if !wide[leaf] {
		t.Errorf("gang placed under S0 %s, which has room for 3 pods only: %s", leaf, describePlacement(placed))
	}
}

// TestPyTorchJobPlacedUnderOneS0: the same gang as a PyTorchJob, expanded by
// the Kubeflow training operator with Volcano gang scheduling (PodGroup named
// like the job, minMember = all replicas, the job's annotations copied).
func TestPyTorchJobPlacedUnderOneS0(t *testing.T) {
	e := requireEnv(t)
	ctx := context.Background()
	f := newFabric(t, e)
	ns := newNamespace(t, e)
	wide := twoGroups(ctx, f)

	job := pytorchJob{Name: "llm", Workers: 3, Shape: trainer, Contract: hardS0}
	job.Create(t, e, ns)
	pods := waitBound(t, e, ns, job.Selector(), job.Size(), placeTimeout)

	for _, p := range pods {
		if p.Spec.SchedulerName != schedulerName {
			t.Errorf("pod %s/%s: schedulerName %q, want %q (the operator's gang scheduling)", p.Namespace, p.Name, p.Spec.SchedulerName, schedulerName)
		}
	}
	pg := podGroupOf(t, e, pods[0])
	if pg.Name != job.Name || pg.Spec.MinMember != int32(job.Size()) {
		t.Errorf("PodGroup %s/%s minMember %d, want %s with minMember %d", pg.Namespace, pg.Name, pg.Spec.MinMember, job.Name, job.Size())
	}
	if pg.Annotations[annMode] != hardS0.Mode || pg.Annotations[annHighestTier] != hardS0.HighestTier {
		t.Errorf("PodGroup %s/%s does not carry the job's contract annotations: %v", pg.Namespace, pg.Name, pg.Annotations)
	}
	placed, leaf := checkGangUnderOneS0(t, f, pods, job.Shape)
	if !wide[leaf] {
		t.Errorf("gang placed under S0 %s, which has room for 3 pods only: %s", leaf, describePlacement(placed))
	}
}

// pendingCycles is how many scheduling cycles a gang that must not be placed
// is watched for.
const pendingCycles = 3

// TestHardModeGangStaysPendingWhole: a hard-s0 gang larger than any S0 is
// not partly bound; its PodGroup says why. Once a node adds room under an
// S0, the gang is placed whole.
func TestHardModeGangStaysPendingWhole(t *testing.T) {
	e := requireEnv(t)
	ctx := context.Background()
	f := newFabric(t, e)
	ns := newNamespace(t, e)
	// Two nodes: leaf 0 joins their NUMA-0 NICs, leaf 1 their NUMA-1 NICs.
	// The cluster holds four trainer pods, but no S0 holds three.
	f.AddNode(ctx, nodeSpec{Index: 1, Leaves: [2]int{0, 1}})
	f.AddNode(ctx, nodeSpec{Index: 2, Leaves: [2]int{0, 1}})

	job := volcanoJob{Name: "wide", Workers: 2, Shape: trainer, Contract: hardS0}
	job.Create(t, e, ns)
	noneBound := func() {
		for _, p := range listPods(t, e, ns, job.Selector()) {
			if p.Spec.NodeName != "" {
				t.Fatalf("pod %s/%s bound to %s although no S0 holds the gang", p.Namespace, p.Name, p.Spec.NodeName)
			}
		}
	}

	// The gang waits with the plugin's reason on its PodGroup ...
	eventually(t, placeTimeout, func() (bool, string) {
		noneBound()
		pg := podGroupOwnedBy(t, e, ns, job.Name)
		if pg == nil {
			return false, "no PodGroup yet"
		}
		c := condition(pg, placedCondition)
		ok := c != nil && c.Status == corev1.ConditionFalse && c.Reason == string(placement.ReasonTierLimit) && c.Message != ""
		return ok, describePodGroup(pg)
	})
	t.Logf("waiting as it should: %s", describePodGroup(podGroupOwnedBy(t, e, ns, job.Name)))
	// ... and stays whole: not one pod is bound over several cycles.
	waitSchedulerCycles(t, e, pendingCycles, noneBound)
	if n := len(listPods(t, e, ns, job.Selector())); n != job.Size() {
		t.Fatalf("%d pods of %s exist, want %d (created by the job controller, all pending)", n, job.Name, job.Size())
	}

	// A third node puts its NUMA-0 NICs under leaf 0 (and NUMA-1 under leaf
	// 1): now an S0 holds three pods, and the gang is placed whole.
	f.AddNode(ctx, nodeSpec{Index: 3, Leaves: [2]int{0, 1}})
	pods := waitBound(t, e, ns, job.Selector(), job.Size(), placeTimeout)
	checkGangUnderOneS0(t, f, pods, job.Shape)
}

// restartFabric builds four nodes whose NUMA-0 NICs hang off leaf 0 and
// NUMA-1 NICs off leaf 1, and a fifth with its NUMA-0 NICs alone under leaf
// 2 and its NUMA-1 NICs under leaf 1. Leaf 0 holds exactly four trainer
// pods, leaf 1 five: a best-fit placement puts the first gang of four under
// leaf 0, and a scheduler that forgot it would put the second one there too.
func restartFabric(ctx context.Context, f *fabric) {
	for i := 1; i <= 4; i++ {
		f.AddNode(ctx, nodeSpec{Index: i, Leaves: [2]int{0, 1}})
	}
	f.AddNode(ctx, nodeSpec{Index: 5, Leaves: [2]int{2, 1}})
}

// TestSchedulerRestartKeepsReservations: the scheduler restarts after a gang
// is bound but before any KCNR lists its pods; the next gang gets none of
// its NICs.
func TestSchedulerRestartKeepsReservations(t *testing.T) {
	e := requireEnv(t)
	ctx := context.Background()
	f := newFabric(t, e)
	ns := newNamespace(t, e)
	restartFabric(ctx, f)

	first := volcanoJob{Name: "first", Workers: 3, Shape: trainer, Contract: hardS0}
	first.Create(t, e, ns)
	firstPods := waitBound(t, e, ns, first.Selector(), first.Size(), placeTimeout)
	firstPlaced, firstLeaf := checkGangUnderOneS0(t, f, firstPods, first.Shape)

	// The KCNRs never list these pods (no katalyst agent runs): only the
	// scheduler knows which NICs they hold. Restart it.
	e.StopScheduler()
	if err := e.StartScheduler(ctx); err != nil {
		t.Fatalf("restart vc-scheduler: %v", err)
	}

	second := volcanoJob{Name: "second", Workers: 3, Shape: trainer, Contract: hardS0}
	second.Create(t, e, ns)
	secondPods := waitBound(t, e, ns, second.Selector(), second.Size(), placeTimeout)
	secondPlaced, secondLeaf := checkGangUnderOneS0(t, f, secondPods, second.Shape)

	checkNICsWithinUnits(t, f, append(append([]podNICs{}, firstPlaced...), secondPlaced...))
	if secondLeaf == firstLeaf {
		t.Errorf("both gangs under S0 %s, which has room for one: first %s; second %s",
			firstLeaf, describePlacement(firstPlaced), describePlacement(secondPlaced))
	}
	// The first gang is untouched by the restart.
	for _, p := range listPods(t, e, ns, first.Selector()) {
		for _, want := range firstPods {
			if want.Name == p.Name && (p.Spec.NodeName != want.Spec.NodeName || p.Annotations[annNICs] != want.Annotations[annNICs]) {
				t.Errorf("pod %s changed across the restart: node %s nics %s, was node %s nics %s", p.Name,
					p.Spec.NodeName, p.Annotations[annNICs], want.Spec.NodeName, want.Annotations[annNICs])
			}
		}
	}
}

// TestKCNRUpdateFreesNICs: while a gang holds every NIC, the next gang
// waits; when the first job's pods are deleted and the KCNRs updated, the
// second gang gets exactly the freed NICs.
func TestKCNRUpdateFreesNICs(t *testing.T) {
	e := requireEnv(t)
	ctx := context.Background()
	f := newFabric(t, e)
	ns := newNamespace(t, e)
	// Four nodes with NICs on NUMA zone 0 only, all under leaf 0: room for
	// exactly one gang of four trainer pods.
	for i := 1; i <= 4; i++ {
		f.AddNode(ctx, nodeSpec{Index: i, Leaves: [2]int{0, -1}})
	}

	first := volcanoJob{Name: "first", Workers: 3, Shape: trainer, Contract: hardS0}
	first.Create(t, e, ns)
	firstPods := waitBound(t, e, ns, first.Selector(), first.Size(), placeTimeout)
	firstPlaced, _ := checkGangUnderOneS0(t, f, firstPods, first.Shape)
	// katalyst's agent reports the running pods in the KCNRs.
	f.RecordAllocations(ctx, firstPods)

	second := volcanoJob{Name: "second", Workers: 3, Shape: trainer, Contract: hardS0}
	second.Create(t, e, ns)
	waitSchedulerCycles(t, e, pendingCycles, func() {
		for _, p := range listPods(t, e, ns, second.Selector()) {
			if p.Spec.NodeName != "" {
				t.Fatalf("pod %s/%s bound to %s while the first gang holds every NIC", p.Namespace, p.Name, p.Spec.NodeName)
			}
		}
	})

	// The first job ends: its pods go, and the KCNRs stop listing them.
	deleteVolcanoJob(t, e, ns, first)
	f.RecordAllocations(ctx, nil)

	secondPods := waitBound(t, e, ns, second.Selector(), second.Size(), placeTimeout)
	secondPlaced, _ := checkGangUnderOneS0(t, f, secondPods, second.Shape)
	if diff := cmp.Diff(nicSet(firstPlaced), nicSet(secondPlaced)); diff != "" {
		t.Errorf("the second gang does not reuse the freed NICs (-first,+second):\n%s", diff)
	}
}

// TestForgedAnnotationIgnored: a pod created with rdmatopo.io/* annotations
// naming another pod's NICs gets other NICs, and the bind replaces the
// forged values.
func TestForgedAnnotationIgnored(t *testing.T) {
	e := requireEnv(t)
	ctx := context.Background()
	f := newFabric(t, e)
	ns := newNamespace(t, e)
	// One node: NUMA-0 NICs under leaf 0, NUMA-1 NICs under leaf 1.
	f.AddNode(ctx, nodeSpec{Index: 1, Leaves: [2]int{0, 1}})
	pods := e.Kube.CoreV1().Pods(ns)

	if _, err := pods.Create(ctx, rdmaPod(ns, "honest", trainer, nil), metav1.CreateOptions{}); err != nil {
		t.Fatalf("create pod %s/honest: %v", ns, err)
	}
	honest := waitBound(t, e, ns, metav1.ListOptions{FieldSelector: "metadata.name=honest"}, 1, placeTimeout)[0]
	honestNICs, err := checkPodNICs(f, honest, trainer)
	if err != nil {
		t.Fatal(err)
	}

	// A pod that claims the honest pod's NICs, NUMA zone and S0.
	forged := map[string]string{
		annNICs: honest.Annotations[annNICs],
		annNUMA: honest.Annotations[annNUMA],
		annS0:   honest.Annotations[annS0],
	}
	if _, err := pods.Create(ctx, rdmaPod(ns, "forger", trainer, forged), metav1.CreateOptions{}); err != nil {
		t.Fatalf("create pod %s/forger: %v", ns, err)
	}
	forger := waitBound(t, e, ns, metav1.ListOptions{FieldSelector: "metadata.name=forger"}, 1, placeTimeout)[0]
	forgerNICs, err := checkPodNICs(f, forger, trainer)
	if err != nil {
		t.Fatalf("the forger's annotations after binding: %v", err)
	}
	checkNICsWithinUnits(t, f, []podNICs{honestNICs, forgerNICs})
	if forger.Annotations[annNICs] == forged[annNICs] {
		t.Errorf("pod %s/forger kept its forged %s=%q", ns, annNICs, forged[annNICs])
	}
	if forgerNICs.NUMA == honestNICs.NUMA {
		t.Errorf("both pods on NUMA zone %d of %s, which has the NICs of one", forgerNICs.NUMA, forger.Spec.NodeName)
	}
}

// TestSharedNICsServeUpToTheirUnits: a node whose NUMA zone 0 has two NICs
// of two RDMA units each (zone 1 none) takes a gang of three one-GPU,
// one-unit pods in that zone, no NIC serving more than two; a pod that
// needs two units on two NICs then waits (one unit is left), and a one-unit
// pod takes the last unit.
func TestSharedNICsServeUpToTheirUnits(t *testing.T) {
	e := requireEnv(t)
	ctx := context.Background()
	f := newFabric(t, e)
	ns := newNamespace(t, e)
	node := f.AddNode(ctx, nodeSpec{Index: 1, Leaves: [2]int{0, -1}, NICUnits: 2})
	oneUnit, twoUnits := podShape{GPUs: 1, NICs: 1}, podShape{GPUs: 1, NICs: 2}

	job := volcanoJob{Name: "shared", Workers: 2, Shape: oneUnit}
	job.Create(t, e, ns)
	pods := waitBound(t, e, ns, job.Selector(), job.Size(), placeTimeout)
	placed := checkGangNICs(t, f, pods, oneUnit)
	used := map[string]int{}
	for _, p := range placed {
		if p.Node != node || p.NUMA != 0 {
			t.Errorf("pod %s on %s NUMA %d, want %s NUMA 0", p.Pod, p.Node, p.NUMA, node)
		}
		for _, nic := range p.NICs {
			used[nic]++
		}
	}
	if len(used) != 2 {
		t.Errorf("three one-unit pods on NICs %v, want both NICs used: %s", used, describePlacement(placed))
	}
	f.RecordAllocations(ctx, pods)

	wide := volcanoJob{Name: "wide", Shape: twoUnits}
	wide.Create(t, e, ns)
	waitSchedulerCycles(t, e, pendingCycles, func() {
		for _, p := range listPods(t, e, ns, wide.Selector()) {
			if p.Spec.NodeName != "" {
				t.Fatalf("pod %s/%s bound to %s with two units asked and one left", p.Namespace, p.Name, p.Spec.NodeName)
			}
		}
	})

	last := volcanoJob{Name: "last", Shape: oneUnit}
	last.Create(t, e, ns)
	lastPods := waitBound(t, e, ns, last.Selector(), last.Size(), placeTimeout)
	all := append(checkGangNICs(t, f, lastPods, oneUnit), placed...)
	checkNICsWithinUnits(t, f, all)
}
