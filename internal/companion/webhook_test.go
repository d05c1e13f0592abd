package companion

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	jsonpatch "github.com/evanphx/json-patch"
	"github.com/google/go-cmp/cmp"
	"github.com/kubewharf/katalyst-api/pkg/apis/node/v1alpha1"
	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"

	"github.com/rdmatopo/rdmatopo/core/ledger"
	"github.com/rdmatopo/rdmatopo/core/topology"
	b "github.com/rdmatopo/rdmatopo/internal/testing/builders"
)

// fakeCluster is a Cluster over fixed objects.
type fakeCluster struct {
	f    *topology.Fabric
	pods []*corev1.Pod
}

func (c *fakeCluster) Fabric() *topology.Fabric { return c.f }
func (c *fakeCluster) Pod(ns, name string) (*corev1.Pod, bool) {
	for _, p := range c.pods {
		if p.Namespace == ns && p.Name == name {
			return p, true
		}
	}
	return nil, false
}
func (c *fakeCluster) PodsOnNode(node string) []*corev1.Pod {
	var out []*corev1.Pod
	for _, p := range c.pods {
		if p.Spec.NodeName == node {
			out = append(out, p)
		}
	}
	return out
}
func (c *fakeCluster) GangPods(key string) []*corev1.Pod {
	var out []*corev1.Pod
	for _, p := range c.pods {
		if GangKey(p) == key {
			out = append(out, p)
		}
	}
	return out
}
func (c *fakeCluster) PodState(uid string) PodState {
	for _, p := range c.pods {
		if string(p.UID) == uid {
			return PodState{Known: true, Node: p.Spec.NodeName}
		}
	}
	return PodState{}
}

// bind applies the webhook's answer to the pod as kube-apiserver does: the
// Binding's annotations are merged into the pod, which gets the node.
func bind(t *testing.T, w *Webhook, c *fakeCluster, pod *corev1.Pod, node string, have map[string]string) (*admissionv1.AdmissionResponse, map[string]string) {
	t.Helper()
	resp, got := bindWith(t, w.Admit, pod, node, have)
	if resp.Allowed {
		pod.Spec.NodeName = node
		if pod.Annotations == nil {
			pod.Annotations = map[string]string{}
		}
		for k, v := range got {
			pod.Annotations[k] = v
		}
	}
	return resp, got
}

// bindNoApply asks the webhook about binding pod to node and returns the
// annotations its answer adds, changing nothing.
func bindNoApply(t *testing.T, w *Webhook, pod *corev1.Pod, node string) (*admissionv1.AdmissionResponse, map[string]string) {
	return bindWith(t, w.Admit, pod, node, nil)
}

// bindingRequest is the admission request of binding pod to node.
func bindingRequest(pod *corev1.Pod, node string, have map[string]string) (*admissionv1.AdmissionRequest, []byte) {
	binding := &corev1.Binding{ObjectMeta: metav1.ObjectMeta{Name: pod.Name, Namespace: pod.Namespace, Annotations: have},
		Target: corev1.ObjectReference{Kind: "Node", Name: node}}
	raw, _ := json.Marshal(binding)
	return &admissionv1.AdmissionRequest{
		UID:       types.UID("req-" + pod.Name),
		Operation: admissionv1.Create, SubResource: "binding", Namespace: pod.Namespace, Name: pod.Name,
		Resource: metav1.GroupVersionResource{Version: "v1", Resource: "pods"}, Object: runtime.RawExtension{Raw: raw},
	}, raw
}

