package integration

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/util/retry"

	"github.com/rdmatopo/rdmatopo/core/topology"
	"github.com/rdmatopo/rdmatopo/internal/fabricview"
	"github.com/rdmatopo/rdmatopo/internal/testing/harness"
)

// hyperNodeCRD is Volcano's HyperNode CRD (harness.HyperNodeCRD).
func hyperNodeCRD() *unstructured.Unstructured { return harness.HyperNodeCRD() }

// hyperNodeConf is the shipped example conf that takes S1 from HyperNodes.
const hyperNodeConf = "examples/volcano-scheduler-hypernodes.conf"

// rackLabel is the node label the test's tier-1 HyperNodes select by.
const rackLabel = "rdmatopo-it/rack"

// hyperNodeObj builds a HyperNode of a tier with one member.
func hyperNodeObj(name string, tier int64, memberType string, selector map[string]interface{}) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]interface{}{
		"apiVersion": "topology.volcano.sh/v1alpha1",
		"kind":       "HyperNode",
		"metadata":   map[string]interface{}{"name": name},
		"spec": map[string]interface{}{
			"tier":    tier,
			"members": []interface{}{map[string]interface{}{"type": memberType, "selector": selector}},
		},
	}}
}

// TestHyperNodeS1: with the scheduler on s1Source: hypernode, a hard-s1
// gang is placed within the S1 the HyperNodes give (tier-1 HyperNodes
// select nodes by label, tier-2 HyperNodes hold the tier-1 ones), even
// where two leaves of different S1s would hold it; after the HyperNodes
// are changed to put every node in one S1, the next gang takes those two
// leaves.
//
// Fabric: racks a (nodes 1, 2) and b (nodes 3, 4). Node 1 cables both
// zones to leaf 0, node 3 both to leaf 3; node 2 cables its zones to leaves
// 1 and 2, node 4 to leaves 4 and 5. A gang of four single-zone pods fits
// under two leaves only as leaf 0 + leaf 3, across the racks; within one
// rack it needs three leaves.
func TestHyperNodeS1(t *testing.T) {
	e := requireEnv(t)
	ctx := context.Background()
	f := newFabric(t, e)
	ns := newNamespace(t, e)
	racks := map[string][]int{"a": {1, 2}, "b": {3, 4}}
	leaves := map[int][2]int{1: {0, 0}, 2: {1, 2}, 3: {3, 3}, 4: {4, 5}}
	rackOf := map[string]string{}
	for rack, nodes := range racks {
		for _, i := range nodes {
			name := f.AddNode(ctx, nodeSpec{Index: i, Leaves: leaves[i], Labels: map[string]string{rackLabel: f.prefix + "-" + rack}})
			rackOf[name] = rack
		}
	}

	// Tier 1 per rack by node label, tier 2 over each tier-1 HyperNode
	// (one by exact name, one by pattern).
	hn := func(s string) string { return f.prefix + "-" + s }
	hns := []*unstructured.Unstructured{
		hyperNodeObj(hn("rack-a"), 1, "Node", map[string]interface{}{"labelMatch": map[string]interface{}{"matchLabels": map[string]interface{}{rackLabel: hn("a")}}}),
		hyperNodeObj(hn("rack-b"), 1, "Node", map[string]interface{}{"labelMatch": map[string]interface{}{"matchLabels": map[string]interface{}{rackLabel: hn("b")}}}),
		hyperNodeObj(hn("s1-a"), 2, "HyperNode", map[string]interface{}{"exactMatch": map[string]interface{}{"name": hn("rack-a")}}),
		hyperNodeObj(hn("s1-b"), 2, "HyperNode", map[string]interface{}{"regexMatch": map[string]interface{}{"pattern": "^" + hn("rack-b") + "$"}}),
	}
	hnClient := e.Dynamic.Resource(topology.HyperNodeResource)
	for _, o := range hns {
		if _, err := hnClient.Create(ctx, o, metav1.CreateOptions{}); err != nil {
			t.Fatalf("create HyperNode %s: %v", o.GetName(), err)
		}
	}
	t.Cleanup(func() {
		for _, o := range hns {
			if err := hnClient.Delete(context.Background(), o.GetName(), metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
				t.Errorf("delete HyperNode %s: %v", o.GetName(), err)
			}
		}
	})

	// The environment's scheduler (s1Source: label) makes way for one on
	// the example conf, and comes back after the test.
	conf := filepath.Join(e.RepoRoot, hyperNodeConf)
	if _, err := os.Stat(conf); err != nil {
		t.Fatal(err)
	}
	e.StopScheduler()
	t.Cleanup(func() {
		e.StopScheduler()
		if err := e.StartScheduler(context.Background()); err != nil {
			t.Errorf("restart the environment's scheduler: %v", err)
		}
	})
	if err := e.StartSchedulerConf(ctx, conf); err != nil {
		t.Fatal(err)
	}

	hardS1 := contract{Mode: "hard", HighestTier: "s1"}
	job := volcanoJob{Name: "first", Workers: 3, Shape: trainer, Contract: hardS1}
	job.Create(t, e, ns)
	pods := waitBound(t, e, ns, job.Selector(), job.Size(), placeTimeout)
	rack := checkGangInOneS1(t, f, pods, rackOf, map[string]string{"a": hn("s1-a"), "b": hn("s1-b")})
	if got := leafCount(t, f, pods); got != 3 {
		t.Errorf("gang within rack %s spans %d leaves, want 3", rack, got)
	}
	checkKubectlS1s(t, e, f, conf, map[string]string{hn("s1-a"): "a", hn("s1-b"): "b"}, rackOf)
	deleteVolcanoJob(t, e, ns, job)

	// One S1 over both racks: s1-b goes, s1-a holds every tier-1
	// HyperNode. The next gang may take leaf 0 + leaf 3.
	if err := hnClient.Delete(ctx, hn("s1-b"), metav1.DeleteOptions{}); err != nil {
		t.Fatalf("delete HyperNode %s: %v", hn("s1-b"), err)
	}
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cur, err := hnClient.Get(ctx, hn("s1-a"), metav1.GetOptions{})
		if err != nil {
			return err
		}
		members := []interface{}{map[string]interface{}{
			"type": "HyperNode", "selector": map[string]interface{}{"regexMatch": map[string]interface{}{"pattern": "^" + hn("rack-") + "[ab]$"}},
		}}
		if err := unstructured.SetNestedSlice(cur.Object, members, "spec", "members"); err != nil {
			return err
		}
		_, err = hnClient.Update(ctx, cur, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		t.Fatalf("update HyperNode %s: %v", hn("s1-a"), err)
	}
	job2 := volcanoJob{Name: "second", Workers: 3, Shape: trainer, Contract: hardS1}
	job2.Create(t, e, ns)
	pods = waitBound(t, e, ns, job2.Selector(), job2.Size(), placeTimeout)
	checkGangInOneS1(t, f, pods, nil, map[string]string{"": hn("s1-a")})
	if got := leafCount(t, f, pods); got != 2 {
		t.Errorf("gang under one S1 of both racks spans %d leaves, want 2 (leaf 0 and leaf 3)", got)
	}
}

