package integration

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"

	"github.com/rdmatopo/rdmatopo/internal/testing/harness"
)

// The Helm release config/helm/values-rdmatopo.yaml is written for.
const (
	helmRelease   = "volcano"
	helmNamespace = "volcano-system"
	// helmValuesFile is the values file, relative to the repository root.
	helmValuesFile = "config/helm/values-rdmatopo.yaml"
	// helmRenderTimeout bounds one `helm template`.
	helmRenderTimeout = 2 * time.Minute
)

// Fields checkScheduler names in its messages.
const (
	fieldImage = "spec.template.spec.containers[0].image"
	fieldConf  = "volcano-scheduler.conf"
)

// chartValues is the part of Volcano's chart values the scheduler's
// Deployment and ConfigMap are rendered from.
type chartValues struct {
	Basic struct {
		ImageRegistry       string `json:"image_registry"`
		SchedulerImageName  string `json:"scheduler_image_name"`
		ImageTagVersion     string `json:"image_tag_version"`
		SchedulerConfigFile string `json:"scheduler_config_file"`
	} `json:"basic"`
	Custom struct {
		SchedulerReplicas       int32                       `json:"scheduler_replicas"`
		LeaderElectEnable       bool                        `json:"leader_elect_enable"`
		SchedulerResources      corev1.ResourceRequirements `json:"scheduler_resources"`
		SchedulerConfigOverride string                      `json:"scheduler_config_override"`
	} `json:"custom"`
}

// schedulerWant is what a render must show for the scheduler.
type schedulerWant struct {
	image       string
	replicas    int32
	leaderElect bool
	resources   corev1.ResourceRequirements
	// conf is the whole scheduler conf the Deployment must mount, read
	// from confFile.
	conf     string
	confFile string
	// serviceAccount is namespace/name of the ServiceAccount the scheduler
	// must run as.
	serviceAccount string
}

// rendered is the output of one `helm template`, by kind and
// namespace/name.
type rendered struct {
	deployments     map[string]*appsv1.Deployment
	configMaps      map[string]*corev1.ConfigMap
	serviceAccounts map[string]*corev1.ServiceAccount
}

// TestHelmTemplate renders Volcano v1.10.0's own chart with the helm binary
// (built by hack/build-tools.sh) the way docs/operations.md installs it, and
// checks the scheduler objects: with config/helm/values-rdmatopo.yaml the
// image, replicas, leader election and resources are the ones the values
// file names, the conf the Deployment mounts is config/volcano-scheduler.conf
// byte for byte, and the Deployment runs as the ServiceAccount that
// config/rbac/rbac.yaml binds. Rendered without the values file, the chart
// gives the stock image and conf, and the same check reports them.
//
// It needs only the helm binary, not the running stack.
func TestHelmTemplate(t *testing.T) {
	root, err := repoRoot()
	if err != nil {
		t.Fatal(err)
	}
	helm := helmBinary(t, root)
	ctx, cancel := context.WithTimeout(context.Background(), helmRenderTimeout)
	defer cancel()
	volcano, err := harness.ModuleDir(ctx, root, harness.VolcanoModule)
	if err != nil {
		t.Fatal(err)
	}
	chart := filepath.Join(volcano, "installer", "helm", "chart", "volcano")

	ours := readChartValues(t, filepath.Join(root, helmValuesFile))
	stock := readChartValues(t, filepath.Join(chart, "values.yaml"))
	account := rbacServiceAccount(t, filepath.Join(root, "config", "rbac", "rbac.yaml"))
	rdmatopo := schedulerWant{
		image:    chartImage(stock, ours),
		replicas: ours.Custom.SchedulerReplicas,
		// More than one replica schedules safely only with leader
		// election, whatever the values file says.
		leaderElect:    true,
		resources:      ours.Custom.SchedulerResources,
		conf:           readText(t, filepath.Join(root, "config", "volcano-scheduler.conf")),
		confFile:       "config/volcano-scheduler.conf",
		serviceAccount: account,
	}
	stockWant := schedulerWant{
		image:          chartImage(stock),
		replicas:       stock.Custom.SchedulerReplicas,
		leaderElect:    stock.Custom.LeaderElectEnable,
		resources:      stock.Custom.SchedulerResources,
		conf:           readText(t, filepath.Join(chart, filepath.FromSlash(stock.Basic.SchedulerConfigFile))),
		confFile:       "the chart's " + stock.Basic.SchedulerConfigFile,
		serviceAccount: account,
	}
	if rdmatopo.image == stockWant.image {
		t.Fatalf("%s names the stock scheduler image %s", helmValuesFile, rdmatopo.image)
	}
	if !strings.Contains(rdmatopo.conf, "topology-allocate") {
		t.Fatal("config/volcano-scheduler.conf has no topology-allocate action")
	}

	cases := []struct {
		name string
		// values are the -f files, relative to the repository root.
		values []string
		want   schedulerWant
		// topologyAllocate is whether the mounted conf names the
		// topology-allocate action.
		topologyAllocate bool
		// notRdmatopo are the fields the rdmatopo check must report on
		// this render; empty for rdmatopo's own render, which want
		// already checks.
		notRdmatopo []string
	}{
		{
			name:             "values-rdmatopo",
			values:           []string{helmValuesFile},
			want:             rdmatopo,
			topologyAllocate: true,
		},
		{
			// Without the values file (a `helm upgrade` that forgot -f)
			// the stock scheduler comes back, and the rdmatopo check says
			// so.
			name:        "stock",
			want:        stockWant,
			notRdmatopo: []string{fieldImage, fieldConf},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), helmRenderTimeout)
			defer cancel()
			r := renderChart(ctx, t, helm, root, chart, tc.values...)
			for _, msg := range checkScheduler(r, tc.want) {
				t.Error(msg)
			}
			conf, err := r.schedulerConf()
			if err != nil {
				t.Fatal(err)
			}
			if got := strings.Contains(conf, "topology-allocate"); got != tc.topologyAllocate {
				t.Errorf("mounted volcano-scheduler.conf names topology-allocate: %v, want %v", got, tc.topologyAllocate)
			}
			if len(tc.notRdmatopo) == 0 {
				return
			}
			got := checkScheduler(r, rdmatopo)
			for _, field := range tc.notRdmatopo {
				if !anyContains(got, field) {
					t.Errorf("the rdmatopo check of this render does not report %s; it reports %q", field, got)
				}
			}
		})
	}
}

