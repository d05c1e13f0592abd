package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/kubewharf/katalyst-api/pkg/apis/node/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/yaml"

	"github.com/rdmatopo/rdmatopo/core/placement"
	"github.com/rdmatopo/rdmatopo/internal/devtools/bench/trace"
	"github.com/rdmatopo/rdmatopo/internal/testing/builders"
	"github.com/rdmatopo/rdmatopo/internal/testing/harness"
	"github.com/rdmatopo/rdmatopo/internal/testing/webhookcert"
	"github.com/rdmatopo/rdmatopo/internal/workload"
)

// The kueue run: Kueue v0.17 with Topology-Aware Scheduling admits each
// gang as a plain pod group and assigns its pods to nodes; kube-scheduler
// v1.30 binds them. Neither sees NICs or NUMA zones: the node agent hands
// the pods their NICs as it does for stock Volcano (no NUMA hint).

// Identities of the kueue run's components in the API server's token file.
// Kueue runs as its Deployment's ServiceAccount (the stock
// "service-accounts" flow schema, as the Volcano schedulers) with Kueue's
// own ClusterRole; kube-scheduler as system:kube-scheduler, whose RBAC and
// flow schema the API server bootstraps.
const (
	kueueNamespace    = "kueue-system"
	kueueUser         = "system:serviceaccount:" + kueueNamespace + ":kueue-controller-manager"
	kubeSchedulerUser = "system:kube-scheduler"
	kueueModule       = "sigs.k8s.io/kueue"
)

// Labels and names of the Kueue setup.
const (
	// leafPairLabel names the group of nodes whose NICs hang off the same
	// leaves (on the provider's cabling, 16 nodes sharing one leaf per
	// NUMA zone): the finest network domain a node label can state, since
	// a leaf serves one NUMA zone of a node, not a node.
	leafPairLabel = "bench-e2e.rdmatopo.io/leaf-pair"
	// kueuePoolLabel is the label of the ResourceFlavor's nodes (every
	// generated node carries it).
	kueuePoolLabel = builders.KatalystDeployLabel
	kueueTopology  = "fabric"
	kueueFlavor    = "gpu"
	kueueCQ        = "bench"
	kueueLQ        = "bench"
	// Pod group keys of Kueue's pod integration.
	kueueQueueLabel          = "kueue.x-k8s.io/queue-name"
	kueueGroupNameLabel      = "kueue.x-k8s.io/pod-group-name"
	kueueGroupCountAnnot     = "kueue.x-k8s.io/pod-group-total-count"
	kueueRequiredTopoAnnot   = "kueue.x-k8s.io/podset-required-topology"
	kueuePreferredTopoAnnot  = "kueue.x-k8s.io/podset-preferred-topology"
	kueueMetricsCertDir      = "/etc/kueue/metrics/certs"
	kubeDefaultSchedulerName = corev1.DefaultSchedulerName
)

// kueueLevels are the Topology's levels, widest first: S1, the leaf pair,
// the node (Kueue then picks every pod's node itself).
var kueueLevels = []string{builders.S1Label, leafPairLabel, corev1.LabelHostname}

var kueueGV = schema.GroupVersion{Group: "kueue.x-k8s.io", Version: "v1beta2"}

// leafPairOf is the leaf-pair label value of a node: a hash of the sorted,
// distinct leaves its KCNR names for its NICs ("" when it names none).
func leafPairOf(cnr *v1alpha1.CustomNodeResource) string {
	set := map[string]bool{}
	for _, p := range cnr.Spec.NodeResourceProperties {
		if p == nil || !strings.HasPrefix(strings.ToLower(p.PropertyName), strings.ToLower(rdmaTorPrefix)) {
			continue
		}
		for _, v := range p.PropertyValues {
			if v != "" {
				set[v] = true
			}
		}
	}
	if len(set) == 0 {
		return ""
	}
	leaves := make([]string, 0, len(set))
	for l := range set {
		leaves = append(leaves, l)
	}
	sort.Strings(leaves)
	sum := sha256.Sum256([]byte(strings.Join(leaves, ",")))
	return "lp-" + hex.EncodeToString(sum[:10])
}

