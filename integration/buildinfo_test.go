package integration

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rdmatopo/rdmatopo/internal/testing/harness"
)

// dockerMake returns the arguments of the `make` call the Dockerfile builds
// the image's vc-scheduler with, its build arguments replaced by args and
// BIN by bin.
func dockerMake(t *testing.T, root, bin string, args map[string]string) []string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(root, "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	var line string
	for _, l := range strings.Split(string(data), "\n") {
		if _, rest, ok := strings.Cut(l, " make "); ok && !strings.HasPrefix(strings.TrimSpace(l), "#") {
			line = rest
		}
	}
	if line == "" {
		t.Fatal("Dockerfile: no RUN ... make line")
	}
	var out []string
	for _, f := range strings.Fields(line) {
		for k, v := range args {
			f = strings.ReplaceAll(f, "${"+k+"}", v)
		}
		if strings.HasPrefix(f, "BIN=") {
			f = "BIN=" + bin
		}
		if strings.Contains(f, "${") {
			t.Fatalf("Dockerfile: make argument %q names a build argument the test does not set", f)
		}
		out = append(out, f)
	}
	return out
}

// TestBuildInfoStamped builds vc-scheduler as the Dockerfile does (its
// make call, with README's build arguments: a version and `git rev-parse
// HEAD`) and checks that the binary's rdmatopo_build_info carries them; and
// that `make build` stamps the same package for every binary. The binary
// runs as a standby (a lease another holder keeps): it serves its metrics
// and never schedules.
func TestBuildInfoStamped(t *testing.T) {
	e := requireEnv(t)
	ctx := context.Background()
	sha, err := exec.CommandContext(ctx, "git", "-C", e.RepoRoot, "rev-parse", "HEAD").Output()
	if err != nil {
		t.Fatalf("git rev-parse HEAD: %v", err)
	}
	commit := strings.TrimSpace(string(sha))
	const version = "v0.0.0-buildinfo"

	// make build: every go build stamps rdmatopo's version package with
	// the commit.
	dry, err := exec.CommandContext(ctx, "make", "-C", e.RepoRoot, "-n", "build", "BIN="+t.TempDir()).CombinedOutput()
	if err != nil {
		t.Fatalf("make -n build: %v\n%s", err, dry)
	}
	builds := regexp.MustCompile(`(?m)^.*go build .*-o (\S+) .*$`).FindAllStringSubmatch(string(dry), -1)
	if len(builds) != 4 {
		t.Fatalf("make -n build: %d go builds, want 4 (rdmatopo, kubectl-rdmatopo, kubectl-rdmatopo-simulate, vc-scheduler):\n%s", len(builds), dry)
	}
	for _, b := range builds {
		if !strings.Contains(b[0], "internal/version.GitCommit="+commit) {
			t.Errorf("make build: %s is not stamped with internal/version.GitCommit=%s:\n%s", filepath.Base(b[1]), commit, b[0])
		}
	}

	bin := t.TempDir()
	args := dockerMake(t, e.RepoRoot, bin, map[string]string{"VERSION": version, "GIT_SHA": commit})
	cmd := exec.CommandContext(ctx, "make", append([]string{"-C", e.RepoRoot}, args...)...)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("make %s: %v\n%s", strings.Join(args, " "), err, out)
	}

	// A lease someone else holds for an hour: the binary stays a standby.
	const lease = "rdmatopo-buildinfo-check"
	holder := "someone-else"
	if _, err := e.Kube.CoordinationV1().Leases("volcano-system").Create(ctx, &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: lease},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: &holder, LeaseDurationSeconds: ptrTo(int32(3600)),
			RenewTime: &metav1.MicroTime{Time: time.Now()}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create Lease %s: %v", lease, err)
	}
	t.Cleanup(func() {
		_ = e.Kube.CoordinationV1().Leases("volcano-system").Delete(context.Background(), lease, metav1.DeleteOptions{})
	})
	metrics, err := harness.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	p, err := e.start(harness.Spec{
		Name: "vc-scheduler-buildinfo",
		Path: filepath.Join(bin, "vc-scheduler"),
		Args: []string{
			"--kubeconfig=" + e.schedulerKubeconfig,
			"--scheduler-conf=" + e.SchedulerConf(),
			"--scheduler-name=rdmatopo-buildinfo-check",
			"--leader-elect=true",
			"--leader-elect-resource-namespace=volcano-system",
			"--leader-elect-resource-name=" + lease,
			"--enable-metrics=true",
			"--listen-address=" + harness.HostPort(metrics),
			"--enable-healthz=false",
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Stop)
	r := &replica{proc: p, metrics: "http://" + harness.HostPort(metrics) + "/metrics"}
	want := map[string]string{"version": version, "git_sha": commit, "volcano_version": "v1.10.0"}
	eventually(t, 30*time.Second, func() (bool, string) {
		if err := p.Alive(); err != nil {
			t.Fatal(err)
		}
		s, err := r.scrape(ctx)
		if err != nil {
			return false, err.Error()
		}
		if v, ok := value(s, "rdmatopo_build_info", want); !ok || v != 1 {
			var got []string
			for _, x := range s.Samples {
				if x.Name == "rdmatopo_build_info" {
					got = append(got, fmt.Sprint(x.Labels))
				}
			}
			return false, fmt.Sprintf("rdmatopo_build_info%v = %v (%v), exported: %v", want, v, ok, got)
		}
		return true, ""
	})
}
