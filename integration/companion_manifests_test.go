package integration

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/rdmatopo/rdmatopo/internal/testing/harness"
)

// companionFlag finds the flags `rdmatopo companion --help` lists.
var companionFlag = regexp.MustCompile(`(?m)^\s+--([a-z0-9-]+)`)

// TestCompanionManifests renders the companion's Helm chart (helm
// template) and kustomize overlay (kubectl kustomize), as docs/companion.md
// installs them, and checks what makes the mode work: a Deployment running
// `rdmatopo companion` with flags the binary accepts, as a ServiceAccount
// the render binds to roles; a MutatingWebhookConfiguration on pods/binding
// CREATE that fails open within 2 s, calling a rendered Service whose
// target port the companion's container serves.
//
// It needs only the helm, kubectl and rdmatopo binaries, not the running
// stack.
func TestCompanionManifests(t *testing.T) {
	root, err := repoRoot()
	if err != nil {
		t.Fatal(err)
	}
	binDir := os.Getenv(binEnv)
	if binDir == "" {
		binDir = filepath.Join(root, "integration", ".bin")
	}
	help, err := exec.Command(filepath.Join(binDir, "rdmatopo"), "companion", "--help").CombinedOutput()
	if err != nil {
		t.Fatalf("rdmatopo companion --help: %v\n%s", err, help)
	}
	flags := map[string]bool{}
	for _, m := range companionFlag.FindAllStringSubmatch(string(help), -1) {
		flags[m[1]] = true
	}
	if !flags["webhook-address"] || !flags["scheduler-conf"] {
		t.Fatalf("rdmatopo companion --help lists no --webhook-address or --scheduler-conf:\n%s", help)
	}

	ctx, cancel := context.WithTimeout(context.Background(), helmRenderTimeout)
	defer cancel()
	render := func(name string, args ...string) []*unstructured.Unstructured {
		t.Helper()
		home := t.TempDir()
		cmd := exec.CommandContext(ctx, filepath.Join(binDir, name), args...)
		cmd.Dir = root
		cmd.Env = append(os.Environ(), "HELM_CONFIG_HOME="+filepath.Join(home, "config"),
			"HELM_CACHE_HOME="+filepath.Join(home, "cache"), "HELM_DATA_HOME="+filepath.Join(home, "data"))
		var stderr strings.Builder
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, stderr.String())
		}
		file := filepath.Join(home, "manifest.yaml")
		if err := os.WriteFile(file, out, 0o644); err != nil {
			t.Fatal(err)
		}
		objs, err := harness.ReadManifests(file)
		if err != nil {
			t.Fatalf("decode the output of %s %s: %v", name, strings.Join(args, " "), err)
		}
		return objs
	}
	for _, tc := range []struct {
		name string
		objs func() []*unstructured.Unstructured
	}{
		{"helm chart", func() []*unstructured.Unstructured {
			return render("helm", "template", "rdmatopo-companion", "config/helm/rdmatopo-companion", "-n", "rdmatopo-system")
		}},
		{"kustomize overlay", func() []*unstructured.Unstructured {
			return render("kubectl", "kustomize", "config/kustomize/companion")
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, problem := range checkCompanionManifests(tc.objs(), flags) {
				t.Error(problem)
			}
		})
	}
}