// kueueCluster returns the cluster with the node labels a Kueue user sets
// for TAS: kubernetes.io/hostname (kubelet's) and the leaf pair. Nodes and
// their labels are copied; the rest is shared.
func kueueCluster(c *workload.Cluster) (*workload.Cluster, error) {
	cnrs := map[string]*v1alpha1.CustomNodeResource{}
	for _, cnr := range c.CNRs {
		cnrs[cnr.Name] = cnr
	}
	out := *c
	out.Nodes = make([]*corev1.Node, len(c.Nodes))
	for i, n := range c.Nodes {
		n = n.DeepCopy()
		if n.Labels == nil {
			n.Labels = map[string]string{}
		}
		n.Labels[corev1.LabelHostname] = n.Name
		cnr := cnrs[n.Name]
		if cnr == nil {
			return nil, fmt.Errorf("node %s: no KCNR", n.Name)
		}
		if lp := leafPairOf(cnr); lp != "" {
			n.Labels[leafPairLabel] = lp
		}
		out.Nodes[i] = n
	}
	return &out, nil
}

// kueueTopologyLevel is the Topology level a gang is held to or prefers:
// a hard gang's highest tier (S0 → the leaf pair, the finest domain Kueue
// can express; S1 → S1), a soft gang prefers one leaf pair. required is
// false for soft gangs.
func kueueTopologyLevel(g trace.GangSpec) (level string, required bool) {
	if g.Mode != placement.ModeHard {
		return leafPairLabel, false
	}
	if g.HighestTier == placement.TierS0 {
		return leafPairLabel, true
	}
	return builders.S1Label, true
}

// kueuePod is pod i of a gang as a member of a Kueue plain pod group: the
// same containers and requests as the VolcanoJob's pods, the queue and
// group labels, the group size and the topology annotation; kube-scheduler
// binds it.
func kueuePod(g trace.GangSpec, i int) *corev1.Pod {
	tmpl := volcanoJob(g).Spec.Tasks[0].Template
	level, required := kueueTopologyLevel(g)
	annot := kueuePreferredTopoAnnot
	if required {
		annot = kueueRequiredTopoAnnot
	}
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name:      fmt.Sprintf("%s-worker-%d", g.Name, i),
			Namespace: jobNamespace,
			Labels: map[string]string{
				gangLabel:           g.Name,
				kueueQueueLabel:     kueueLQ,
				kueueGroupNameLabel: g.Name,
			},
			Annotations: map[string]string{
				kueueGroupCountAnnot: strconv.Itoa(g.Pods),
				annot:                level,
			},
		},
		Spec: *tmpl.Spec.DeepCopy(),
	}
	p.Spec.SchedulerName = kubeDefaultSchedulerName
	return p
}

// createKueueGang creates a gang's pods (Kueue's webhook gates them until
// the group is admitted).
func createKueueGang(ctx context.Context, s *stack, g trace.GangSpec) error {
	errs := parallel(ctx, g.Pods, 8, func(i int) error {
		_, err := s.Kube.CoreV1().Pods(jobNamespace).Create(ctx, kueuePod(g, i), metav1.CreateOptions{})
		return err
	})
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("create pods of %s: %w", g.Name, err)
	}
	return nil
}

// finishKueueGang ends a gang as its containers would: every pod Succeeded
// (what kubelet reports), so that Kueue finishes the group's Workload and
// releases its quota and topology usage; the caller then deletes the pods.
func finishKueueGang(ctx context.Context, s *stack, name string) error {
	pods, err := s.Kube.CoreV1().Pods(jobNamespace).List(ctx, metav1.ListOptions{LabelSelector: gangLabel + "=" + name})
	if err != nil {
		return err
	}
	errs := parallel(ctx, len(pods.Items), 8, func(i int) error {
		p := &pods.Items[i]
		return retry.RetryOnConflict(retry.DefaultRetry, func() error {
			if p.Status.Phase == corev1.PodSucceeded {
				return nil
			}
			p.Status.Phase = corev1.PodSucceeded
			for j := range p.Status.Conditions {
				if p.Status.Conditions[j].Type == corev1.PodReady || p.Status.Conditions[j].Type == corev1.ContainersReady {
					p.Status.Conditions[j].Status = corev1.ConditionFalse
				}
			}
			_, err := s.Kube.CoreV1().Pods(jobNamespace).UpdateStatus(ctx, p, metav1.UpdateOptions{})
			if apierrors.IsConflict(err) {
				fresh, gerr := s.Kube.CoreV1().Pods(jobNamespace).Get(ctx, p.Name, metav1.GetOptions{})
				if gerr != nil {
					return gerr
				}
				*p = *fresh
			}
			if apierrors.IsNotFound(err) {
				return nil
			}
			return err
		})
	})
	return errors.Join(errs...)
}

