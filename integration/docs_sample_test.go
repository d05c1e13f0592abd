package integration

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"text/template"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/restmapper"

	"github.com/rdmatopo/rdmatopo/internal/fabricview"
	"github.com/rdmatopo/rdmatopo/internal/testing/harness"
)

// sampleSteps returns the shell lines of the docs' "Loading the sample
// cluster into an API server" block.
func sampleSteps(t *testing.T, root string) []string {
	t.Helper()
	f, err := os.Open(filepath.Join(root, "docs", "operations.md"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var lines []string
	in, block := false, false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		l := sc.Text()
		switch {
		case strings.HasPrefix(l, "### Loading the sample cluster"):
			in = true
		case in && strings.HasPrefix(l, "```sh"):
			block = true
		case in && block && strings.HasPrefix(l, "```"):
			return lines
		case in && block:
			lines = append(lines, l)
		}
	}
	t.Fatal("docs/operations.md: no sh block under \"Loading the sample cluster\"")
	return nil
}

// TestDocsSampleCluster follows docs/operations.md's steps for loading the
// sample cluster, in their order and with their files, on the integration
// API server: kubectl apply becomes a create of each object, the go
// template and sed run as written, kubectl replace --subresource=status
// an UpdateStatus of each object. It then checks what the docs promise:
// 16 nodes, 8 S0 leaves, none topology-unknown, the running pods' NICs held
// and, for the scheduler, confirmed by the KCNRs.
func TestDocsSampleCluster(t *testing.T) {
	e := requireEnv(t)
	ctx := context.Background()
	steps := sampleSteps(t, e.RepoRoot)
	want := []string{
		"kubectl apply -f examples/cluster-namespace.yaml",
		"kubectl apply -f examples/cluster.yaml",
		"uids=$(kubectl -n research get pods -o go-template=",
		`sed "$uids" examples/cluster.yaml | kubectl replace --subresource=status -f -`,
		"kubectl rdmatopo topology",
	}
	if len(steps) != len(want) {
		t.Fatalf("docs: %d steps, the test follows %d:\n%s", len(steps), len(want), strings.Join(steps, "\n"))
	}
	for i, w := range want {
		if !strings.HasPrefix(steps[i], w) {
			t.Fatalf("docs step %d is %q, the test follows %q", i+1, steps[i], w)
		}
	}
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(e.Kube.Discovery()))
	var created []*unstructured.Unstructured
	t.Cleanup(func() {
		for i := len(created) - 1; i >= 0; i-- {
			o := created[i]
			m, err := mapper.RESTMapping(o.GroupVersionKind().GroupKind(), o.GroupVersionKind().Version)
			if err != nil {
				continue
			}
			_ = e.Dynamic.Resource(m.Resource).Namespace(o.GetNamespace()).Delete(context.Background(), o.GetName(), metav1.DeleteOptions{})
		}
	})
	apply := func(file string) {
		objs, err := harness.ReadManifests(filepath.Join(e.RepoRoot, file))
		if err != nil {
			t.Fatal(err)
		}
		if err := e.create(ctx, objs); err != nil {
			t.Fatalf("kubectl apply -f %s: %v", file, err)
		}
		created = append(created, objs...)
	}
	apply("examples/cluster-namespace.yaml")
	apply("examples/cluster.yaml")

	// uids=$(kubectl -n research get pods -o go-template='...')
	tmplText := strings.TrimSuffix(strings.SplitN(steps[2], "go-template='", 2)[1], "')")
	tmpl, err := template.New("uids").Parse(tmplText)
	if err != nil {
		t.Fatalf("docs go-template: %v", err)
	}
	pods, err := e.Dynamic.Resource(corev1.SchemeGroupVersion.WithResource("pods")).Namespace("research").List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var script bytes.Buffer
	if err := tmpl.Execute(&script, pods.UnstructuredContent()); err != nil {
		t.Fatalf("docs go-template: %v", err)
	}
	// sed "$uids" examples/cluster.yaml | kubectl replace --subresource=status -f -
	out, err := exec.CommandContext(ctx, "sed", script.String(), filepath.Join(e.RepoRoot, "examples", "cluster.yaml")).Output()
	if err != nil {
		t.Fatalf("sed: %v", err)
	}
	objs, err := harness.DecodeManifests("sed output", out)
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range objs {
		m, err := mapper.RESTMapping(o.GroupVersionKind().GroupKind(), o.GroupVersionKind().Version)
		if err != nil {
			t.Fatal(err)
		}
		res := e.Dynamic.Resource(m.Resource)
		ri := res.Namespace(o.GetNamespace())
		if m.Scope.Name() != meta.RESTScopeNameNamespace {
			ri = res
		}
		cur, err := ri.Get(ctx, o.GetName(), metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		o.SetResourceVersion(cur.GetResourceVersion())
		if _, err := ri.UpdateStatus(ctx, o, metav1.UpdateOptions{}); err != nil {
			t.Fatalf("kubectl replace --subresource=status: %s %s: %v", o.GetKind(), o.GetName(), err)
		}
	}

	// kubectl rdmatopo topology: 16 nodes, 8 S0 leaves, 0 topology-unknown
	// nodes; the six running pods hold 12 NICs.
	var v fabricview.View
	kubectlJSON(t, e, &v, "topology")
	if v.Nodes != 16 || v.S0Leaves != 8 || v.UnknownNodes != 0 || v.NICs != 64 || v.FreeNICs != 52 {
		t.Errorf("topology: %d nodes, %d S0 leaves, %d topology-unknown, %d of %d NICs free; the docs say 16, 8, 0 (and 52 of 64 free)",
			v.Nodes, v.S0Leaves, v.UnknownNodes, v.FreeNICs, v.NICs)
	}
	// The scheduler holds the running pods' NICs, each confirmed by its KCNR.
	eventually(t, placeTimeout, func() (bool, string) {
		s, err := (&replica{proc: e.scheduler, metrics: e.schedulerMetrics}).scrape(ctx)
		if err != nil {
			return false, err.Error()
		}
		a, _ := value(s, "rdmatopo_free_nics", map[string]string{"s1": "minipod-a"})
		b, _ := value(s, "rdmatopo_free_nics", map[string]string{"s1": "minipod-b"})
		unconfirmed, _ := value(s, "rdmatopo_nics_reserved_unconfirmed", map[string]string{})
		msg := fmt.Sprintf("scheduler: free NICs minipod-a %v minipod-b %v, unconfirmed %v", a, b, unconfirmed)
		return a+b == 52 && unconfirmed == 0, msg
	})
}
