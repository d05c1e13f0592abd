package main

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/kubewharf/katalyst-api/pkg/apis/node/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/rdmatopo/rdmatopo/core/placement"
	"github.com/rdmatopo/rdmatopo/internal/devtools/bench/trace"
	"github.com/rdmatopo/rdmatopo/internal/testing/builders"
	"github.com/rdmatopo/rdmatopo/internal/workload"
)

func TestLeafPairOf(t *testing.T) {
	_, cnrs := builders.ClusterShape{Nodes: 40, ZonesPerLeaf: 16, LeavesPerS1: 8}.Generate()
	byName := map[string]*v1alpha1.CustomNodeResource{}
	for _, c := range cnrs {
		byName[c.Name] = c
	}
	pair := func(i int) string { return leafPairOf(byName[builders.NodeName(i)]) }
	// Nodes of one group of 16 share their leaves; the next group does not.
	if pair(0) == "" || pair(0) != pair(15) {
		t.Errorf("nodes 0 and 15 share a leaf pair: %q vs %q", pair(0), pair(15))
	}
	if pair(15) == pair(16) {
		t.Errorf("nodes 15 and 16 hang off different leaves, both %q", pair(15))
	}
	if len(pair(0)) > 63 {
		t.Errorf("label value %q longer than 63", pair(0))
	}
	for _, tc := range []struct {
		name string
		cnr  *v1alpha1.CustomNodeResource
		want string
	}{
		{name: "no NICs", cnr: builders.MakeCNR("n").Zone(0, 4, 64000).Obj(), want: ""},
		{name: "nil property", cnr: builders.MakeCNR("n").NilProperty().Obj(), want: ""},
		{name: "unrelated property", cnr: builders.MakeCNR("n").Property("other", "x").Obj(), want: ""},
		{
			name: "order and repeats do not matter",
			cnr:  builders.MakeCNR("n").Zone(0, 4, 64000).Zone(1, 4, 64000).NIC("0000:1a:00.0", 1, "b").NIC("0000:1b:00.0", 0, "a").NIC("0000:1c:00.0", 0, "a").Obj(),
			want: leafPairOf(builders.MakeCNR("m").Zone(0, 4, 64000).Zone(1, 4, 64000).NIC("0000:2a:00.0", 0, "a").NIC("0000:2b:00.0", 1, "b").Obj()),
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := leafPairOf(tc.cnr); got != tc.want {
				t.Errorf("leafPairOf = %q, want %q", got, tc.want)
			}
		})
	}
	one := leafPairOf(builders.MakeCNR("n").Zone(0, 4, 64000).NIC("0000:1a:00.0", 0, "a").Obj())
	two := leafPairOf(builders.MakeCNR("n").Zone(0, 4, 64000).NIC("0000:1a:00.0", 0, "a").NIC("0000:1b:00.0", 0, "b").Obj())
	if one == "" || one == two {
		t.Errorf("one leaf %q, two leaves %q: want distinct, non-empty", one, two)
	}
}

func TestKueueCluster(t *testing.T) {
	c := trace.NewCluster(32, 1)
	out, err := kueueCluster(c)
	if err != nil {
		t.Fatal(err)
	}
	for i, n := range out.Nodes {
		if n.Labels[corev1.LabelHostname] != n.Name {
			t.Errorf("%s: hostname label %q", n.Name, n.Labels[corev1.LabelHostname])
		}
		if n.Labels[leafPairLabel] == "" || n.Labels[builders.S1Label] == "" || n.Labels[kueuePoolLabel] != "true" {
			t.Errorf("%s: labels %v lack a topology level or the flavor's label", n.Name, n.Labels)
		}
		if _, ok := c.Nodes[i].Labels[leafPairLabel]; ok {
			t.Errorf("%s: the input node was changed", n.Name)
		}
	}
	// A node without its KCNR is an error naming it.
	broken := *c
	broken.CNRs = c.CNRs[1:]
	if _, err := kueueCluster(&broken); err == nil || !strings.Contains(err.Error(), c.Nodes[0].Name) {
		t.Errorf("missing KCNR: err = %v, want one naming %s", err, c.Nodes[0].Name)
	}
}