// startKueue brings up the kueue run's schedulers: Kueue's CRDs and RBAC,
// Kueue with its webhooks on 127.0.0.1 (certificates made here), the
// Topology, ResourceFlavor, ClusterQueue and LocalQueue, then
// kube-scheduler.
func (s *stack) startKueue(ctx context.Context, c *workload.Cluster) error {
	dir, err := harness.ModuleDir(ctx, filepath.Join(s.repoRoot, "integration", "tools", "kueue"), kueueModule)
	if err != nil {
		return err
	}
	steps := []harness.Step{
		{Name: "Kueue CRDs", Run: func(ctx context.Context) error { return s.installKueueCRDs(ctx, dir) }},
		{Name: "Kueue RBAC", Run: func(ctx context.Context) error { return s.createKueueRBAC(ctx, dir) }},
		{Name: "kueue", Run: func(ctx context.Context) error { return s.startKueueManager(ctx, dir) }},
		{Name: "Kueue queues", Run: func(ctx context.Context) error { return s.createKueueQueues(ctx, c) }},
		{Name: "kube-scheduler", Run: s.startKubeScheduler},
	}
	return harness.RunSteps(ctx, steps, func(name string, took time.Duration) {
		logf("kueue: %s ready in %s", name, took)
	})
}

// installKueueCRDs installs every CRD of Kueue's module (the manager
// watches MultiKueue and admission-check kinds too) and waits until they
// are served. Every client here speaks v1beta2, the storage version, so no
// conversion webhook is configured.
func (s *stack) installKueueCRDs(ctx context.Context, dir string) error {
	files, err := filepath.Glob(filepath.Join(dir, "config", "components", "crd", "bases", "*.yaml"))
	if err != nil || len(files) == 0 {
		return fmt.Errorf("no Kueue CRDs under %s (%v)", dir, err)
	}
	return s.installCRDFiles(ctx, files)
}

// kueueRBACFiles are Kueue's manager permissions in its module: the
// ClusterRole, the Role on its namespace's Secrets and their bindings.
var kueueRBACFiles = []string{"role.yaml", "role_binding.yaml", "manager_secrets_role.yaml", "manager_secrets_role_binding.yaml"}

// createKueueRBAC creates kueue-system, Kueue's ServiceAccount and its
// manager permissions from the module, renamed as Kueue's release
// manifests name them (prefix "kueue-", namespace kueue-system).
func (s *stack) createKueueRBAC(ctx context.Context, dir string) error {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: kueueNamespace}}
	if _, err := s.Kube.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create Namespace %s: %w", kueueNamespace, err)
	}
	sa := strings.TrimPrefix(kueueUser, "system:serviceaccount:"+kueueNamespace+":")
	objs := []*unstructured.Unstructured{{Object: map[string]interface{}{
		"apiVersion": "v1", "kind": "ServiceAccount",
		"metadata": map[string]interface{}{"name": sa, "namespace": kueueNamespace},
	}}}
	for _, f := range kueueRBACFiles {
		path := filepath.Join(dir, "config", "components", "rbac", f)
		read, err := harness.ReadManifests(path)
		if err != nil {
			return err
		}
		for _, o := range read {
			if err := kueueReleaseNames(o); err != nil {
				return fmt.Errorf("%s: %w", path, err)
			}
			objs = append(objs, o)
		}
	}
	return s.create(ctx, objs)
}