// checkGangInOneS1 checks a bound gang: every pod's NICs agree with the
// fabric, no NIC is given twice, all pods are in one rack (unless rackOf is
// nil), and the PodGroup's placement says tier s1 with the S1 the
// HyperNodes give that rack (s1Of[rack]). It returns the rack.
func checkGangInOneS1(t *testing.T, f *fabric, pods []corev1.Pod, rackOf map[string]string, s1Of map[string]string) string {
	t.Helper()
	placed := checkGangNICs(t, f, pods, trainer)
	inRack := map[string]bool{}
	for _, pn := range placed {
		inRack[rackOf[pn.Node]] = true
	}
	t.Logf("placed: %s", describePlacement(placed))
	if len(inRack) != 1 {
		t.Fatalf("gang spans %d racks (S1s of the HyperNodes): %s", len(inRack), describePlacement(placed))
	}
	var rack string
	for r := range inRack {
		rack = r
	}
	pg := podGroupOf(t, f.e, pods[0])
	got, err := decodePlacement(pg)
	if err != nil {
		t.Fatal(err)
	}
	if got.Tier != "s1" || len(got.S1) != 1 || got.S1[0] != s1Of[rack] {
		t.Errorf("PodGroup %s/%s %s = %+v, want tier s1 with S1 [%s]", pg.Namespace, pg.Name, annPlacement, got, s1Of[rack])
	}
	return rack
}

// leafCount returns how many leaves the pods' NICs use.
func leafCount(t *testing.T, f *fabric, pods []corev1.Pod) int {
	t.Helper()
	leaves := map[string]bool{}
	for _, p := range pods {
		for _, nic := range splitList(p.Annotations[annNICs]) {
			leaves[f.nics[p.Spec.NodeName][nic].S0] = true
		}
	}
	names := make([]string, 0, len(leaves))
	for l := range leaves {
		names = append(names, fmt.Sprintf("%.8s", l))
	}
	sort.Strings(names)
	t.Logf("leaves: %s", strings.Join(names, " "))
	return len(leaves)
}

// checkKubectlS1s runs `kubectl rdmatopo topology -o json` under conf and
// checks that every leaf of the test's nodes is shown in the S1 its rack's
// HyperNode gives (rackOfS1 maps S1 name to rack).
func checkKubectlS1s(t *testing.T, e *Env, f *fabric, conf string, rackOfS1, rackOf map[string]string) {
	t.Helper()
	var v fabricview.View
	kubectlJSON(t, e, &v, "topology", "--scheduler-conf", conf)
	seen := 0
	for _, l := range v.Leaves {
		for _, n := range l.Nodes {
			rack, ours := rackOf[n]
			if !ours {
				continue
			}
			seen++
			if rackOfS1[l.S1] != rack {
				t.Errorf("kubectl rdmatopo topology shows node %s (rack %s) on leaf %.8s in S1 %q, want its rack's HyperNode", n, rack, l.S0, l.S1)
			}
		}
	}
	if seen == 0 {
		t.Errorf("kubectl rdmatopo topology shows none of the test's nodes: %+v", v)
	}
}