func TestKueuePod(t *testing.T) {
	for _, tc := range []struct {
		name      string
		g         trace.GangSpec
		annot     string
		level     string
		gpu, rdma int64
	}{
		{name: "hard S0", g: trace.GangSpec{Name: "a", Kind: trace.KindHalf, Pods: 4, Mode: placement.ModeHard, HighestTier: placement.TierS0},
			annot: kueueRequiredTopoAnnot, level: leafPairLabel, gpu: 4, rdma: 2},
		{name: "hard S1", g: trace.GangSpec{Name: "b", Kind: trace.KindFull, Pods: 8, Mode: placement.ModeHard, HighestTier: placement.TierS1},
			annot: kueueRequiredTopoAnnot, level: builders.S1Label, gpu: 8, rdma: 4},
		{name: "soft", g: trace.GangSpec{Name: "c", Kind: trace.KindHalf, Pods: 16, Mode: placement.ModeSoft, HighestTier: placement.TierS1},
			annot: kueuePreferredTopoAnnot, level: leafPairLabel, gpu: 4, rdma: 2},
		{name: "CPU only", g: trace.GangSpec{Name: "d", Kind: trace.KindCPU, Pods: 2, Mode: placement.ModeHard, HighestTier: placement.TierS1},
			annot: kueueRequiredTopoAnnot, level: builders.S1Label},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := kueuePod(tc.g, 1)
			if p.Labels[kueueGroupNameLabel] != tc.g.Name || p.Labels[kueueQueueLabel] != kueueLQ || p.Labels[gangLabel] != tc.g.Name {
				t.Errorf("labels %v", p.Labels)
			}
			if got := p.Annotations[kueueGroupCountAnnot]; got != itoa(tc.g.Pods) {
				t.Errorf("group count %q, want %d", got, tc.g.Pods)
			}
			if got := p.Annotations[tc.annot]; got != tc.level {
				t.Errorf("%s = %q, want %q (annotations %v)", tc.annot, got, tc.level, p.Annotations)
			}
			other := kueuePreferredTopoAnnot
			if tc.annot == other {
				other = kueueRequiredTopoAnnot
			}
			if _, ok := p.Annotations[other]; ok {
				t.Errorf("both topology annotations set: %v", p.Annotations)
			}
			if p.Spec.SchedulerName != corev1.DefaultSchedulerName {
				t.Errorf("schedulerName %q", p.Spec.SchedulerName)
			}
			req := workload.PodRequests(&p.Spec)
			if g, r := req[gpuResource], req[rdmaResource]; g.Value() != tc.gpu || r.Value() != tc.rdma {
				t.Errorf("requests %v, want %d GPU %d RDMA", req, tc.gpu, tc.rdma)
			}
		})
	}
	if a, b := kueuePod(trace.GangSpec{Name: "a", Kind: trace.KindHalf, Pods: 2}, 0).Name, kueuePod(trace.GangSpec{Name: "a", Kind: trace.KindHalf, Pods: 2}, 1).Name; a == b {
		t.Errorf("pods 0 and 1 share the name %s", a)
	}
}

func itoa(n int) string { return strconv.Itoa(n) }

func TestKueueQuotaAndObjects(t *testing.T) {
	c := trace.NewCluster(16, 1)
	q := kueueQuota(c)
	if got := q[gpuResource].Value(); got != 16*8 {
		t.Errorf("GPU quota %d, want %d", got, 16*8)
	}
	if got := q[rdmaResource].Value(); got != 16*4 {
		t.Errorf("RDMA quota %d, want %d", got, 16*4)
	}
	objs := kueueObjects(c)
	kinds := map[string]bool{}
	for _, o := range objs {
		kinds[o.GetKind()] = true
		if o.GetAPIVersion() != "kueue.x-k8s.io/v1beta2" {
			t.Errorf("%s: apiVersion %s", o.GetKind(), o.GetAPIVersion())
		}
	}
	for _, k := range []string{"Topology", "ResourceFlavor", "ClusterQueue", "LocalQueue"} {
		if !kinds[k] {
			t.Errorf("no %s", k)
		}
	}
	levels := objs[0].Object["spec"].(map[string]interface{})["levels"].([]interface{})
	if len(levels) != 3 || levels[2].(map[string]interface{})["nodeLabel"] != corev1.LabelHostname {
		t.Errorf("levels %v: want S1, leaf pair, hostname last", levels)
	}
}

