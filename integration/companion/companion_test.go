package companion

import (
	"context"
	"crypto/tls"
	"fmt"
	"net/http"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	nodev1alpha1 "github.com/kubewharf/katalyst-api/pkg/apis/node/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/rdmatopo/rdmatopo/core/topology"
	rdcompanion "github.com/rdmatopo/rdmatopo/internal/companion"
	"github.com/rdmatopo/rdmatopo/internal/testing/harness"
	"github.com/rdmatopo/rdmatopo/internal/testing/monitoring"
	"github.com/rdmatopo/rdmatopo/internal/testing/webhookcert"
)

// companionNamespace holds the companion's owner Leases.
const companionNamespace = "rdmatopo-companion"

// manualScheduler is a schedulerName no scheduler serves: the tests bind
// such pods themselves, as any scheduler's binder does.
const manualScheduler = "rdmatopo-it-manual"

// numaBindResult is katalyst's pod annotation the companion writes.
const numaBindResult = "katalyst.kubewharf.io/numa_bind_result"

// companionProc is one running companion replica.
type companionProc struct {
	*harness.CompanionProcess
	// webhook is the replica's /bind URL ("" when it serves none).
	webhook string
}

// companionCerts writes the webhook serving certificate once per test.
func companionCerts(t *testing.T) (dir string, ca []byte) {
	t.Helper()
	dir = filepath.Join(t.TempDir(), "certs")
	ca, err := webhookcert.Write(dir, "rdmatopo-it-companion-ca")
	if err != nil {
		t.Fatal(err)
	}
	return dir, ca
}

// startCompanion starts a companion replica (admin credentials) and waits
// for its health endpoint. certDir empty: no webhook.
func startCompanion(t *testing.T, e *Env, name, certDir string, args ...string) *companionProc {
	t.Helper()
	p, err := e.procs.StartCompanion(context.Background(), e.Kube, harness.Companion{
		Name: name, Binary: e.binary("rdmatopo"), Kubeconfig: e.adminKubeconfig, Namespace: companionNamespace,
		CertDir: certDir, ExtraArgs: append([]string{"--resync-period=2s", "--v=3", "--owner-lease=" + ownerLease(t)}, args...), Timeout: componentReadyTimeout,
	})
	if p != nil && p.Process != nil {
		t.Cleanup(p.Stop)
	}
	if err != nil {
		t.Fatal(err)
	}
	return &companionProc{CompanionProcess: p, webhook: p.WebhookURL}
}

// scrape reads the replica's metrics.
func (c *companionProc) scrape(t *testing.T) monitoring.Scrape {
	t.Helper()
	resp, err := http.Get(c.MetricsURL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	samples, err := monitoring.ParseScrape(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return monitoring.Scrape{Instance: c.Name, Samples: samples}
}

// metric is a series' value (0 when absent).
func (c *companionProc) metric(t *testing.T, name string, labels map[string]string) float64 {
	if labels == nil {
		labels = map[string]string{}
	}
	for _, x := range c.scrape(t).Samples {
		if x.Name != name || len(x.Labels) != len(labels) {
			continue
		}
		match := true
		for k, v := range labels {
			match = match && x.Labels[k] == v
		}
		if match {
			return x.Value
		}
	}
	return 0
}

// bindHook sends the pods/binding admissions of one namespace to a URL.
type bindHook struct {
	Namespace string
	URL       string
}

// installBindWebhook installs the MutatingWebhookConfiguration the chart
// ships (pods/binding CREATE, failurePolicy Ignore, 2 s), one webhook per hook,
// each limited to its namespace; removed when the test ends.
func installBindWebhook(t *testing.T, e *Env, ca []byte, hooks ...bindHook) {
	t.Helper()
	ctx := context.Background()
	name := "rdmatopo-it-" + strings.ToLower(strings.TrimPrefix(t.Name(), "Test"))
	var hs []harness.BindHook
	for i, h := range hooks {
		hs = append(hs, harness.BindHook{Name: fmt.Sprintf("bind-%d.companion.rdmatopo.io", i), URL: h.URL, Namespace: h.Namespace})
	}
	hooksAPI := e.Kube.AdmissionregistrationV1().MutatingWebhookConfigurations()
	if _, err := hooksAPI.Create(ctx, harness.BindWebhookConfiguration(name, ca, 2, hs...), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = hooksAPI.Delete(context.Background(), name, metav1.DeleteOptions{}) })
}

// companionPod builds a pod of gang g (a Kueue pod group label, which the
// companion reads as the gang) for the given scheduler.
func companionPod(ns, name, gang, scheduler string, shape podShape) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{rdcompanion.KueuePodGroupLabel: gang, "app": gang}},
		Spec: corev1.PodSpec{
			SchedulerName: scheduler,
			Containers:    []corev1.Container{{Name: "train", Image: image, Resources: shape.resources()}},
		},
	}
}