// kueueReleaseNames renames an RBAC object of Kueue's module as its release
// manifests do: "kueue-" before every name it has or refers to, its
// namespace and its subjects' kueue-system.
func kueueReleaseNames(o *unstructured.Unstructured) error {
	const prefix = "kueue-"
	o.SetName(prefix + o.GetName())
	if o.GetNamespace() != "" {
		o.SetNamespace(kueueNamespace)
	}
	if ref, ok, _ := unstructured.NestedMap(o.Object, "roleRef"); ok {
		ref["name"] = prefix + fmt.Sprint(ref["name"])
		if err := unstructured.SetNestedMap(o.Object, ref, "roleRef"); err != nil {
			return err
		}
	}
	subjects, ok, err := unstructured.NestedSlice(o.Object, "subjects")
	if err != nil {
		return fmt.Errorf("%s %s: subjects: %w", o.GetKind(), o.GetName(), err)
	}
	if !ok {
		return nil
	}
	for i, sub := range subjects {
		m, _ := sub.(map[string]interface{})
		if m == nil || m["kind"] != "ServiceAccount" {
			return fmt.Errorf("%s %s: subject %d is not a ServiceAccount", o.GetKind(), o.GetName(), i)
		}
		m["name"] = prefix + fmt.Sprint(m["name"])
		m["namespace"] = kueueNamespace
	}
	return unstructured.SetNestedSlice(o.Object, subjects, "subjects")
}

// kueueConfig is Kueue's Configuration for the run: the pod integration
// only, TAS on, leader election and its own certificate management off (the
// webhook server gets the certificate made here), client QPS and burst at
// Kueue's shipped values, the metrics and pending-workloads (visibility)
// servers off.
func kueueConfig(healthPort, webhookPort int, certDir string) map[string]interface{} {
	return map[string]interface{}{
		"apiVersion": "config.kueue.x-k8s.io/v1beta2",
		"kind":       "Configuration",
		"namespace":  kueueNamespace,
		"health":     map[string]interface{}{"healthProbeBindAddress": harness.HostPort(healthPort)},
		"metrics":    map[string]interface{}{"bindAddress": "0"},
		"webhook": map[string]interface{}{
			"host": "127.0.0.1", "port": webhookPort, "certDir": certDir,
		},
		"leaderElection":         map[string]interface{}{"leaderElect": false},
		"internalCertManagement": map[string]interface{}{"enable": false},
		"clientConnection":       map[string]interface{}{"qps": 50, "burst": 100},
		"managedJobsNamespaceSelector": map[string]interface{}{"matchExpressions": []interface{}{
			map[string]interface{}{"key": corev1.LabelMetadataName, "operator": "NotIn", "values": []interface{}{"kube-system", kueueNamespace}},
		}},
		"integrations": map[string]interface{}{"frameworks": []interface{}{"pod"}},
		"featureGates": map[string]interface{}{"TopologyAwareScheduling": true, "VisibilityOnDemand": false},
	}
}