// helmBinary returns the helm that hack/build-tools.sh built; a missing
// binary fails the test like any other missing integration binary.
func helmBinary(t *testing.T, root string) string {
	t.Helper()
	binDir := os.Getenv(binEnv)
	if binDir == "" {
		binDir = filepath.Join(root, "integration", ".bin")
	}
	helm := filepath.Join(binDir, "helm")
	if _, err := os.Stat(helm); err != nil {
		t.Fatalf("helm binary: %v (built by integration/hack/build-tools.sh helm)", err)
	}
	return helm
}

// renderChart runs `helm template volcano <chart> -n volcano-system` with
// the given values files from the repository root and decodes its output.
// helm's own config, cache and data directories are private to the test.
func renderChart(ctx context.Context, t *testing.T, helm, root, chart string, values ...string) *rendered {
	t.Helper()
	args := []string{"template", helmRelease, chart, "-n", helmNamespace}
	for _, v := range values {
		args = append(args, "-f", v)
	}
	home := t.TempDir()
	cmd := exec.CommandContext(ctx, helm, args...)
	cmd.Dir = root
	cmd.Env = append(os.Environ(),
		"HELM_CONFIG_HOME="+filepath.Join(home, "config"),
		"HELM_CACHE_HOME="+filepath.Join(home, "cache"),
		"HELM_DATA_HOME="+filepath.Join(home, "data"),
	)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("helm %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	manifest := filepath.Join(home, "manifest.yaml")
	if err := os.WriteFile(manifest, out, 0o644); err != nil {
		t.Fatal(err)
	}
	objs, err := harness.ReadManifests(manifest)
	if err != nil {
		t.Fatalf("decode the output of helm %s: %v", strings.Join(args, " "), err)
	}
	r := &rendered{
		deployments:     map[string]*appsv1.Deployment{},
		configMaps:      map[string]*corev1.ConfigMap{},
		serviceAccounts: map[string]*corev1.ServiceAccount{},
	}
	for _, o := range objs {
		var err error
		switch o.GetKind() {
		case "Deployment":
			d := &appsv1.Deployment{}
			err = fromUnstructured(o, d)
			r.deployments[objectKey(o)] = d
		case "ConfigMap":
			cm := &corev1.ConfigMap{}
			err = fromUnstructured(o, cm)
			r.configMaps[objectKey(o)] = cm
		case "ServiceAccount":
			sa := &corev1.ServiceAccount{}
			err = fromUnstructured(o, sa)
			r.serviceAccounts[objectKey(o)] = sa
		}
		if err != nil {
			t.Fatalf("rendered %s %s: %v", o.GetKind(), objectKey(o), err)
		}
	}
	return r
}

// scheduler returns the rendered scheduler Deployment and its container.
func (r *rendered) scheduler() (*appsv1.Deployment, *corev1.Container, error) {
	key := helmNamespace + "/" + helmRelease + "-scheduler"
	d, ok := r.deployments[key]
	if !ok {
		return nil, nil, fmt.Errorf("no Deployment %s in the render (Deployments: %v)", key, keys(r.deployments))
	}
	if n := len(d.Spec.Template.Spec.Containers); n != 1 {
		return nil, nil, fmt.Errorf("Deployment %s: spec.template.spec.containers has %d containers, want 1", key, n)
	}
	return d, &d.Spec.Template.Spec.Containers[0], nil
}

// schedulerConf returns the conf the scheduler reads: the key of
// --scheduler-conf in the ConfigMap mounted at its directory.
func (r *rendered) schedulerConf() (string, error) {
	d, c, err := r.scheduler()
	if err != nil {
		return "", err
	}
	where := "Deployment " + objectName(d.ObjectMeta)
	file, ok := flagValue(c.Args, "--scheduler-conf")
	if !ok {
		return "", fmt.Errorf("%s: spec.template.spec.containers[0].args %q have no --scheduler-conf", where, c.Args)
	}
	dir, key := path.Split(file)
	dir = path.Clean(dir)
	var volume string
	for _, m := range c.VolumeMounts {
		if path.Clean(m.MountPath) == dir {
			volume = m.Name
		}
	}
	if volume == "" {
		return "", fmt.Errorf("%s: no volumeMount at %s, the directory of --scheduler-conf=%s", where, dir, file)
	}
	var cmName string
	for _, v := range d.Spec.Template.Spec.Volumes {
		if v.Name == volume && v.ConfigMap != nil {
			cmName = v.ConfigMap.Name
		}
	}
	if cmName == "" {
		return "", fmt.Errorf("%s: volume %s (mounted at %s) is not a ConfigMap", where, volume, dir)
	}
	cmKey := d.Namespace + "/" + cmName
	cm, ok := r.configMaps[cmKey]
	if !ok {
		return "", fmt.Errorf("%s mounts ConfigMap %s, which is not in the render (ConfigMaps: %v)", where, cmKey, keys(r.configMaps))
	}
	conf, ok := cm.Data[key]
	if !ok {
		return "", fmt.Errorf("ConfigMap %s: data has no key %s (--scheduler-conf=%s)", cmKey, key, file)
	}
	return conf, nil
}

// checkScheduler compares the rendered scheduler with want and returns one
// message per field that differs, naming the object and the field.
func checkScheduler(r *rendered, want schedulerWant) []string {
	d, c, err := r.scheduler()
	if err != nil {
		return []string{err.Error()}
	}
	where := "Deployment " + objectName(d.ObjectMeta)
	var msgs []string
	replicas := int32(1)
	if d.Spec.Replicas != nil {
		replicas = *d.Spec.Replicas
	}
	leaderElect, _ := flagValue(c.Args, "--leader-elect")
	// The chart sets the deprecated serviceAccount; the API server copies
	// it into serviceAccountName when the latter is empty.
	account := d.Spec.Template.Spec.ServiceAccountName
	if account == "" {
		account = d.Spec.Template.Spec.DeprecatedServiceAccount
	}
	fields := []struct {
		field     string
		got, want any
	}{
		{fieldImage, c.Image, want.image},
		{"spec.replicas", replicas, want.replicas},
		{"spec.template.spec.containers[0].args --leader-elect", leaderElect, fmt.Sprint(want.leaderElect)},
		{"spec.template.spec.containers[0].resources", c.Resources, want.resources},
		{"spec.template.spec.serviceAccountName", d.Namespace + "/" + account, want.serviceAccount},
	}
	for _, f := range fields {
		if !apiequality.Semantic.DeepEqual(f.got, f.want) {
			msgs = append(msgs, fmt.Sprintf("%s: %s = %s, want %s", where, f.field, show(f.got), show(f.want)))
		}
	}
	if _, ok := r.serviceAccounts[want.serviceAccount]; !ok {
		msgs = append(msgs, fmt.Sprintf("no ServiceAccount %s in the render (ServiceAccounts: %v)", want.serviceAccount, keys(r.serviceAccounts)))
	}
	conf, err := r.schedulerConf()
	switch {
	case err != nil:
		msgs = append(msgs, err.Error())
	case conf != want.conf:
		msgs = append(msgs, fmt.Sprintf("%s: the mounted %s differs from %s at line %s", where, fieldConf, want.confFile, firstDiff(conf, want.conf)))
	}
	return msgs
}

// readChartValues reads a values file of Volcano's chart.
func readChartValues(t *testing.T, file string) chartValues {
	t.Helper()
	var v chartValues
	if err := yaml.Unmarshal([]byte(readText(t, file)), &v); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	return v
}

// chartImage is the scheduler image the chart builds from the stock values
// overlaid by each later values file: image_registry/scheduler_image_name:
// image_tag_version.
func chartImage(files ...chartValues) string {
	var registry, name, tag string
	for _, v := range files {
		registry = or(v.Basic.ImageRegistry, registry)
		name = or(v.Basic.SchedulerImageName, name)
		tag = or(v.Basic.ImageTagVersion, tag)
	}
	return registry + "/" + name + ":" + tag
}

// rbacServiceAccount returns namespace/name of the one ServiceAccount that
// the ClusterRoleBinding in file binds.
func rbacServiceAccount(t *testing.T, file string) string {
	t.Helper()
	objs, err := harness.ReadManifests(file)
	if err != nil {
		t.Fatal(err)
	}
	var found []string
	for _, o := range objs {
		if o.GetKind() != "ClusterRoleBinding" {
			continue
		}
		var b rbacv1.ClusterRoleBinding
		if err := fromUnstructured(o, &b); err != nil {
			t.Fatalf("%s: ClusterRoleBinding %s: %v", file, o.GetName(), err)
		}
		for _, s := range b.Subjects {
			if s.Kind == rbacv1.ServiceAccountKind {
				found = append(found, s.Namespace+"/"+s.Name)
			}
		}
	}
	if len(found) != 1 {
		t.Fatalf("%s: ClusterRoleBindings bind ServiceAccounts %v, want exactly one", file, found)
	}
	return found[0]
}

func readText(t *testing.T, file string) string {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

func fromUnstructured(o *unstructured.Unstructured, into any) error {
	return runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, into)
}

// objectKey is namespace/name, or name for a cluster-scoped object.
func objectKey(o *unstructured.Unstructured) string {
	if o.GetNamespace() == "" {
		return o.GetName()
	}
	return o.GetNamespace() + "/" + o.GetName()
}

func objectName(m metav1.ObjectMeta) string {
	return m.Namespace + "/" + m.Name
}

// flagValue returns the value of the last --name=value in args.
func flagValue(args []string, name string) (string, bool) {
	value, ok := "", false
	for _, a := range args {
		if v, found := strings.CutPrefix(a, name+"="); found {
			value, ok = v, true
		}
	}
	return value, ok
}

// firstDiff describes where two texts first differ, by line, with both
// lines quoted.
func firstDiff(got, want string) string {
	g, w := strings.SplitAfter(got, "\n"), strings.SplitAfter(want, "\n")
	for i := 0; i < len(g) || i < len(w); i++ {
		var gl, wl string
		if i < len(g) {
			gl = g[i]
		}
		if i < len(w) {
			wl = w[i]
		}
		if gl != wl {
			return fmt.Sprintf("%d: got %q, want %q", i+1, gl, wl)
		}
	}
	return "(none)"
}

// show prints a checked value; resources as "requests: cpu=500m ...".
func show(v any) string {
	r, ok := v.(corev1.ResourceRequirements)
	if !ok {
		return fmt.Sprint(v)
	}
	list := func(l corev1.ResourceList) string {
		names := make([]string, 0, len(l))
		for n := range l {
			names = append(names, string(n))
		}
		sort.Strings(names)
		for i, n := range names {
			q := l[corev1.ResourceName(n)]
			names[i] = n + "=" + q.String()
		}
		return "[" + strings.Join(names, " ") + "]"
	}
	return "requests: " + list(r.Requests) + ", limits: " + list(r.Limits)
}

func anyContains(msgs []string, s string) bool {
	for _, m := range msgs {
		if strings.Contains(m, s) {
			return true
		}
	}
	return false
}

func keys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func or(a, b string) string {
	if a != "" {
		return a
	}
	return b
}