// createPods creates the pods.
func createPods(t *testing.T, e *Env, pods []*corev1.Pod) {
	t.Helper()
	for _, p := range pods {
		created, err := e.Kube.CoreV1().Pods(p.Namespace).Create(context.Background(), p, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("create pod %s/%s: %v", p.Namespace, p.Name, err)
		}
		*p = *created
	}
}

// bindTo binds a pod as a scheduler's binder does.
func bindTo(ctx context.Context, e *Env, p *corev1.Pod, node string) error {
	return e.Kube.CoreV1().Pods(p.Namespace).Bind(ctx, &corev1.Binding{
		ObjectMeta: metav1.ObjectMeta{Namespace: p.Namespace, Name: p.Name, UID: p.UID},
		Target:     corev1.ObjectReference{Kind: "Node", Name: node},
	}, metav1.CreateOptions{})
}

// startKubeScheduler runs kube-scheduler v1.30 with its default profile.
func startKubeScheduler(t *testing.T, e *Env) {
	t.Helper()
	port, err := harness.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	p, err := e.start(harness.Spec{Name: "kube-scheduler", Path: e.binary("kube-scheduler"), Args: []string{
		"--kubeconfig=" + e.adminKubeconfig,
		"--authentication-kubeconfig=" + e.adminKubeconfig,
		"--authorization-kubeconfig=" + e.adminKubeconfig,
		"--leader-elect=false",
		"--bind-address=127.0.0.1",
		"--secure-port=" + fmt.Sprint(port),
		"--v=2",
	}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Stop)
	insecure := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} //nolint:gosec // loopback health check
	if err := harness.WaitHTTP(context.Background(), p, insecure, "https://"+harness.HostPort(port)+"/healthz", "", componentReadyTimeout); err != nil {
		t.Fatal(err)
	}
}

