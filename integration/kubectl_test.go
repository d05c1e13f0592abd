package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"encoding/xml"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/rdmatopo/rdmatopo/internal/explain"
	"github.com/rdmatopo/rdmatopo/internal/fabricview"
	"github.com/rdmatopo/rdmatopo/internal/kubectlcmd"
	"github.com/rdmatopo/rdmatopo/internal/kubectlcmd/simulatecmd"
	"github.com/rdmatopo/rdmatopo/internal/live"
	"github.com/rdmatopo/rdmatopo/internal/sim/simjson"
	"github.com/rdmatopo/rdmatopo/internal/version"
)

// kubectlRun runs `kubectl rdmatopo ARGS` in-process against the test
// cluster and returns its exit code, stdout and stderr. The in-process
// kubectl-rdmatopo finds kubectl-rdmatopo-simulate (for simulate and
// explain's next session) on PATH, in integration/.bin, as an installed
// pair would (hack/build-tools.sh builds both).
func kubectlRun(t *testing.T, e *Env, args ...string) (int, string, string) {
	t.Helper()
	if !slices.Contains(filepath.SplitList(os.Getenv("PATH")), e.BinDir) {
		t.Setenv("PATH", e.BinDir+string(os.PathListSeparator)+os.Getenv("PATH"))
	}
	var out, errOut bytes.Buffer
	full := append([]string{}, args...)
	full = append(full, "--kubeconfig", e.adminKubeconfig)
	code := kubectlcmd.Main(full, strings.NewReader(""), &out, &errOut)
	return code, out.String(), errOut.String()
}

// kubectlJSON runs a command with -o json and decodes its output into v.
func kubectlJSON(t *testing.T, e *Env, v any, args ...string) {
	t.Helper()
	code, out, errOut := kubectlRun(t, e, append(args, "-o", "json")...)
	if code != 0 {
		t.Fatalf("kubectl rdmatopo %s: exit %d: %s", strings.Join(args, " "), code, errOut)
	}
	if err := json.Unmarshal([]byte(out), v); err != nil {
		t.Fatalf("kubectl rdmatopo %s -o json: %v\n%s", strings.Join(args, " "), err, out)
	}
}

// useSchedulerConfigMap writes the project's scheduler conf into the
// cluster's scheduler ConfigMap for the test's duration.
func useSchedulerConfigMap(t *testing.T, e *Env) {
	t.Helper()
	ctx := context.Background()
	conf, err := os.ReadFile(e.SchedulerConf())
	if err != nil {
		t.Fatal(err)
	}
	cms := e.Kube.CoreV1().ConfigMaps(live.SchedulerConfigMapNamespace)
	cm := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: live.SchedulerConfigMapName},
		Data:       map[string]string{live.SchedulerConfigMapKey: string(conf)},
	}
	if _, err := cms.Create(ctx, cm, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatalf("create the scheduler ConfigMap: %v", err)
	}
	t.Cleanup(func() { _ = cms.Delete(context.Background(), live.SchedulerConfigMapName, metav1.DeleteOptions{}) })
}

