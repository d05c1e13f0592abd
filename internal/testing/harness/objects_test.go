package harness

import (
	"context"
	"encoding/base64"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/tools/clientcmd"
)

func writeFile(t *testing.T, dir, name, content string) string {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// checkObjects fails the test unless err contains wantErr (when set) or
// objs are want, as kind/name.
func checkObjects(t *testing.T, objs []*unstructured.Unstructured, err error, want []string, wantErr string) {
	t.Helper()
	if wantErr != "" {
		if err == nil || !strings.Contains(err.Error(), wantErr) {
			t.Fatalf("error %v, want %q", err, wantErr)
		}
		return
	}
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, o := range objs {
		got = append(got, o.GetKind()+"/"+o.GetName())
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("objects (-want +got):\n%s", diff)
	}
}

func TestDecodeManifests(t *testing.T) {
	cases := []struct {
		name    string
		in      string
		want    []string // kind/name
		wantErr string
	}{
		{name: "documents, empty ones skipped", in: "kind: A\nmetadata: {name: a}\n---\n---\nkind: B\nmetadata: {name: b}\n", want: []string{"A/a", "B/b"}},
		{name: "empty", in: "", want: nil},
		{name: "object without kind", in: "metadata: {name: a}\n", wantErr: "f.yaml: object without kind"},
		{name: "not YAML", in: "kind: [", wantErr: "f.yaml:"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			objs, err := DecodeManifests("f.yaml", []byte(tc.in))
			checkObjects(t, objs, err, tc.want, tc.wantErr)
		})
	}
}

func TestTokenFileAndKubeconfig(t *testing.T) {
	users := []User{
		{Name: "admin", UID: "u1", Groups: []string{"system:masters"}, Token: "t1"},
		{Name: "system:serviceaccount:ns:sa", UID: "u2", Groups: []string{"system:serviceaccounts", "system:serviceaccounts:ns"}, Token: "t2"},
		{Name: "plain", UID: "u3", Token: "t3"},
	}
	want := "t1,admin,u1,\"system:masters\"\n" +
		"t2,system:serviceaccount:ns:sa,u2,\"system:serviceaccounts,system:serviceaccounts:ns\"\n" +
		"t3,plain,u3\n"
	if got := tokenFile(users); got != want {
		t.Errorf("token file:\n%s\nwant:\n%s", got, want)
	}
	a := &APIServer{URL: "https://127.0.0.1:6443", certDir: t.TempDir()}
	path, err := a.Kubeconfig("admin", users[0])
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Host != a.URL || cfg.BearerToken != "t1" || !cfg.Insecure {
		t.Errorf("kubeconfig gives host %q token %q insecure %v", cfg.Host, cfg.BearerToken, cfg.Insecure)
	}
	if a, b := RandomToken(), RandomToken(); a == b || len(a) != 32 {
		t.Errorf("tokens %q and %q", a, b)
	}
}

func TestStartAPIServerWithoutUsers(t *testing.T) {
	g := &Group{LogDir: t.TempDir()}
	if _, err := g.StartAPIServer(context.Background(), APIServerSpec{Binary: "/bin/true", CertDir: t.TempDir()}); err == nil {
		t.Fatal("started an API server nobody can read /readyz of")
	}
}

func TestSchedulerRBAC(t *testing.T) {
	installer := `kind: ClusterRole
metadata: {name: volcano-scheduler}
---
kind: ClusterRoleBinding
metadata: {name: volcano-scheduler-role}
---
kind: ClusterRole
metadata: {name: volcano-controllers}
`
	ours := "kind: ClusterRole\nmetadata: {name: rdmatopo}\n"
	cases := []struct {
		name      string
		installer string
		want      []string
		wantErr   string
	}{
		{name: "stock role and binding, then ours", installer: installer,
			want: []string{"ClusterRole/volcano-scheduler", "ClusterRoleBinding/volcano-scheduler-role", "ClusterRole/rdmatopo"}},
		{name: "binding missing", installer: "kind: ClusterRole\nmetadata: {name: volcano-scheduler}\n",
			wantErr: "missing map[ClusterRoleBinding/volcano-scheduler-role:true]"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			volcano, repo := t.TempDir(), t.TempDir()
			writeFile(t, volcano, "installer/volcano-development.yaml", tc.installer)
			writeFile(t, repo, "config/rbac/rbac.yaml", ours)
			objs, err := SchedulerRBAC(volcano, repo)
			checkObjects(t, objs, err, tc.want, tc.wantErr)
		})
	}
}