// startKueueManager starts Kueue and, once ready, installs its pod and
// kueue.x-k8s.io webhooks calling 127.0.0.1.
func (s *stack) startKueueManager(ctx context.Context, dir string) error {
	certDir := filepath.Join(s.dir, "certs", "kueue-webhook")
	ca, err := webhookcert.Write(certDir, "rdmatopo-bench-e2e-kueue-ca")
	if err != nil {
		return err
	}
	// Kueue reads its metrics serving certificate from a fixed path
	// whenever its own certificate management is off, even with the
	// metrics server off: it gets the webhook's.
	if err := os.MkdirAll(kueueMetricsCertDir, 0o755); err != nil {
		return fmt.Errorf("Kueue's metrics certificate directory (needs write access): %w", err)
	}
	for _, f := range []string{webhookcert.CertFile, webhookcert.KeyFile} {
		data, err := os.ReadFile(filepath.Join(certDir, f))
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(kueueMetricsCertDir, f), data, 0o600); err != nil {
			return err
		}
	}
	hp, err := harness.FreePort()
	if err != nil {
		return err
	}
	wp, err := harness.FreePort()
	if err != nil {
		return err
	}
	cfg, err := yaml.Marshal(kueueConfig(hp, wp, certDir))
	if err != nil {
		return err
	}
	cfgPath := filepath.Join(s.dir, "kueue-config.yaml")
	if err := os.WriteFile(cfgPath, cfg, 0o644); err != nil {
		return err
	}
	kc := filepath.Join(s.dir, "certs", "kueue.kubeconfig")
	if err := harness.WriteKubeconfig(kc, s.serverURL, "kueue", s.kueueToken); err != nil {
		return err
	}
	p, err := s.start("kueue", "kueue", []string{"--config=" + cfgPath, "--zap-log-level=1"}, []string{"KUBECONFIG=" + kc})
	if err != nil {
		return err
	}
	s.schedulers = append(s.schedulers, p)
	if err := harness.WaitHTTP(ctx, p, http.DefaultClient, "http://"+harness.HostPort(hp)+"/readyz", "", readyTimeout); err != nil {
		return err
	}
	return s.installKueueWebhooks(ctx, filepath.Join(dir, "config", "components", "webhook", "manifests.yaml"), wp, ca)
}

// installKueueWebhooks creates the webhook configurations of Kueue's
// manifest keeping the webhooks of pods and of Kueue's own kinds (the other
// integrations are off), each calling https://127.0.0.1:<port><its path>
// with the CA made here; the pod webhooks skip kube-system and
// kueue-system, as Kueue's release manifests do.
func (s *stack) installKueueWebhooks(ctx context.Context, manifest string, port int, ca []byte) error {
	objs, err := harness.ReadManifests(manifest)
	if err != nil {
		return err
	}
	return harness.InstallWebhooks(ctx, s.Dynamic, manifest, objs, harness.Webhooks{Prefix: "kueue-", Port: port, CA: ca, Keep: keepKueueWebhook})
}

// keepKueueWebhook keeps the webhooks of pods, limited to the namespaces
// Kueue manages, and of Kueue's own kinds.
func keepKueueWebhook(hook map[string]interface{}) (bool, error) {
	kind, err := webhookTarget(hook)
	if err != nil {
		return false, err
	}
	switch kind {
	case "pods":
		hook["namespaceSelector"] = map[string]interface{}{"matchExpressions": []interface{}{
			map[string]interface{}{"key": corev1.LabelMetadataName, "operator": "NotIn", "values": []interface{}{"kube-system", kueueNamespace}},
		}}
		return true, nil
	case kueueGV.Group:
		return true, nil
	}
	return false, nil
}

// webhookTarget says what a webhook admits: "pods" for core pods, the API
// group for anything else (every rule of Kueue's webhooks names one group
// and one resource).
func webhookTarget(hook map[string]interface{}) (string, error) {
	rules, _, err := unstructured.NestedSlice(hook, "rules")
	if err != nil || len(rules) == 0 {
		return "", fmt.Errorf("no rules (%v)", err)
	}
	r, _ := rules[0].(map[string]interface{})
	groups, _, _ := unstructured.NestedStringSlice(r, "apiGroups")
	resources, _, _ := unstructured.NestedStringSlice(r, "resources")
	if len(groups) != 1 || len(resources) == 0 {
		return "", fmt.Errorf("rule %v: want one API group", r)
	}
	if groups[0] == "" && resources[0] == "pods" {
		return "pods", nil
	}
	return groups[0], nil
}

// kueueQuota is the ClusterQueue's nominal quota: the cluster's allocatable
// CPU, GPUs and NICs (so quota never holds a gang back: TAS and the nodes
// do).
func kueueQuota(c *workload.Cluster) map[corev1.ResourceName]*resource.Quantity {
	q := map[corev1.ResourceName]*resource.Quantity{}
	for _, name := range []corev1.ResourceName{corev1.ResourceCPU, gpuResource, rdmaResource} {
		q[name] = resource.NewQuantity(0, resource.DecimalSI)
	}
	for _, n := range c.Nodes {
		for name, sum := range q {
			if v, ok := n.Status.Allocatable[name]; ok {
				sum.Add(v)
			}
		}
	}
	return q
}