// TestKubectlPlugin: on the real API server, with one gang bound under one
// S0 (a VolcanoJob) and one that cannot fit its hard tier (a PyTorchJob),
// every read command of the kubectl plugin works in table, JSON and YAML,
// and reaches each gang from the job the user submitted.
func TestKubectlPlugin(t *testing.T) {
	e := requireEnv(t)
	ctx := context.Background()
	f := newFabric(t, e)
	ns := newNamespace(t, e)
	wide := twoGroups(ctx, f)
	useSchedulerConfigMap(t, e)

	placed := volcanoJob{Name: "llm", Workers: 3, Shape: trainer, Contract: hardS0}
	placed.Create(t, e, ns)
	pods := waitBound(t, e, ns, placed.Selector(), placed.Size(), placeTimeout)
	placedPG := podGroupOf(t, e, pods[0])
	_, leaf := checkGangUnderOneS0(t, f, pods, placed.Shape)

	// Five pods of 4 GPUs under one S0: no leaf has room (the free wide
	// leaf has four zones, the other one is taken whole).
	waiting := pytorchJob{Name: "big", Workers: 4, Shape: trainer, Contract: hardS0}
	waiting.Create(t, e, ns)
	eventually(t, placeTimeout, func() (bool, string) {
		pg, err := e.Volcano.SchedulingV1beta1().PodGroups(ns).Get(ctx, waiting.Name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		n := len(listPods(t, e, ns, waiting.Selector()))
		return condition(pg, "Unschedulable") != nil && n == waiting.Size(),
			"waiting gang: " + describePodGroup(pg)
	})
	placedKey, waitingKey := ns+"/"+placedPG.Name, ns+"/"+waiting.Name

	cases := []struct {
		name  string
		check func(t *testing.T)
	}{
		{"topology", func(t *testing.T) {
			var v fabricview.View
			kubectlJSON(t, e, &v, "topology")
			var row *fabricview.Leaf
			for i := range v.Leaves {
				if v.Leaves[i].S0 == leaf {
					row = &v.Leaves[i]
				}
			}
			if row == nil {
				t.Fatalf("topology -o json lists no leaf %s: %+v", leaf, v.Leaves)
			}
			if row.Holders[placedKey] != 8 || row.Free != 0 {
				t.Errorf("leaf %s: holders %v, %d free; want %s holding all 8 NICs", leaf, row.Holders, row.Free, placedKey)
			}
			code, out, errOut := kubectlRun(t, e, "topology")
			if code != 0 || !strings.Contains(out, "HOLDERS (NICS HELD)") || !strings.Contains(out, placedKey+" (8)") {
				t.Errorf("topology table: exit %d, stderr %q:\n%s", code, errOut, out)
			}
			code, out, _ = kubectlRun(t, e, "topology", "-o", "yaml", "--page-size", "2")
			var y fabricview.View
			if code != 0 || yaml.Unmarshal([]byte(out), &y) != nil || y.NICs != v.NICs {
				t.Errorf("topology -o yaml with 2 objects per page: exit %d, %d NICs, want %d:\n%s", code, y.NICs, v.NICs, out)
			}
		}},
		{"explain placed VolcanoJob", func(t *testing.T) {
			var x explain.Explanation
			kubectlJSON(t, e, &x, "explain", "job/"+placed.Name, "-n", ns)
			if x.PodGroup != placedPG.Name || x.State != explain.StatePlaced || x.Current == nil ||
				x.Current.Tier != "s0" || len(x.Current.S0) != 1 || x.Current.S0[0] != leaf {
				t.Errorf("explain job/%s: %+v (current %+v), want placed at s0 on %s", placed.Name, x, x.Current, leaf)
			}
			// The Job was read for its task order: the master is rank 0.
			for _, n := range x.Notes {
				if strings.Contains(n, "spec.tasks") {
					t.Errorf("explain job/%s could not read the Job: %s", placed.Name, n)
				}
			}
			if len(x.Ranked) != placed.Size() || !strings.Contains(x.Ranked[0].Pod, "-master-") {
				t.Errorf("explain job/%s ranks %+v, want %d pods, the master first", placed.Name, x.Ranked, placed.Size())
			}
		}},
		{"explain waiting PyTorchJob", func(t *testing.T) {
			var x explain.Explanation
			kubectlJSON(t, e, &x, "explain", "pytorchjob/"+waiting.Name, "-n", ns)
			if x.PodGroup != waiting.Name || x.State != explain.StateWaiting || x.Plan != nil ||
				!strings.HasPrefix(x.Blocked, "TierLimit") || x.Contract.Mode != "hard" || x.Contract.HighestTier != "s0" {
				t.Errorf("explain pytorchjob/%s: %+v, want waiting, blocked by its hard s0 limit", waiting.Name, x)
			}
			if len(x.Leaves) == 0 || x.Leaves[0].Pods != 4 || !wide[x.Leaves[0].S0] || x.Leaves[0].S0 == leaf {
				t.Errorf("best leaves %+v: want the free wide leaf first, holding 4 of the 5 pods", x.Leaves)
			}
			last := x.Leaves[len(x.Leaves)-1]
			if last.S0 != leaf || last.Pods != 0 || last.HeldBy[placedKey] != 8 {
				t.Errorf("best leaves %+v: want leaf %s last, all 8 NICs held by %s", x.Leaves, leaf, placedKey)
			}
			code, out, _ := kubectlRun(t, e, "explain", waiting.Name, "-n", ns)
			if code != 0 || !strings.Contains(out, "Blocked: TierLimit") || !strings.Contains(out, "Best leaves") {
				t.Errorf("explain table: exit %d:\n%s", code, out)
			}
		}},
		{"explain unknown kind is a usage error", func(t *testing.T) {
			if code, _, errOut := kubectlRun(t, e, "explain", "deployment/x", "-n", ns); code != 2 || !strings.Contains(errOut, "unknown kind") {
				t.Errorf("exit %d, stderr %q; want 2 naming the kind", code, errOut)
			}
		}},
		{"simulate", func(t *testing.T) {
			dir := t.TempDir()
			wl := filepath.Join(dir, "w.yaml")
			writeFile(t, wl, `apiVersion: scheduling.volcano.sh/v1beta1
kind: PodGroup
metadata: {name: small, namespace: `+ns+`}
spec: {minMember: 1, queue: default}
---
apiVersion: v1
kind: Pod
metadata:
  name: small-0
  namespace: `+ns+`
  annotations: {scheduling.k8s.io/group-name: small}
spec:
  schedulerName: volcano
  containers:
  - name: c
    image: x
    resources:
      requests: {nvidia.com/gpu: "4", vke.volcengine.com/rdma: "2", cpu: "1"}
      limits: {nvidia.com/gpu: "4", vke.volcengine.com/rdma: "2", cpu: "1"}
`)
			svg := filepath.Join(dir, "sim.svg")
			var res simulatecmd.SimulateResult
			kubectlJSON(t, e, &res, "simulate", "--workload", wl, "--map", svg)
			if res.SchedulerConf.Kind != "configmap" {
				t.Errorf("scheduler conf from %+v, want the cluster's ConfigMap", res.SchedulerConf)
			}
			jobs := map[string]simjson.Job{}
			for _, j := range res.Jobs {
				jobs[j.Namespace+"/"+j.Name] = j
			}
			if j, ok := jobs[waitingKey]; !ok || j.Placed {
				t.Errorf("waiting gang %s in the simulation: %+v (present %v), want included and still waiting", waitingKey, j, ok)
			}
			if j := jobs[ns+"/small"]; !j.Placed || j.Tier != "node" {
				t.Errorf("workload gang: %+v, want placed on one node", j)
			}
			checkSVG(t, readFile(t, svg))
		}},
		{"map", func(t *testing.T) {
			code, out, errOut := kubectlRun(t, e, "map")
			if code != 0 {
				t.Fatalf("map: exit %d: %s", code, errOut)
			}
			checkSVG(t, out)
			if !strings.Contains(out, placedKey+": tier s0") || !strings.Contains(out, waitingKey+": waiting") {
				t.Errorf("the map's legend does not show %s placed and %s waiting", placedKey, waitingKey)
			}
			var st kubectlcmd.State
			kubectlJSON(t, e, &st, "map")
			found := 0
			for _, j := range st.Jobs {
				switch j.Key() {
				case placedKey:
					found++
					if !j.Placed || j.Tier != "s0" || j.Color == "" {
						t.Errorf("map -o json: %+v, want placed at s0 with a colour", j)
					}
				case waitingKey:
					found++
					if j.Placed || j.Reason == "" {
						t.Errorf("map -o json: %+v, want waiting with the scheduler's reason", j)
					}
				}
			}
			if found != 2 {
				t.Errorf("map -o json lists %d of the 2 jobs: %+v", found, st.Jobs)
			}
		}},
		{"through kubectl", func(t *testing.T) {
			checkThroughKubectl(t, e, ns, waiting.Name, waitingKey)
		}},
		{"version", func(t *testing.T) {
			var v version.Info
			kubectlJSON(t, e, &v, "version")
			if v.Volcano != "v1.10.0" || v.Version == "" || v.GitCommit == "" {
				t.Errorf("version -o json: %+v, want Volcano v1.10.0", v)
			}
			if code, out, _ := kubectlRun(t, e, "version"); code != 0 || !strings.Contains(out, "Volcano v1.10.0") {
				t.Errorf("version: exit %d: %s", code, out)
			}
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, tc.check)
	}
}

// pluginPath returns a directory holding kubectl and the named plugin
// binaries, to put first on PATH: links to integration/.bin's, or copies
// when alone (kubectl-rdmatopo follows its link and looks for
// kubectl-rdmatopo-simulate next to where it leads).
func pluginPath(t *testing.T, e *Env, alone bool, binaries ...string) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.Symlink(e.binary("kubectl"), filepath.Join(dir, "kubectl")); err != nil {
		t.Fatal(err)
	}
	for _, b := range binaries {
		if !alone {
			if err := os.Symlink(e.binary(b), filepath.Join(dir, b)); err != nil {
				t.Fatal(err)
			}
			continue
		}
		data, err := os.ReadFile(e.binary(b))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, b), data, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// kubectlExec runs the real kubectl (integration/.bin) with PATH holding
// only dir before the system's, as a user who installed the plugin there.
func kubectlExec(t *testing.T, e *Env, dir string, args ...string) (int, string, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(dir, "kubectl"), args...)
	cmd.Env = append(os.Environ(), "PATH="+dir+string(os.PathListSeparator)+"/usr/bin:/bin",
		"KUBECONFIG="+e.adminKubeconfig, "HOME="+t.TempDir())
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	code := 0
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		code = exit.ExitCode()
	} else if err != nil {
		t.Fatalf("kubectl %s: %v", strings.Join(args, " "), err)
	}
	return code, out.String(), errOut.String()
}