// TestCompanionKubeSchedulerGangUnderOneLeaf: kube-scheduler v1.30 places a
// gang of three pods (one per node by anti-affinity) on three nodes whose
// zones hang off two leaves each, leaf 0 the only one all reach (from a
// different zone on the middle node). The companion's webhook gives each pod
// the NICs of its node's leaf-0 zone, whichever node kube-scheduler binds
// first, and writes numa_bind_result; the pods hold distinct NICs.
func TestCompanionKubeSchedulerGangUnderOneLeaf(t *testing.T) {
	e := requireEnv(t)
	ctx := context.Background()
	f := newFabric(t, e)
	f.AddNode(ctx, nodeSpec{Index: 1, Leaves: [2]int{0, 1}})
	f.AddNode(ctx, nodeSpec{Index: 2, Leaves: [2]int{2, 0}})
	f.AddNode(ctx, nodeSpec{Index: 3, Leaves: [2]int{0, 3}})
	ns := newNamespace(t, e, "")
	certs, ca := companionCerts(t)
	c := startCompanion(t, e, "companion", certs)
	installBindWebhook(t, e, ca, bindHook{Namespace: ns, URL: c.webhook})
	startKubeScheduler(t, e)

	var pods []*corev1.Pod
	for i := 0; i < 3; i++ {
		p := companionPod(ns, fmt.Sprintf("worker-%d", i), "gang", corev1.DefaultSchedulerName, trainer)
		p.Spec.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{
			RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
				LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "gang"}},
				TopologyKey:   corev1.LabelHostname,
			}},
		}}
		pods = append(pods, p)
	}
	createPods(t, e, pods)
	var placed []corev1.Pod
	eventually(t, 60*time.Second, func() (bool, string) {
		placed = listPods(t, e, ns)
		for _, p := range placed {
			if p.Spec.NodeName == "" || p.Annotations[annNICs] == "" {
				return false, fmt.Sprintf("pod %s: node %q, NICs %q", p.Name, p.Spec.NodeName, p.Annotations[annNICs])
			}
		}
		return len(placed) == 3, fmt.Sprintf("%d pods", len(placed))
	})
	for _, pp := range checkPods(t, f, placed, trainer) {
		if pp.S0 != f.Leaf(0) {
			t.Errorf("pod %s on %s: NUMA %d under leaf %.8s, want leaf 0 (%.8s)", pp.Pod, pp.Node, pp.NUMA, pp.S0, f.Leaf(0))
		}
	}
	if got := c.metric(t, "rdmatopo_companion_binds_total", map[string]string{"result": rdcompanion.ResultAssisted}); got != 3 {
		t.Errorf("assisted binds %v, want 3", got)
	}
}