// kueueObjects are the Topology, ResourceFlavor, ClusterQueue and
// LocalQueue of the run.
func kueueObjects(c *workload.Cluster) []*unstructured.Unstructured {
	obj := func(kind, name, namespace string, spec map[string]interface{}) *unstructured.Unstructured {
		u := &unstructured.Unstructured{Object: map[string]interface{}{"spec": spec}}
		u.SetAPIVersion(kueueGV.String())
		u.SetKind(kind)
		u.SetName(name)
		if namespace != "" {
			u.SetNamespace(namespace)
		}
		return u
	}
	var levels []interface{}
	for _, l := range kueueLevels {
		levels = append(levels, map[string]interface{}{"nodeLabel": l})
	}
	quota := kueueQuota(c)
	var covered, resources []interface{}
	for _, name := range []corev1.ResourceName{corev1.ResourceCPU, gpuResource, rdmaResource} {
		covered = append(covered, string(name))
		resources = append(resources, map[string]interface{}{"name": string(name), "nominalQuota": quota[name].String()})
	}
	return []*unstructured.Unstructured{
		obj("Topology", kueueTopology, "", map[string]interface{}{"levels": levels}),
		obj("ResourceFlavor", kueueFlavor, "", map[string]interface{}{
			"nodeLabels":   map[string]interface{}{kueuePoolLabel: "true"},
			"topologyName": kueueTopology,
		}),
		obj("ClusterQueue", kueueCQ, "", map[string]interface{}{
			"namespaceSelector": map[string]interface{}{},
			"resourceGroups": []interface{}{map[string]interface{}{
				"coveredResources": covered,
				"flavors":          []interface{}{map[string]interface{}{"name": kueueFlavor, "resources": resources}},
			}},
		}),
		obj("LocalQueue", kueueLQ, jobNamespace, map[string]interface{}{"clusterQueue": kueueCQ}),
	}
}

// createKueueQueues creates the queue objects and waits until the
// ClusterQueue is active (its flavor and topology known).
func (s *stack) createKueueQueues(ctx context.Context, c *workload.Cluster) error {
	if err := s.create(ctx, kueueObjects(c)); err != nil {
		return err
	}
	cq := kueueGV.WithResource("clusterqueues")
	deadline := time.Now().Add(readyTimeout)
	for {
		u, err := s.Dynamic.Resource(cq).Get(ctx, kueueCQ, metav1.GetOptions{})
		if err != nil {
			return err
		}
		conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
		msg := "no Active condition"
		for _, cnd := range conds {
			m, _ := cnd.(map[string]interface{})
			if m["type"] != "Active" {
				continue
			}
			if m["status"] == "True" {
				return nil
			}
			msg = fmt.Sprintf("%v: %v", m["reason"], m["message"])
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("ClusterQueue %s not active: %s", kueueCQ, msg)
		}
		if err := s.alive(); err != nil {
			return err
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// startKubeScheduler starts kube-scheduler with its defaults (client QPS
// 50, burst 100); its secure port serves /healthz without authentication.
func (s *stack) startKubeScheduler(ctx context.Context) error {
	port, err := harness.FreePort()
	if err != nil {
		return err
	}
	kc := filepath.Join(s.dir, "certs", "kube-scheduler.kubeconfig")
	if err := harness.WriteKubeconfig(kc, s.serverURL, kubeSchedulerUser, s.kubeSchedulerToken); err != nil {
		return err
	}
	p, err := s.start("kube-scheduler", "kube-scheduler", []string{
		"--kubeconfig=" + kc,
		"--leader-elect=false",
		"--bind-address=127.0.0.1",
		fmt.Sprintf("--secure-port=%d", port),
		"--cert-dir=" + filepath.Join(s.dir, "certs", "kube-scheduler"),
		"--v=1",
	}, nil)
	if err != nil {
		return err
	}
	s.schedulers = append(s.schedulers, p)
	return harness.WaitHTTP(ctx, p, harness.InsecureHTTP(), "https://"+harness.HostPort(port)+"/healthz", "", readyTimeout)
}