// checkThroughKubectl runs the two plugin binaries as kubectl finds them
// on PATH: `kubectl rdmatopo simulate` reaches kubectl-rdmatopo-simulate
// alone (the longest plugin name the words before the first flag spell),
// a flag before simulate goes through kubectl-rdmatopo, which runs it,
// help lists simulate, and explain's next session comes from the second
// binary, or says how to install it when it is missing.
func checkThroughKubectl(t *testing.T, e *Env, ns, waitingName, waitingKey string) {
	both := pluginPath(t, e, false, "kubectl-rdmatopo", "kubectl-rdmatopo-simulate")
	simulateOnly := pluginPath(t, e, true, "kubectl-rdmatopo-simulate")
	viewsOnly := pluginPath(t, e, true, "kubectl-rdmatopo")

	simulated := func(dir string, args ...string) {
		t.Helper()
		code, out, errOut := kubectlExec(t, e, dir, args...)
		var res simulatecmd.SimulateResult
		if code != 0 || json.Unmarshal([]byte(out), &res) != nil {
			t.Fatalf("kubectl %s: exit %d, stderr %q:\n%s", strings.Join(args, " "), code, errOut, out)
		}
		if res.SchedulerConf.Kind != "configmap" || !slices.Contains(res.Waiting, waitingKey) {
			t.Errorf("kubectl %s: conf %+v, waiting %v; want the ConfigMap's conf and %s", strings.Join(args, " "), res.SchedulerConf, res.Waiting, waitingKey)
		}
	}
	simulated(simulateOnly, "rdmatopo", "simulate", "-o", "json")
	simulated(both, "rdmatopo", "--request-timeout", "1m", "simulate", "-o", "json")

	code, out, errOut := kubectlExec(t, e, both, "rdmatopo", "--help")
	if code != 0 || !strings.Contains(out, "simulate    What-if on the live cluster") {
		t.Errorf("kubectl rdmatopo --help: exit %d, stderr %q, does not list simulate:\n%s", code, errOut, out)
	}
	code, out, _ = kubectlExec(t, e, both, "rdmatopo", "simulate", "--help")
	if code != 0 || !strings.Contains(out, "kubectl-rdmatopo simulate [--workload FILE] [flags]") || !strings.Contains(out, "--no-waiting") ||
		strings.Contains(out, "next-session") {
		t.Errorf("kubectl rdmatopo simulate --help: exit %d:\n%s", code, out)
	}

	explained := func(dir string) explain.Explanation {
		t.Helper()
		code, out, errOut := kubectlExec(t, e, dir, "rdmatopo", "explain", "pytorchjob/"+waitingName, "-n", ns, "-o", "json")
		var x explain.Explanation
		if code != 0 || json.Unmarshal([]byte(out), &x) != nil {
			t.Fatalf("kubectl rdmatopo explain: exit %d, stderr %q:\n%s", code, errOut, out)
		}
		return x
	}
	missing := "kubectl-rdmatopo-simulate runs it and is not installed"
	if x := explained(both); x.State != explain.StateWaiting || slices.ContainsFunc(x.Notes, func(n string) bool { return strings.Contains(n, missing) }) {
		t.Errorf("explain with both binaries: %s, notes %q; want waiting, the next session run", x.State, x.Notes)
	}
	if x := explained(viewsOnly); !slices.ContainsFunc(x.Notes, func(n string) bool {
		return strings.Contains(n, missing) && strings.Contains(n, "make install-kubectl-plugin")
	}) {
		t.Errorf("explain without kubectl-rdmatopo-simulate: notes %q, want one saying it is missing and how to install it", x.Notes)
	}
	code, _, errOut = kubectlExec(t, e, viewsOnly, "rdmatopo", "--request-timeout", "1m", "simulate")
	if code != 1 || !strings.Contains(errOut, "kubectl rdmatopo simulate needs kubectl-rdmatopo-simulate") {
		t.Errorf("simulate through kubectl-rdmatopo without the second binary: exit %d, stderr %q", code, errOut)
	}
}

// writeFile writes a test file.
func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// readFile reads a test file.
func readFile(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// checkSVG fails unless s is a well-formed SVG document.
func checkSVG(t *testing.T, s string) {
	t.Helper()
	dec := xml.NewDecoder(strings.NewReader(s))
	root := ""
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("map is not well-formed XML: %v", err)
		}
		if el, ok := tok.(xml.StartElement); ok && root == "" {
			root = el.Name.Local
		}
	}
	if root != "svg" {
		t.Fatalf("map's root element is %q, want svg", root)
	}
}