func TestWebhookTarget(t *testing.T) {
	rule := func(groups, resources []interface{}) map[string]interface{} {
		return map[string]interface{}{"rules": []interface{}{map[string]interface{}{"apiGroups": groups, "resources": resources}}}
	}
	for _, tc := range []struct {
		name    string
		hook    map[string]interface{}
		want    string
		wantErr bool
	}{
		{name: "pods", hook: rule([]interface{}{""}, []interface{}{"pods"}), want: "pods"},
		{name: "kueue kind", hook: rule([]interface{}{"kueue.x-k8s.io"}, []interface{}{"workloads"}), want: "kueue.x-k8s.io"},
		{name: "batch job", hook: rule([]interface{}{"batch"}, []interface{}{"jobs"}), want: "batch"},
		{name: "no rules", hook: map[string]interface{}{}, wantErr: true},
		{name: "two groups", hook: rule([]interface{}{"a", "b"}, []interface{}{"x"}), wantErr: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := webhookTarget(tc.hook)
			if (err != nil) != tc.wantErr || got != tc.want {
				t.Errorf("webhookTarget = %q, %v; want %q, error %v", got, err, tc.want, tc.wantErr)
			}
		})
	}
}

func TestReadAuditUsers(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "audit.jsonl")
	lines := []string{
		`{"auditID":"1","stage":"ResponseComplete","verb":"create","user":{"username":"` + kueueUser + `"},"objectRef":{"resource":"workloads"},"responseStatus":{"code":201}}`,
		`{"auditID":"2","stage":"ResponseComplete","verb":"create","user":{"username":"` + kubeSchedulerUser + `"},"objectRef":{"resource":"pods","subresource":"binding"},"responseStatus":{"code":429}}`,
		`{"auditID":"3","stage":"ResponseComplete","verb":"get","user":{"username":"` + schedulerUser + `"},"objectRef":{"resource":"pods"},"responseStatus":{"code":200}}`,
		`{"auditID":"1","stage":"ResponseComplete","verb":"create","user":{"username":"` + kueueUser + `"},"objectRef":{"resource":"workloads"},"responseStatus":{"code":201}}`,
	}
	if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	a, err := readAudit(path, kueueUser, kubeSchedulerUser)
	if err != nil {
		t.Fatal(err)
	}
	if a.requests != 2 || a.rejected429 != 1 || a.byKind["create pods/binding"] != 1 || a.byKind["create workloads"] != 1 {
		t.Errorf("kueue users: %+v", a)
	}
	a, err = readAudit(path, schedulerUser)
	if err != nil {
		t.Fatal(err)
	}
	if a.requests != 1 || a.rejected429 != 0 {
		t.Errorf("vc-scheduler user: %+v", a)
	}
}

func TestKueueReleaseNames(t *testing.T) {
	binding := &unstructured.Unstructured{Object: map[string]interface{}{
		"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
		"metadata": map[string]interface{}{"name": "manager-secrets-rolebinding", "namespace": "system"},
		"roleRef":  map[string]interface{}{"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "manager-secrets-role"},
		"subjects": []interface{}{map[string]interface{}{"kind": "ServiceAccount", "name": "controller-manager", "namespace": "system"}},
	}}
	if err := kueueReleaseNames(binding); err != nil {
		t.Fatal(err)
	}
	if binding.GetName() != "kueue-manager-secrets-rolebinding" || binding.GetNamespace() != kueueNamespace {
		t.Errorf("binding %s/%s", binding.GetNamespace(), binding.GetName())
	}
	ref, _, _ := unstructured.NestedString(binding.Object, "roleRef", "name")
	subjects, _, _ := unstructured.NestedSlice(binding.Object, "subjects")
	sub := subjects[0].(map[string]interface{})
	if ref != "kueue-manager-secrets-role" || "system:serviceaccount:"+sub["namespace"].(string)+":"+sub["name"].(string) != kueueUser {
		t.Errorf("roleRef %s, subject %v: want Kueue's user %s", ref, sub, kueueUser)
	}
	role := &unstructured.Unstructured{Object: map[string]interface{}{"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
		"metadata": map[string]interface{}{"name": "manager-role"}}}
	if err := kueueReleaseNames(role); err != nil || role.GetName() != "kueue-manager-role" || role.GetNamespace() != "" {
		t.Errorf("ClusterRole: %v, %s/%s", err, role.GetNamespace(), role.GetName())
	}
	user := &unstructured.Unstructured{Object: map[string]interface{}{"kind": "ClusterRoleBinding", "metadata": map[string]interface{}{"name": "b"},
		"subjects": []interface{}{map[string]interface{}{"kind": "User", "name": "alice"}}}}
	if err := kueueReleaseNames(user); err == nil {
		t.Error("a User subject was accepted")
	}
}