func TestVolcanoCRDFiles(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "config/crd/volcano/bases/batch.yaml", "")
	if _, err := VolcanoCRDFiles(dir); err == nil || !strings.Contains(err.Error(), "jobflow") {
		t.Fatalf("without JobFlow's CRDs: %v", err)
	}
	writeFile(t, dir, "config/crd/jobflow/bases/flow.yaml", "")
	files, err := VolcanoCRDFiles(dir)
	if err != nil || len(files) != 2 {
		t.Fatalf("files %v, %v", files, err)
	}
}

func crd(name string, established bool) *unstructured.Unstructured {
	o := &unstructured.Unstructured{Object: map[string]interface{}{
		"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
		"metadata": map[string]interface{}{"name": name},
	}}
	if established {
		_ = unstructured.SetNestedSlice(o.Object, []interface{}{
			map[string]interface{}{"type": "NamesAccepted", "status": "True"},
			map[string]interface{}{"type": "Established", "status": "True"},
		}, "status", "conditions")
	}
	return o
}

func fakeDynamic(objs ...runtime.Object) *dynamicfake.FakeDynamicClient {
	return dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{
		CRDResource:               "CustomResourceDefinitionList",
		ValidatingWebhookResource: "ValidatingWebhookConfigurationList",
		MutatingWebhookResource:   "MutatingWebhookConfigurationList",
	}, objs...)
}