// bindWith sends the request of binding pod to node to admit and returns
// the answer and the annotations its patch adds.
func bindWith(t *testing.T, admit func(context.Context, *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse,
	pod *corev1.Pod, node string, have map[string]string) (*admissionv1.AdmissionResponse, map[string]string) {
	t.Helper()
	req, raw := bindingRequest(pod, node, have)
	resp := admit(context.Background(), req)
	got := map[string]string{}
	if resp.Patch != nil {
		p, err := jsonpatch.DecodePatch(resp.Patch)
		if err != nil {
			t.Errorf("patch %s: %v", resp.Patch, err)
			return resp, got
		}
		out, err := p.Apply(raw)
		if err != nil {
			t.Errorf("apply %s: %v", resp.Patch, err)
			return resp, got
		}
		nb := &corev1.Binding{}
		if err := json.Unmarshal(out, nb); err != nil {
			t.Error(err)
			return resp, got
		}
		got = nb.Annotations
	}
	return resp, got
}

// gangPod is a one-zone pod of gang g: 4 GPUs and 2 NICs.
func gangPod(name, g string) *corev1.Pod {
	return b.MakePod("ns", name).UID("uid-"+name).Group(g).
		Req(topology.DefaultGPUResource, "4").Req(topology.DefaultRDMAResource, "2").Req(corev1.ResourceCPU, "8").Obj()
}

func newTestWebhook(c *fakeCluster) *Webhook {
	return &Webhook{
		Chooser: &Chooser{Config: testConfig},
		Book:    &Book{Grace: time.Minute, TTL: 2 * time.Minute},
		Cluster: c, Metrics: NewMetrics(),
	}
}

// TestWebhookKeepsGangUnderOneLeaf: nodes n1..n3 cable NUMA 0 to leaf a
// and NUMA 1 to leaf b; n2's zone 1 is full. A gang's first pod lands on
// n2 (zone 0, leaf a); its next pods, bound to n1 and n3, get their NICs
// under leaf a too, though zone 1 would fit as well; a pod of another gang
// on n1 gets zone 1, the one still free; no NIC is handed out twice.
func TestWebhookKeepsGangUnderOneLeaf(t *testing.T) {
	var nodes []*corev1.Node
	var cnrs []*v1alpha1.CustomNodeResource
	for _, name := range []string{"n1", "n2", "n3"} {
		n, c := providerNode(name, "p", "a", "b")
		if name == "n2" {
			c = b.ProviderCNR(name, "a", "b").
				UseNIC(b.NUMANICs[1][0], "ns/other/x").UseNIC(b.NUMANICs[1][1], "ns/other/x").Obj()
		}
		nodes, cnrs = append(nodes, n), append(cnrs, c)
	}
	c := &fakeCluster{f: topology.Build(testConfig, nodes, cnrs)}
	g0, g1, g2, other := gangPod("w-0", "g"), gangPod("w-1", "g"), gangPod("w-2", "g"), gangPod("o-0", "h")
	c.pods = []*corev1.Pod{g0, g1, g2, other}
	w := newTestWebhook(c)

	steps := []struct {
		pod  *corev1.Pod
		node string
		want map[string]string
	}{
		{g0, "n2", map[string]string{ledger.AnnotationNICs: "0000:1a:00.0,0000:3f:00.0", ledger.AnnotationNUMA: "0", ledger.AnnotationS0: "a", "katalyst.kubewharf.io/numa_bind_result": "0"}},
		{g1, "n1", map[string]string{ledger.AnnotationNICs: "0000:1a:00.0,0000:3f:00.0", ledger.AnnotationNUMA: "0", ledger.AnnotationS0: "a", "katalyst.kubewharf.io/numa_bind_result": "0"}},
		{other, "n1", map[string]string{ledger.AnnotationNICs: "0000:d1:00.0,0000:e7:00.0", ledger.AnnotationNUMA: "1", ledger.AnnotationS0: "b", "katalyst.kubewharf.io/numa_bind_result": "1"}},
		{g2, "n3", map[string]string{ledger.AnnotationNICs: "0000:1a:00.0,0000:3f:00.0", ledger.AnnotationNUMA: "0", ledger.AnnotationS0: "a", "katalyst.kubewharf.io/numa_bind_result": "0"}},
	}
	for _, s := range steps {
		resp, got := bind(t, w, c, s.pod, s.node, nil)
		if !resp.Allowed {
			t.Fatalf("%s: refused: %v", s.pod.Name, resp.Result)
		}
		if d := cmp.Diff(s.want, got); d != "" {
			t.Errorf("%s on %s: annotations (-want +got):\n%s", s.pod.Name, s.node, d)
		}
	}
	// A fourth pod on n1 finds no zone with two free NICs.
	extra := gangPod("w-3", "g")
	c.pods = append(c.pods, extra)
	resp, got := bind(t, w, c, extra, "n1", nil)
	if !resp.Allowed || len(got) != 0 {
		t.Errorf("full node: allowed %v, annotations %v; want allowed, none", resp.Allowed, got)
	}
}

// TestWebhookLeavesOthersAlone: non-RDMA pods, Bindings rdmatopo's
// scheduler already annotated, other subresources and unknown pods pass
// unchanged.
func TestWebhookLeavesOthersAlone(t *testing.T) {
	n, cnr := providerNode("n1", "p", "a", "b")
	c := &fakeCluster{f: topology.Build(testConfig, []*corev1.Node{n}, []*v1alpha1.CustomNodeResource{cnr})}
	cpu := b.MakePod("ns", "cpu").UID("u-cpu").Req(corev1.ResourceCPU, "1").Obj()
	placed := gangPod("placed", "g")
	c.pods = []*corev1.Pod{cpu, placed}
	w := newTestWebhook(c)
	if resp, got := bind(t, w, c, cpu, "n1", nil); !resp.Allowed || len(got) != 0 {
		t.Errorf("CPU pod: %v %v", resp.Allowed, got)
	}
	have := map[string]string{ledger.AnnotationNICs: "0000:d1:00.0", ledger.AnnotationNUMA: "1"}
	if resp, _ := bind(t, w, c, placed, "n1", have); !resp.Allowed || resp.Patch != nil {
		t.Errorf("annotated Binding: allowed %v, patch %s", resp.Allowed, resp.Patch)
	}
	ghost := gangPod("ghost", "g")
	if resp, got := bind(t, w, c, ghost, "n1", nil); !resp.Allowed || len(got) != 0 {
		t.Errorf("unknown pod: %v %v", resp.Allowed, got)
	}
	resp := w.Admit(context.Background(), &admissionv1.AdmissionRequest{Operation: admissionv1.Create, SubResource: "status",
		Resource: metav1.GroupVersionResource{Version: "v1", Resource: "pods"}})
	if !resp.Allowed || resp.Patch != nil {
		t.Errorf("status subresource: %v", resp)
	}
}

// TestWebhookHardTier: a hard s0 gang whose second pod lands on a node
// with no NIC under the first pod's leaf is reported, allowed by default
// and refused when configured.
func TestWebhookHardTier(t *testing.T) {
	n1, c1 := providerNode("n1", "p", "a", "b")
	n2, c2 := providerNode("n2", "p", "c", "d")
	for _, refuse := range []bool{false, true} {
		c := &fakeCluster{f: topology.Build(testConfig, []*corev1.Node{n1, n2}, []*v1alpha1.CustomNodeResource{c1, c2})}
		p0, p1 := gangPod("w-0", "g"), gangPod("w-1", "g")
		for _, p := range []*corev1.Pod{p0, p1} {
			p.Annotations[ledger.AnnotationMode] = "hard"
			p.Annotations[ledger.AnnotationHighestTier] = "s0"
		}
		c.pods = []*corev1.Pod{p0, p1}
		w := newTestWebhook(c)
		w.RefuseHardTier = refuse
		if resp, _ := bind(t, w, c, p0, "n1", nil); !resp.Allowed {
			t.Fatalf("first pod refused")
		}
		resp, _ := bind(t, w, c, p1, "n2", nil)
		if resp.Allowed == refuse {
			t.Errorf("refuse=%v: allowed %v", refuse, resp.Allowed)
		}
		if refuse && !strings.Contains(resp.Result.Message, "beyond its hard highest tier s0") {
			t.Errorf("message %q", resp.Result.Message)
		}
		if got := testutilValue(w.Metrics.HardTierBroken); got != 1 {
			t.Errorf("refuse=%v: hard tier broken counted %v, want 1", refuse, got)
		}
	}
}

// TestWebhookFirstPodLeavesRoomForItsGang: the first pod of a gang of three
// is bound to n2, whose zones hang off leaves c and a; leaf a is the one
// leaf every node reaches, so the pod takes zone 1 (leaf a), not the
// best-fit leaf c, and its gang-mates on n1 and n3 join it under a.
func TestWebhookFirstPodLeavesRoomForItsGang(t *testing.T) {
	n1, c1 := providerNode("n1", "p", "a", "b")
	n2, c2 := providerNode("n2", "p", "c", "a")
	n3, c3 := providerNode("n3", "p", "a", "d")
	c := &fakeCluster{f: topology.Build(testConfig, []*corev1.Node{n1, n2, n3}, []*v1alpha1.CustomNodeResource{c1, c2, c3})}
	p0, p1, p2 := gangPod("w-0", "g"), gangPod("w-1", "g"), gangPod("w-2", "g")
	c.pods = []*corev1.Pod{p0, p1, p2}
	w := newTestWebhook(c)
	for _, s := range []struct {
		pod        *corev1.Pod
		node, numa string
	}{{p0, "n2", "1"}, {p1, "n1", "0"}, {p2, "n3", "0"}} {
		_, got := bind(t, w, c, s.pod, s.node, nil)
		if got[ledger.AnnotationNUMA] != s.numa || got[ledger.AnnotationS0] != "a" {
			t.Errorf("%s on %s: %v; want NUMA %s under leaf a", s.pod.Name, s.node, got, s.numa)
		}
	}
}

// TestWebhookBindOrders: whichever order the three nodes of
// TestWebhookFirstPodLeavesRoomForItsGang are bound in, the gang ends under
// leaf a.
func TestWebhookBindOrders(t *testing.T) {
	numa := map[string]string{"n1": "0", "n2": "1", "n3": "0"}
	for _, order := range [][]string{{"n1", "n2", "n3"}, {"n1", "n3", "n2"}, {"n2", "n1", "n3"}, {"n2", "n3", "n1"}, {"n3", "n1", "n2"}, {"n3", "n2", "n1"}} {
		n1, c1 := providerNode("n1", "p", "a", "b")
		n2, c2 := providerNode("n2", "p", "c", "a")
		n3, c3 := providerNode("n3", "p", "a", "d")
		c := &fakeCluster{f: topology.Build(testConfig, []*corev1.Node{n1, n2, n3}, []*v1alpha1.CustomNodeResource{c1, c2, c3})}
		pods := []*corev1.Pod{gangPod("worker-0", "g"), gangPod("worker-1", "g"), gangPod("worker-2", "g")}
		c.pods = pods
		w := newTestWebhook(c)
		for i, node := range order {
			_, got := bind(t, w, c, pods[i], node, nil)
			if got[ledger.AnnotationNUMA] != numa[node] || got[ledger.AnnotationS0] != "a" {
				t.Errorf("order %v: %s on %s: %v; want NUMA %s under leaf a", order, pods[i].Name, node, got, numa[node])
			}
		}
	}
}

// TestWebhookRefuseNoFit: with RefuseNoFit, a bind to a node whose zones
// are all taken is refused (naming the node), and counted; a bind to a
// node without RDMA topology the companion knows is still allowed.
func TestWebhookRefuseNoFit(t *testing.T) {
	n1, c1 := providerNode("n1", "p", "a", "b")
	c := &fakeCluster{f: topology.Build(testConfig, []*corev1.Node{n1}, []*v1alpha1.CustomNodeResource{c1})}
	p0, p1, p2, p3 := gangPod("w-0", "g"), gangPod("w-1", "g"), gangPod("w-2", "g"), gangPod("w-3", "g")
	c.pods = []*corev1.Pod{p0, p1, p2, p3}
	w := newTestWebhook(c)
	w.RefuseNoFit = true
	for _, p := range []*corev1.Pod{p0, p1} {
		if resp, got := bind(t, w, c, p, "n1", nil); !resp.Allowed || got[ledger.AnnotationNICs] == "" {
			t.Fatalf("%s: allowed %v, annotations %v", p.Name, resp.Allowed, got)
		}
	}
	resp, _ := bind(t, w, c, p2, "n1", nil)
	if resp.Allowed || resp.Result == nil || !strings.Contains(resp.Result.Message, "no NUMA zone of node n1 holds") {
		t.Errorf("full node: allowed %v, result %v; want refused", resp.Allowed, resp.Result)
	}
	if resp, got := bind(t, w, c, p3, "unknown", nil); !resp.Allowed || len(got) != 0 {
		t.Errorf("node without known topology: allowed %v, annotations %v; want allowed, none", resp.Allowed, got)
	}
	if n := testutilValue(w.Metrics.Binds.WithLabelValues(ResultRefused)); n != 1 {
		t.Errorf("refused %v, want 1", n)
	}
	if n := testutilValue(w.Metrics.Binds.WithLabelValues(ResultNoFit)); n != 1 {
		t.Errorf("nofit %v, want 1 (the unknown node)", n)
	}
}
