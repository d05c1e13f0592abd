package installcheck

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	jsonpatch "github.com/evanphx/json-patch"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"
)

// root is the repository root.
var root = filepath.Join("..", "..", "..")

// volcanoDir is the Volcano v1.10.0 module in the module cache.
func volcanoDir(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "volcano.sh/volcano").Output()
	if err != nil {
		t.Fatalf("go list -m volcano.sh/volcano: %v", err)
	}
	return strings.TrimSpace(string(out))
}

// stockDeployment reads the volcano-scheduler Deployment of Volcano's
// v1.10.0 installer (what the overlay's remote resource serves).
func stockDeployment(t *testing.T) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(volcanoDir(t), "installer", "volcano-development.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, doc := range bytes.Split(data, []byte("\n---")) {
		var d appsv1.Deployment
		if yaml.Unmarshal(doc, &d) == nil && d.Kind == "Deployment" && d.Name == "volcano-scheduler" {
			js, err := yaml.YAMLToJSON(doc)
			if err != nil {
				t.Fatal(err)
			}
			return js
		}
	}
	t.Fatal("no volcano-scheduler Deployment in the installer")
	return nil
}

// TestKustomizePatch: the overlay's patch applies to the stock Deployment
// and yields leader election, two replicas and memory resources.
func TestKustomizePatch(t *testing.T) {
	patchYAML, err := os.ReadFile(filepath.Join(root, "config", "kustomize", "scheduler-deployment.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	patchJSON, err := yaml.YAMLToJSON(patchYAML)
	if err != nil {
		t.Fatal(err)
	}
	patch, err := jsonpatch.DecodePatch(patchJSON)
	if err != nil {
		t.Fatal(err)
	}
	stock := stockDeployment(t)
	var before appsv1.Deployment
	if err := yaml.Unmarshal(stock, &before); err != nil {
		t.Fatal(err)
	}
	if got := before.Spec.Template.Spec.Containers[0].Args[4]; got != "--leader-elect=false" {
		t.Fatalf("stock args[4] = %q: the patch replaces --leader-elect=false there", got)
	}
	out, err := patch.Apply(stock)
	if err != nil {
		t.Fatalf("apply the patch: %v", err)
	}
	var d appsv1.Deployment
	if err := yaml.Unmarshal(out, &d); err != nil {
		t.Fatal(err)
	}
	c := d.Spec.Template.Spec.Containers[0]
	args := strings.Join(c.Args, " ")
	cases := []struct {
		what string
		ok   bool
	}{
		{"--leader-elect=true", strings.Contains(args, "--leader-elect=true") && !strings.Contains(args, "--leader-elect=false")},
		{"lease namespace", strings.Contains(args, "--leader-elect-resource-namespace=volcano-system")},
		{"conf flag kept", strings.Contains(args, "--scheduler-conf=/volcano.scheduler/volcano-scheduler.conf")},
		{"metrics kept", strings.Contains(args, "--enable-metrics=true")},
		{"metrics on the pod IP", strings.Contains(args, "--listen-address=$(POD_IP):8080")},
		{"healthz on the pod IP", strings.Contains(args, "--healthz-address=$(POD_IP):11251")},
		{"POD_IP from the pod's status", podIPEnv(c.Env)},
		{"two replicas", d.Spec.Replicas != nil && *d.Spec.Replicas == 2},
		{"Recreate rollouts", d.Spec.Strategy.Type == appsv1.RecreateDeploymentStrategyType && d.Spec.Strategy.RollingUpdate == nil},
		{"memory request", !c.Resources.Requests.Memory().IsZero()},
		{"memory limit", !c.Resources.Limits.Memory().IsZero()},
	}
	for _, tc := range cases {
		if !tc.ok {
			t.Errorf("%s: not so after the patch (args %q, replicas %v, resources %v)", tc.what, args, d.Spec.Replicas, c.Resources)
		}
	}
}

// TestByHandPatch: the patch of the by-hand route applies to the stock
// Deployment as the API server stores it (strategy defaulted to a rolling
// update) and yields leader election and Recreate rollouts, so two
// schedulers never run at once; on a Deployment whose args[4] is not the
// installer's --leader-elect=false it fails as a whole.
func TestByHandPatch(t *testing.T) {
	patchYAML, err := os.ReadFile(filepath.Join(root, "config", "by-hand", "scheduler-deployment-patch.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	patchJSON, err := yaml.YAMLToJSON(patchYAML)
	if err != nil {
		t.Fatal(err)
	}
	patch, err := jsonpatch.DecodePatch(patchJSON)
	if err != nil {
		t.Fatal(err)
	}
	var stock appsv1.Deployment
	if err := yaml.Unmarshal(stockDeployment(t), &stock); err != nil {
		t.Fatal(err)
	}
	// What the API server defaults on create.
	stock.Spec.Strategy = appsv1.DeploymentStrategy{Type: appsv1.RollingUpdateDeploymentStrategyType, RollingUpdate: &appsv1.RollingUpdateDeployment{}}
	stored, err := json.Marshal(&stock)
	if err != nil {
		t.Fatal(err)
	}
	out, err := patch.Apply(stored)
	if err != nil {
		t.Fatalf("apply the patch: %v", err)
	}
	var d appsv1.Deployment
	if err := json.Unmarshal(out, &d); err != nil {
		t.Fatal(err)
	}
	c := d.Spec.Template.Spec.Containers[0]
	args := strings.Join(c.Args, " ")
	cases := []struct {
		what string
		ok   bool
	}{
		{"--leader-elect=true", strings.Contains(args, "--leader-elect=true") && !strings.Contains(args, "--leader-elect=false")},
		{"lease namespace", strings.Contains(args, "--leader-elect-resource-namespace=volcano-system")},
		{"conf flag kept", strings.Contains(args, "--scheduler-conf=/volcano.scheduler/volcano-scheduler.conf")},
		{"image untouched (set by the next command)", c.Image == stock.Spec.Template.Spec.Containers[0].Image},
		{"two replicas", d.Spec.Replicas != nil && *d.Spec.Replicas == 2},
		{"Recreate rollouts", d.Spec.Strategy.Type == appsv1.RecreateDeploymentStrategyType && d.Spec.Strategy.RollingUpdate == nil},
		{"memory limit", !c.Resources.Limits.Memory().IsZero()},
	}
	for _, tc := range cases {
		if !tc.ok {
			t.Errorf("%s: not so after the patch (args %q, replicas %v, strategy %+v)", tc.what, args, d.Spec.Replicas, d.Spec.Strategy)
		}
	}
	// Already patched (or not the stock Deployment): the test operation
	// refuses it rather than replacing another argument.
	if _, err := patch.Apply(out); err == nil {
		t.Error("the patch applied twice; want the test of args[4] to refuse a Deployment already running with leader election")
	}
}

// podIPEnv reports whether env sets POD_IP from status.podIP, as the
// listen addresses' $(POD_IP) needs.
func podIPEnv(env []corev1.EnvVar) bool {
	for _, e := range env {
		if e.Name == "POD_IP" && e.ValueFrom != nil && e.ValueFrom.FieldRef != nil && e.ValueFrom.FieldRef.FieldPath == "status.podIP" {
			return true
		}
	}
	return false
}

// TestHelmValues: every value the values file sets exists in the chart's
// values.yaml and is used by the scheduler template, the conf override is
// the project's conf, and the ServiceAccount the chart names for release
// `volcano` is the one config/rbac binds.
func TestHelmValues(t *testing.T) {
	chart := filepath.Join(volcanoDir(t), "installer", "helm", "chart", "volcano")
	read := func(path string) []byte {
		t.Helper()
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		return data
	}
	var ours, defaults map[string]map[string]any
	if err := yaml.Unmarshal(read(filepath.Join(root, "config", "helm", "values-rdmatopo.yaml")), &ours); err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(read(filepath.Join(chart, "values.yaml")), &defaults); err != nil {
		t.Fatal(err)
	}
	tmpl := string(read(filepath.Join(chart, "templates", "scheduler.yaml")))
	for section, values := range ours {
		for key := range values {
			if _, ok := defaults[section][key]; !ok {
				t.Errorf("%s.%s is not a value of Volcano's chart", section, key)
			}
			if !strings.Contains(tmpl, ".Values."+section+"."+key) {
				t.Errorf("%s.%s is not used by the chart's scheduler template", section, key)
			}
		}
	}
	conf := string(read(filepath.Join(root, "config", "volcano-scheduler.conf")))
	if got, _ := ours["custom"]["scheduler_config_override"].(string); got != conf {
		t.Errorf("custom.scheduler_config_override differs from config/volcano-scheduler.conf:\n%s", got)
	}
	if ours["custom"]["leader_elect_enable"] != true {
		t.Error("custom.leader_elect_enable is not true")
	}
	if !strings.Contains(tmpl, "serviceAccount: {{ .Release.Name }}-scheduler") {
		t.Error("the chart no longer names the scheduler's ServiceAccount <release>-scheduler")
	}
	if rbac := string(read(filepath.Join(root, "config", "rbac", "rbac.yaml"))); !strings.Contains(rbac, "name: volcano-scheduler\n    namespace: volcano-system") {
		t.Error("config/rbac no longer binds volcano-system/volcano-scheduler (release volcano's ServiceAccount)")
	}
}