func TestInstallCRDs(t *testing.T) {
	dir := t.TempDir()
	crdFile := writeFile(t, dir, "crds.yaml", "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata: {name: jobs.batch.volcano.sh}\n")
	notCRD := writeFile(t, dir, "svc.yaml", "apiVersion: v1\nkind: Service\nmetadata: {name: webhook}\n")
	ctx := context.Background()
	t.Run("established", func(t *testing.T) {
		dyn := fakeDynamic(crd("jobs.batch.volcano.sh", true), crd("hypernodes.topology.volcano.sh", true))
		if err := InstallCRDs(ctx, dyn, []string{crdFile}, []*unstructured.Unstructured{crd("hypernodes.topology.volcano.sh", false)}, time.Second); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("never established", func(t *testing.T) {
		err := InstallCRDs(ctx, fakeDynamic(), []string{crdFile}, nil, 300*time.Millisecond)
		if err == nil || !strings.Contains(err.Error(), "jobs.batch.volcano.sh not established") {
			t.Fatalf("error %v", err)
		}
	})
	t.Run("not a CRD", func(t *testing.T) {
		err := InstallCRDs(ctx, fakeDynamic(), []string{notCRD}, nil, time.Second)
		if err == nil || !strings.Contains(err.Error(), "svc.yaml: Service webhook is not a CustomResourceDefinition") {
			t.Fatalf("error %v", err)
		}
	})
}

const webhookManifest = `apiVersion: admissionregistration.k8s.io/v1
kind: MutatingWebhookConfiguration
metadata: {name: mutating-webhook-configuration}
webhooks:
- name: mpod.kb.io
  clientConfig: {service: {name: webhook-service, namespace: system, path: /mutate--v1-pod}}
  rules: [{apiGroups: [""], resources: [pods]}]
- name: mjob.kb.io
  clientConfig: {service: {name: webhook-service, namespace: system, path: /mutate-batch-v1-job}}
  rules: [{apiGroups: [batch], resources: [jobs]}]
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingWebhookConfiguration
metadata: {name: validating-webhook-configuration}
webhooks:
- name: vjob.kb.io
  clientConfig: {service: {name: webhook-service, namespace: system, path: /validate-batch-v1-job}}
  rules: [{apiGroups: [batch], resources: [jobs]}]
`

func TestInstallWebhooks(t *testing.T) {
	ca := []byte("-----BEGIN CERTIFICATE-----\nCA\n-----END CERTIFICATE-----\n")
	podsOnly := func(hook map[string]interface{}) (bool, error) {
		res, _, _ := unstructured.NestedSlice(hook, "rules")
		r, _ := res[0].(map[string]interface{})
		rs, _, _ := unstructured.NestedStringSlice(r, "resources")
		if rs[0] == "pods" {
			hook["timeoutSeconds"] = int64(5)
			return true, nil
		}
		return false, nil
	}
	cases := []struct {
		name     string
		manifest string
		keep     func(map[string]interface{}) (bool, error)
		want     map[string][]string // configuration -> webhook URLs
		wantErr  string
	}{
		{
			name: "every webhook calls the local server", manifest: webhookManifest,
			want: map[string][]string{
				"mutatingwebhookconfigurations/x-mutating-webhook-configuration":     {"https://127.0.0.1:9443/mutate--v1-pod", "https://127.0.0.1:9443/mutate-batch-v1-job"},
				"validatingwebhookconfigurations/x-validating-webhook-configuration": {"https://127.0.0.1:9443/validate-batch-v1-job"},
			},
		},
		{
			name: "kept webhooks only; a configuration left empty is not created", manifest: webhookManifest, keep: podsOnly,
			want: map[string][]string{
				"mutatingwebhookconfigurations/x-mutating-webhook-configuration": {"https://127.0.0.1:9443/mutate--v1-pod"},
			},
		},
		{
			name: "keep fails", manifest: webhookManifest,
			keep:    func(map[string]interface{}) (bool, error) { return false, os.ErrInvalid },
			wantErr: "hooks.yaml: MutatingWebhookConfiguration mutating-webhook-configuration webhook 0: invalid argument",
		},
		{
			name:     "URL instead of a service",
			manifest: "kind: ValidatingWebhookConfiguration\nmetadata: {name: v}\nwebhooks:\n- name: a\n  clientConfig: {url: https://example.com/}\n",
			wantErr:  "hooks.yaml: ValidatingWebhookConfiguration v webhook 0 has no clientConfig.service.path",
		},
		{
			name:     "no webhooks",
			manifest: "kind: ValidatingWebhookConfiguration\nmetadata: {name: v}\n",
			wantErr:  "ValidatingWebhookConfiguration v has no webhooks",
		},
		{
			name:     "another kind",
			manifest: "apiVersion: v1\nkind: Service\nmetadata: {name: webhook-service}\n",
			wantErr:  "hooks.yaml: unexpected Service webhook-service",
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			objs, err := DecodeManifests("hooks.yaml", []byte(tc.manifest))
			if err != nil {
				t.Fatal(err)
			}
			dyn := fakeDynamic()
			err = InstallWebhooks(context.Background(), dyn, "hooks.yaml", objs, Webhooks{Prefix: "x-", Port: 9443, CA: ca, Keep: tc.keep})
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got := map[string][]string{}
			for _, gvr := range []schema.GroupVersionResource{MutatingWebhookResource, ValidatingWebhookResource} {
				list, err := dyn.Resource(gvr).List(context.Background(), metav1.ListOptions{})
				if err != nil {
					t.Fatal(err)
				}
				for _, o := range list.Items {
					hooks, _, _ := unstructured.NestedSlice(o.Object, "webhooks")
					for _, h := range hooks {
						hook := h.(map[string]interface{})
						url, _, _ := unstructured.NestedString(hook, "clientConfig", "url")
						bundle, _, _ := unstructured.NestedString(hook, "clientConfig", "caBundle")
						if b, err := base64.StdEncoding.DecodeString(bundle); err != nil || string(b) != string(ca) {
							t.Errorf("%s: caBundle %q", o.GetName(), bundle)
						}
						if _, svc, _ := unstructured.NestedMap(hook, "clientConfig", "service"); svc {
							t.Errorf("%s still names a service", o.GetName())
						}
						if tc.keep != nil {
							if ts, _, _ := unstructured.NestedInt64(hook, "timeoutSeconds"); ts != 5 {
								t.Errorf("%s: Keep's edit lost", o.GetName())
							}
						}
						got[gvr.Resource+"/"+o.GetName()] = append(got[gvr.Resource+"/"+o.GetName()], url)
					}
				}
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("webhooks (-want +got):\n%s", diff)
			}
		})
	}
}
