package integration

import (
	"bufio"
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/rdmatopo/rdmatopo/internal/live"
	"github.com/rdmatopo/rdmatopo/internal/testing/harness"
)

// docShellTimeout bounds one doc block run through bash.
const docShellTimeout = 2 * time.Minute

// docBlock returns the lines of the ```sh block of docs/<file> that holds a
// line starting with marker, as written.
func docBlock(t *testing.T, root, file, marker string) []string {
	t.Helper()
	f, err := os.Open(filepath.Join(root, "docs", file))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var block []string
	in, found := false, false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		l := sc.Text()
		switch {
		case !in && strings.HasPrefix(strings.TrimSpace(l), "```sh"):
			in, block, found = true, nil, false
		case in && strings.HasPrefix(strings.TrimSpace(l), "```"):
			if found {
				return block
			}
			in = false
		case in:
			block = append(block, l)
			if strings.HasPrefix(strings.TrimSpace(l), marker) {
				found = true
			}
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	t.Fatalf("docs/%s: no sh block with a line starting %q", file, marker)
	return nil
}

// docShell runs a doc's lines, literally, as one bash script ("set -euo
// pipefail": the first failing command fails the block) in the repository
// root, as a user would paste them: kubectl is the one built from
// k8s.io/kubernetes v1.30.2 (integration/.bin), first on PATH, talking to
// the test API server as the admin user through KUBECONFIG.
func docShell(t *testing.T, e *Env, lines []string) (stdout, stderr string, err error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), docShellTimeout)
	defer cancel()
	pathDir := t.TempDir()
	if err := os.Symlink(e.binary("kubectl"), filepath.Join(pathDir, "kubectl")); err != nil {
		t.Fatal(err)
	}
	script := "set -euo pipefail\n" + strings.Join(lines, "\n") + "\n"
	cmd := exec.CommandContext(ctx, "bash", "-c", script)
	cmd.Dir = e.RepoRoot
	cmd.Env = append(os.Environ(),
		"PATH="+pathDir+string(os.PathListSeparator)+os.Getenv("PATH"),
		"KUBECONFIG="+e.adminKubeconfig,
		"HOME="+t.TempDir(), // kubectl's discovery cache, not the user's
	)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err = cmd.Run()
	return out.String(), errOut.String(), err
}

// TestDocsByHandInstall runs the by-hand install block of
// docs/operations.md literally, with kubectl, on Volcano v1.10.0's stock
// volcano-scheduler Deployment (from its installer manifest): afterwards
// the Deployment runs the rdmatopo image with leader election, two
// replicas and Recreate rollouts, so no rollout ever runs two schedulers.
// Run again on the patched Deployment, the block fails at the patch's test
// and changes nothing.
func TestDocsByHandInstall(t *testing.T) {
	e := requireEnv(t)
	ctx := context.Background()
	block := docBlock(t, e.RepoRoot, "operations.md", "kubectl -n volcano-system patch deployment volcano-scheduler")

	volcano, err := harness.ModuleDir(ctx, e.RepoRoot, harness.VolcanoModule)
	if err != nil {
		t.Fatal(err)
	}
	objs, err := harness.ReadManifests(filepath.Join(volcano, "installer", "volcano-development.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var stock *appsv1.Deployment
	for _, o := range objs {
		if o.GetKind() == "Deployment" && o.GetName() == "volcano-scheduler" {
			stock = &appsv1.Deployment{}
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, stock); err != nil {
				t.Fatal(err)
			}
		}
	}
	if stock == nil {
		t.Fatal("no volcano-scheduler Deployment in Volcano's installer")
	}
	deployments := e.Kube.AppsV1().Deployments("volcano-system")
	if _, err := deployments.Create(ctx, stock, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create Volcano's stock scheduler Deployment: %v", err)
	}
	t.Cleanup(func() { _ = deployments.Delete(context.Background(), stock.Name, metav1.DeleteOptions{}) })
	cms := e.Kube.CoreV1().ConfigMaps(live.SchedulerConfigMapNamespace)
	if _, err := cms.Get(ctx, live.SchedulerConfigMapName, metav1.GetOptions{}); apierrors.IsNotFound(err) {
		t.Cleanup(func() { _ = cms.Delete(context.Background(), live.SchedulerConfigMapName, metav1.DeleteOptions{}) })
	}

	out, errOut, err := docShell(t, e, block)
	if err != nil {
		t.Fatalf("the docs' by-hand install failed (%v)\n%s\nstdout:\n%s\nstderr:\n%s", err, strings.Join(block, "\n"), out, errOut)
	}
	d, err := deployments.Get(ctx, stock.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	c := d.Spec.Template.Spec.Containers[0]
	args := strings.Join(c.Args, " ")
	checks := []struct {
		what string
		ok   bool
	}{
		{"the rdmatopo image", strings.Contains(c.Image, "rdmatopo")},
		{"--leader-elect=true", strings.Contains(args, "--leader-elect=true") && !strings.Contains(args, "--leader-elect=false")},
		{"two replicas", d.Spec.Replicas != nil && *d.Spec.Replicas == 2},
		{"Recreate rollouts", d.Spec.Strategy.Type == appsv1.RecreateDeploymentStrategyType},
	}
	for _, c := range checks {
		if !c.ok {
			t.Errorf("after the docs' by-hand install: not %s (image %s, args %q, replicas %v, strategy %s)", c.what, d.Spec.Template.Spec.Containers[0].Image, args, d.Spec.Replicas, d.Spec.Strategy.Type)
		}
	}
	cm, err := cms.Get(ctx, live.SchedulerConfigMapName, metav1.GetOptions{})
	if err != nil || !strings.Contains(cm.Data[live.SchedulerConfigMapKey], "topology-allocate") {
		t.Errorf("after the docs' by-hand install the scheduler ConfigMap does not hold rdmatopo's conf (%v)", err)
	}

	// Again: the patch's test operation refuses a Deployment already
	// patched (kubectl reports the request invalid) and changes nothing.
	if _, errOut, err := docShell(t, e, block); err == nil || !strings.Contains(errOut, "invalid") {
		t.Errorf("the by-hand block ran twice without the patch refusing (err %v): %s", err, errOut)
	}
	again, err := deployments.Get(ctx, stock.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(again.Spec.Template.Spec.Containers[0].Args, " "); got != args {
		t.Errorf("the refused patch changed the args: %q, was %q", got, args)
	}
}