// TestCompanionTwoReplicasNeverShareNIC: two companion replicas, each
// with its own informers, elect one owner of the NIC book; the API server
// sends the binds of gang a to replica 1 and of gang b to replica 2, so the
// other replica forwards its binds to the owner. Six pods bind at once
// (two nodes get a pod of each gang, two one pod each): all get NICs, none
// shared. Then the owner is killed: binds go on (unassisted while no owner
// answers) until the surviving replica has taken the Lease over and
// answers, and its first choices on the half-full nodes take the zones the
// killed owner did not hand out.
func TestCompanionTwoReplicasNeverShareNIC(t *testing.T) {
	e := requireEnv(t)
	ctx := context.Background()
	f := newFabric(t, e)
	var nodes []string
	for i := 1; i <= 5; i++ {
		nodes = append(nodes, f.AddNode(ctx, nodeSpec{Index: i, Leaves: [2]int{0, 1}}))
	}
	nsA, nsB := newNamespace(t, e, "-a"), newNamespace(t, e, "-b")
	certs, ca := companionCerts(t)
	// Short election durations; the grace exceeds the webhook's 2 s timeout.
	args := []string{"--publish-hypernodes=false", "--publish-labels=false", "--adopt=false",
		"--owner-lease-duration=4s", "--owner-renew-deadline=3s", "--owner-retry-period=500ms", "--owner-grace=3s"}
	r1 := startCompanion(t, e, "companion-1", certs, args...)
	r2 := startCompanion(t, e, "companion-2", certs, args...)
	installBindWebhook(t, e, ca, bindHook{Namespace: nsA, URL: r1.webhook}, bindHook{Namespace: nsB, URL: r2.webhook})
	owner, other := whichOwner(t, e, r1, r2)
	t.Logf("owner %s, forwarding %s", owner.Name, other.Name)

	type bindTarget struct {
		pod  *corev1.Pod
		node string
	}
	var first []bindTarget
	for i, node := range []string{nodes[0], nodes[1], nodes[2]} {
		first = append(first, bindTarget{companionPod(nsA, fmt.Sprintf("a-%d", i), "a", manualScheduler, trainer), node})
	}
	for i, node := range []string{nodes[0], nodes[1], nodes[3]} {
		first = append(first, bindTarget{companionPod(nsB, fmt.Sprintf("b-%d", i), "b", manualScheduler, trainer), node})
	}
	var pods []*corev1.Pod
	for _, b := range first {
		pods = append(pods, b.pod)
	}
	createPods(t, e, pods)
	var wg sync.WaitGroup
	errs := make(chan error, len(first))
	for _, b := range first {
		wg.Add(1)
		go func(b bindTarget) {
			defer wg.Done()
			if err := bindTo(ctx, e, b.pod, b.node); err != nil {
				errs <- fmt.Errorf("bind %s/%s: %w", b.pod.Namespace, b.pod.Name, err)
			}
		}(b)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	placed := append(listPods(t, e, nsA), listPods(t, e, nsB)...)
	for _, p := range placed {
		if p.Annotations[annNICs] == "" {
			t.Errorf("pod %s/%s on %s: no NICs chosen", p.Namespace, p.Name, p.Spec.NodeName)
		}
	}
	checkPods(t, f, placed, trainer)
	if got := owner.metric(t, "rdmatopo_companion_binds_total", map[string]string{"result": rdcompanion.ResultAssisted}); got != 6 {
		t.Errorf("%s (owner) answered %v binds, want 6", owner.Name, got)
	}
	if got := other.metric(t, "rdmatopo_companion_forwarded_binds_total", nil); got != 3 {
		t.Errorf("%s forwarded %v binds, want 3", other.Name, got)
	}
	sum, n := owner.metric(t, "rdmatopo_companion_bind_webhook_seconds_sum", nil), owner.metric(t, "rdmatopo_companion_bind_webhook_seconds_count", nil)
	if n > 0 {
		t.Logf("%s: %v binds answered in %.2f ms on average", owner.Name, n, 1000*sum/n)
	}

	// The owner dies. Binds sent to the survivor go on: unassisted until
	// it has taken the book over, then with NICs.
	owner.Kill()
	ns := nsA
	if other == r2 {
		ns = nsB
	}
	i := 0
	eventually(t, 60*time.Second, func() (bool, string) {
		p := companionPod(ns, fmt.Sprintf("c-%d", i), "c", manualScheduler, trainer)
		i++
		createPods(t, e, []*corev1.Pod{p})
		if err := bindTo(ctx, e, p, nodes[4]); err != nil {
			t.Fatalf("bind %s while the owner is down: %v", p.Name, err)
		}
		got, err := e.Kube.CoreV1().Pods(ns).Get(ctx, p.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return got.Annotations[annNICs] != "", fmt.Sprintf("%d binds while %s takes over, none assisted yet", i, other.Name)
	})
	unassisted := 0.0
	for _, reason := range []string{rdcompanion.ReasonOwnerUnreachable, rdcompanion.ReasonNoOwner, rdcompanion.ReasonHandover} {
		unassisted += other.metric(t, "rdmatopo_companion_unassisted_answers_total", map[string]string{"reason": reason})
	}
	if unassisted == 0 || unassisted != float64(i-1) {
		t.Errorf("%s let %v binds through unassisted; want the %d binds before its first answer", other.Name, unassisted, i-1)
	}
	t.Logf("%d binds went on unassisted during the handover", i-1)

	// The new owner's first choices on nodes 3 and 4, each half taken by
	// the killed owner's answers.
	second := []*corev1.Pod{companionPod(ns, "d-0", "d", manualScheduler, trainer), companionPod(ns, "d-1", "d", manualScheduler, trainer)}
	createPods(t, e, second)
	for j, p := range second {
		if err := bindTo(ctx, e, p, nodes[2+j]); err != nil {
			t.Fatalf("bind %s: %v", p.Name, err)
		}
	}
	var annotated []corev1.Pod
	for _, p := range append(listPods(t, e, nsA), listPods(t, e, nsB)...) {
		if strings.HasPrefix(p.Name, "c-") && p.Annotations[annNICs] == "" {
			continue // bound during the handover, without NICs
		}
		annotated = append(annotated, p)
	}
	checkPods(t, f, annotated, trainer)
}

// whichOwner waits until one replica holds the owner Lease and answers,
// and returns it and the other.
func whichOwner(t *testing.T, e *Env, r1, r2 *companionProc) (owner, other *companionProc) {
	t.Helper()
	eventually(t, 30*time.Second, func() (bool, string) {
		for _, r := range []*companionProc{r1, r2} {
			if r.metric(t, "rdmatopo_companion_owner", nil) == 1 {
				owner = r
			}
		}
		if owner == nil {
			return false, "no replica answers as the owner"
		}
		l, err := e.Kube.CoordinationV1().Leases(companionNamespace).Get(context.Background(), ownerLease(t), metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		holder := ""
		if l.Spec.HolderIdentity != nil {
			holder = *l.Spec.HolderIdentity
		}
		return strings.HasSuffix(owner.webhook, "//"+rdcompanion.AddressOf(holder)+"/bind"),
			fmt.Sprintf("%s answers as the owner; the Lease names %q", owner.Name, holder)
	})
	if owner == r1 {
		return r1, r2
	}
	return r2, r1
}

// ownerLease is the owner Lease of the test's replicas.
func ownerLease(t *testing.T) string {
	return "owner-" + strings.ToLower(strings.TrimPrefix(t.Name(), "Test"))
}

// TestCompanionWebhookDownAdoptsKCNR: with the webhook configured but its
// server down (failurePolicy Ignore), binds go on without annotations; the
// node agent picks NICs (the test writes them into the KCNRs), and the
// companion writes them on the pods and counts the unassisted binds.
func TestCompanionWebhookDownAdoptsKCNR(t *testing.T) {
	e := requireEnv(t)
	ctx := context.Background()
	f := newFabric(t, e)
	n1 := f.AddNode(ctx, nodeSpec{Index: 1, Leaves: [2]int{0, 1}})
	ns := newNamespace(t, e, "")
	_, ca := companionCerts(t)
	down, err := harness.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	installBindWebhook(t, e, ca, bindHook{Namespace: ns, URL: "https://" + harness.HostPort(down) + "/bind"})
	c := startCompanion(t, e, "companion", "")
	pods := []*corev1.Pod{companionPod(ns, "w-0", "g", manualScheduler, trainer), companionPod(ns, "w-1", "g", manualScheduler, trainer)}
	createPods(t, e, pods)
	for _, p := range pods {
		if err := bindTo(ctx, e, p, n1); err != nil {
			t.Fatalf("bind with the webhook down: %v", err)
		}
	}
	bound := listPods(t, e, ns)
	for _, p := range bound {
		if p.Spec.NodeName != n1 || p.Annotations[annNICs] != "" {
			t.Fatalf("pod %s: node %q, NICs %q; want bound, unannotated", p.Name, p.Spec.NodeName, p.Annotations[annNICs])
		}
	}
	// The agent gives w-0 zone 1's NICs and w-1 zone 0's.
	chosen := map[string][]string{
		ns + "/w-0": {zoneNICs[1][0], zoneNICs[1][1]},
		ns + "/w-1": {zoneNICs[0][0], zoneNICs[0][1]},
	}
	f.RecordAllocationsAs(ctx, bound, chosen)
	eventually(t, 30*time.Second, func() (bool, string) {
		for _, p := range listPods(t, e, ns) {
			want := strings.Join(chosen[ns+"/"+p.Name], ",")
			if p.Annotations[annNICs] != want {
				return false, fmt.Sprintf("pod %s: %s=%q, want %q", p.Name, annNICs, p.Annotations[annNICs], want)
			}
		}
		return true, ""
	})
	checkAdopted(t, f, listPods(t, e, ns))
	if got := c.metric(t, "rdmatopo_companion_unassisted_binds_total", nil); got != 2 {
		t.Errorf("unassisted binds %v, want 2", got)
	}
}

// TestCompanionHyperNodes: the companion publishes a tier-1 HyperNode per
// set of nodes whose NICs share their leaves and a tier-2 one per S1 (they
// decode as volcano.sh/apis v1.14.0 HyperNodes), labels the nodes, leaves
// a HyperNode of another source alone, and moves a node to a new group when
// its KCNR's cabling changes, deleting the group it left empty; a KCNR
// change that moves no NIC to another leaf writes nothing.
func TestCompanionHyperNodes(t *testing.T) {
	e := requireEnv(t)
	ctx := context.Background()
	hns := e.Dynamic.Resource(topology.HyperNodeResource)
	foreign := &unstructured.Unstructured{Object: map[string]interface{}{
		"apiVersion": "topology.volcano.sh/v1alpha1", "kind": "HyperNode",
		"metadata": map[string]interface{}{"name": "rdmatopo-it-foreign"},
		"spec": map[string]interface{}{"tier": int64(1), "members": []interface{}{map[string]interface{}{
			"type": "Node", "selector": map[string]interface{}{"exactMatch": map[string]interface{}{"name": "nowhere"}},
		}}},
	}}
	foreign.SetLabels(map[string]string{rdcompanion.SourceLabel: "ufm"})
	if _, err := hns.Create(ctx, foreign, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = hns.Delete(context.Background(), foreign.GetName(), metav1.DeleteOptions{}) })

	f := newFabric(t, e)
	s1 := map[string]string{"rdmatopo.io/minipod": "mp-x"}
	n1 := f.AddNode(ctx, nodeSpec{Index: 1, Leaves: [2]int{0, 1}, Labels: s1})
	n2 := f.AddNode(ctx, nodeSpec{Index: 2, Leaves: [2]int{0, 1}, Labels: s1})
	n3 := f.AddNode(ctx, nodeSpec{Index: 3, Leaves: [2]int{2, 3}, Labels: s1})
	c := startCompanion(t, e, "companion", "")
	leaves := func(a, b int) []topology.S0ID {
		ids := []topology.S0ID{topology.S0ID(f.Leaf(a)), topology.S0ID(f.Leaf(b))}
		sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
		return ids
	}
	g01, g23 := rdcompanion.LeafGroupName("mp-x", leaves(0, 1)), rdcompanion.LeafGroupName("mp-x", leaves(2, 3))
	waitHyperNodes(t, e, map[string][]string{g01: {n1, n2}, g23: {n3}, "rdmatopo-s1-mp-x": {g01, g23}})
	waitNodeLabel(t, e, n3, rdcompanion.LeafGroupLabel, g23)

	// What `rdmatopo export hypernodes` prints of the live cluster decodes
	// as Volcano's own type.
	out, err := exec.Command(e.binary("rdmatopo"), "export", "hypernodes", "--kubeconfig", e.adminKubeconfig).Output()
	if err != nil {
		t.Fatalf("export: %v", err)
	}
	check := exec.Command(e.binary("hypernode-check"))
	check.Stdin = strings.NewReader(string(out))
	if msg, err := check.CombinedOutput(); err != nil {
		t.Fatalf("hypernode-check: %v: %s", err, msg)
	}

	// Allocations change, leaves do not: no write.
	waitQuiet(t, c)
	before := c.metric(t, "rdmatopo_companion_publish_writes_total", map[string]string{"kind": "hypernode", "op": "update"}) +
		c.metric(t, "rdmatopo_companion_publish_writes_total", map[string]string{"kind": "hypernode", "op": "create"})
	cnr := f.cnrs[n1].DeepCopy()
	cnr.Spec.NodeResourceProperties = append(cnr.Spec.NodeResourceProperties, &nodev1alpha1.Property{PropertyName: "rdmatopo-it/other", PropertyValues: []string{"x"}})
	f.writeCNR(ctx, cnr)
	waitQuiet(t, c)
	after := c.metric(t, "rdmatopo_companion_publish_writes_total", map[string]string{"kind": "hypernode", "op": "update"}) +
		c.metric(t, "rdmatopo_companion_publish_writes_total", map[string]string{"kind": "hypernode", "op": "create"})
	if after != before {
		t.Errorf("HyperNode writes went from %v to %v for a change that moves no NIC", before, after)
	}

	// n3 is recabled to leaves 0 and 1: it joins n1 and n2; its old group
	// is deleted.
	f.SetCabling(ctx, nodeSpec{Index: 3, Leaves: [2]int{0, 1}, Labels: s1})
	waitHyperNodes(t, e, map[string][]string{g01: {n1, n2, n3}, "rdmatopo-s1-mp-x": {g01}})
	if _, err := hns.Get(ctx, g23, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("HyperNode %s of the emptied group: %v", g23, err)
	}
	waitNodeLabel(t, e, n3, rdcompanion.LeafGroupLabel, g01)
	if _, err := hns.Get(ctx, foreign.GetName(), metav1.GetOptions{}); err != nil {
		t.Errorf("the HyperNode of another source: %v", err)
	}
}

// waitQuiet waits until a publisher pass ends without a write: two scrapes
// a resync period apart show the same write count.
func waitQuiet(t *testing.T, c *companionProc) {
	t.Helper()
	total := func() float64 {
		sum := 0.0
		for _, s := range c.scrape(t).Samples {
			if s.Name == "rdmatopo_companion_publish_writes_total" {
				sum += s.Value
			}
		}
		return sum
	}
	last := total()
	deadline := time.Now().Add(5 * time.Second)
	eventually(t, 30*time.Second, func() (bool, string) {
		now := total()
		if now != last {
			last, deadline = now, time.Now().Add(5*time.Second)
		}
		return time.Now().After(deadline), fmt.Sprintf("writes still moving (%v)", now)
	})
}

// waitHyperNodes waits until each named HyperNode of the companion has
// exactly the given members (names, any order).
func waitHyperNodes(t *testing.T, e *Env, want map[string][]string) {
	t.Helper()
	hns := e.Dynamic.Resource(topology.HyperNodeResource)
	eventually(t, 30*time.Second, func() (bool, string) {
		for name, members := range want {
			u, err := hns.Get(context.Background(), name, metav1.GetOptions{})
			if err != nil {
				return false, fmt.Sprintf("HyperNode %s: %v", name, err)
			}
			got := hyperNodeMembers(u)
			sort.Strings(members)
			if strings.Join(got, ",") != strings.Join(members, ",") {
				return false, fmt.Sprintf("HyperNode %s: members %v, want %v", name, got, members)
			}
			if u.GetLabels()[rdcompanion.SourceLabel] != rdcompanion.SourceValue {
				return false, fmt.Sprintf("HyperNode %s: labels %v", name, u.GetLabels())
			}
		}
		return true, ""
	})
}

// hyperNodeMembers lists the exact-match names of a HyperNode's members, sorted.
func hyperNodeMembers(u *unstructured.Unstructured) []string {
	members, _, _ := unstructured.NestedSlice(u.Object, "spec", "members")
	var out []string
	for _, m := range members {
		name, _, _ := unstructured.NestedString(m.(map[string]interface{}), "selector", "exactMatch", "name")
		out = append(out, name)
	}
	sort.Strings(out)
	return out
}

// waitNodeLabel waits until a node carries label key=value.
func waitNodeLabel(t *testing.T, e *Env, node, key, value string) {
	t.Helper()
	eventually(t, 30*time.Second, func() (bool, string) {
		n, err := e.Kube.CoreV1().Nodes().Get(context.Background(), node, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return n.Labels[key] == value, fmt.Sprintf("node %s: %s=%q, want %q", node, key, n.Labels[key], value)
	})
}

// checkAdopted checks pods whose NICs the node agent chose: their
// annotations name NICs of one zone of their node, under the annotated leaf.
func checkAdopted(t *testing.T, f *fabric, pods []corev1.Pod) {
	t.Helper()
	for _, p := range pods {
		for _, nic := range splitList(p.Annotations[annNICs]) {
			info := f.nics[p.Spec.NodeName][nic]
			if fmt.Sprint(info.NUMA) != p.Annotations[annNUMA] || info.S0 != p.Annotations[annS0] {
				t.Errorf("pod %s: NIC %s is %+v; annotated NUMA %q leaf %q", p.Name, nic, info, p.Annotations[annNUMA], p.Annotations[annS0])
			}
		}
	}
}