// checkCompanionManifests returns what is wrong with a render of the
// companion mode.
func checkCompanionManifests(objs []*unstructured.Unstructured, flags map[string]bool) []string {
	var problems []string
	var deploys []*appsv1.Deployment
	var hooks []*admissionregistrationv1.MutatingWebhookConfiguration
	services := map[string]*corev1.Service{}
	bound := map[string]bool{} // namespace/name of ServiceAccounts a binding names
	for _, o := range objs {
		var err error
		switch o.GetKind() {
		case "Deployment":
			d := &appsv1.Deployment{}
			err = fromUnstructured(o, d)
			deploys = append(deploys, d)
		case "MutatingWebhookConfiguration":
			h := &admissionregistrationv1.MutatingWebhookConfiguration{}
			err = fromUnstructured(o, h)
			hooks = append(hooks, h)
		case "Service":
			s := &corev1.Service{}
			err = fromUnstructured(o, s)
			services[s.Namespace+"/"+s.Name] = s
		case "RoleBinding", "ClusterRoleBinding":
			b := &rbacv1.ClusterRoleBinding{}
			err = fromUnstructured(o, b)
			for _, s := range b.Subjects {
				if s.Kind == "ServiceAccount" {
					bound[s.Namespace+"/"+s.Name] = true
				}
			}
		}
		if err != nil {
			problems = append(problems, o.GetKind()+" "+objectKey(o)+": "+err.Error())
		}
	}
	if len(deploys) != 1 {
		return append(problems, "want one Deployment, got "+show(len(deploys)))
	}
	d := deploys[0]
	var c *corev1.Container
	for i := range d.Spec.Template.Spec.Containers {
		cc := &d.Spec.Template.Spec.Containers[i]
		argv := append(append([]string(nil), cc.Command...), cc.Args...)
		if containsCompanion(argv) {
			c = cc
		}
	}
	if c == nil {
		return append(problems, "Deployment "+objectName(d.ObjectMeta)+" runs no `rdmatopo companion` container")
	}
	for _, a := range c.Args {
		name, _, _ := strings.Cut(strings.TrimPrefix(a, "--"), "=")
		if strings.HasPrefix(a, "--") && !flags[name] {
			problems = append(problems, "container "+c.Name+": rdmatopo companion has no flag --"+name)
		}
	}
	if sa := d.Namespace + "/" + d.Spec.Template.Spec.ServiceAccountName; !bound[sa] {
		problems = append(problems, "no RoleBinding or ClusterRoleBinding names the companion's ServiceAccount "+sa)
	}
	if len(hooks) != 1 || len(hooks[0].Webhooks) != 1 {
		return append(problems, "want one MutatingWebhookConfiguration with one webhook")
	}
	w := hooks[0].Webhooks[0]
	binding := false
	for _, r := range w.Rules {
		for _, res := range r.Resources {
			for _, op := range r.Operations {
				binding = binding || res == "pods/binding" && (op == admissionregistrationv1.Create || op == admissionregistrationv1.OperationAll)
			}
		}
	}
	if !binding {
		problems = append(problems, "webhook "+w.Name+" does not match pods/binding CREATE")
	}
	if w.FailurePolicy == nil || *w.FailurePolicy != admissionregistrationv1.Ignore {
		problems = append(problems, "webhook "+w.Name+": failurePolicy is not Ignore (a companion down would block every bind)")
	}
	if w.TimeoutSeconds == nil || *w.TimeoutSeconds > 2 {
		problems = append(problems, "webhook "+w.Name+": timeoutSeconds above 2")
	}
	ref := w.ClientConfig.Service
	if ref == nil {
		return append(problems, "webhook "+w.Name+" calls no Service")
	}
	svc := services[ref.Namespace+"/"+ref.Name]
	if svc == nil {
		return append(problems, "webhook "+w.Name+" calls Service "+ref.Namespace+"/"+ref.Name+", which the render does not hold")
	}
	served := false
	for _, p := range svc.Spec.Ports {
		if ref.Port != nil && p.Port != *ref.Port {
			continue
		}
		for _, cp := range c.Ports {
			served = served || p.TargetPort.StrVal == cp.Name || p.TargetPort.IntVal == cp.ContainerPort
		}
	}
	if !served {
		problems = append(problems, "Service "+svc.Name+": no port the webhook calls reaches a port of the companion's container")
	}
	return problems
}

// containsCompanion reports whether a command line runs `rdmatopo
// companion`.
func containsCompanion(argv []string) bool {
	for i, a := range argv {
		if a == "companion" && i > 0 && strings.HasSuffix(argv[i-1], "rdmatopo") {
			return true
		}
	}
	return false
}
