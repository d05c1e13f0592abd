package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"time"

	katalystclient "github.com/kubewharf/katalyst-api/pkg/client/clientset/versioned"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	schedulingv1beta1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"
	vcclient "volcano.sh/apis/pkg/client/clientset/versioned"
)

// Identities in the API server's static token file.
const (
	adminUser = "rdmatopo-e2e-admin"
	// schedulerUser is the ServiceAccount the stock Deployment runs the
	// scheduler as; it gets Volcano's stock ClusterRole plus config/rbac.
	schedulerUser = "system:serviceaccount:volcano-system:volcano-scheduler"
)

// Modules whose files the stack reads: CRDs, RBAC and kwok's stages.
const (
	volcanoModule  = "volcano.sh/volcano"
	katalystModule = "github.com/kubewharf/katalyst-api"
	kwokModule     = "sigs.k8s.io/kwok"
)

// readyTimeout bounds the wait for one component to come up.
const readyTimeout = 2 * time.Minute

// stack is one fresh control plane: etcd, kube-apiserver (default flow
// control, an audit log of the scheduler's requests), Volcano's
// controllers and kwok. The scheduler under test is started on it.
type stack struct {
	dir, binDir, repoRoot string

	kube     kubernetes.Interface
	volcano  vcclient.Interface
	katalyst katalystclient.Interface
	dynamic  dynamic.Interface
	config   *rest.Config

	etcdURL, serverURL, adminToken string
	kueueToken, kubeSchedulerToken string
	adminKubeconfig                string
	schedulerKubeconfig            string
	auditLog                       string

	etcd, apiserver, controllers, kwok, scheduler *process
	all                                           []*process
	// schedulers are the processes under test whose CPU and memory the
	// run reports: the vc-scheduler, or Kueue and kube-scheduler.
	schedulers []*process
}

// newStack brings up a control plane in a fresh directory under parent.
func newStack(ctx context.Context, parent, name, binDir, repoRoot string, o options) (*stack, error) {
	dir := filepath.Join(parent, name)
	s := &stack{dir: dir, binDir: binDir, repoRoot: repoRoot}
	for _, sub := range []string{"logs", "etcd", "certs"} {
		if err := os.MkdirAll(filepath.Join(dir, sub), 0o755); err != nil {
			return s, err
		}
	}
	steps := []struct {
		name string
		run  func(context.Context) error
	}{
		{"etcd", s.startEtcd},
		{"kube-apiserver", s.startAPIServer},
		{"clients", s.makeClients},
		{"CRDs", s.installCRDs},
		{"cluster objects", s.createClusterObjects},
		{"vc-controller-manager", func(ctx context.Context) error { return s.startControllers(ctx, o) }},
		{"kwok", s.startKwok},
	}
	for _, st := range steps {
		start := time.Now()
		if err := st.run(ctx); err != nil {
			return s, fmt.Errorf("%s: start %s: %w", name, st.name, err)
		}
		logf("%s: %s ready in %s", name, st.name, time.Since(start).Round(time.Millisecond))
	}
	return s, nil
}

func (s *stack) start(name, bin string, args, env []string) (*process, error) {
	p, err := startProcess(filepath.Join(s.dir, "logs"), name, filepath.Join(s.binDir, bin), args, env)
	if err != nil {
		return nil, err
	}
	s.all = append(s.all, p)
	return p, nil
}

// stop ends every component, newest first.
func (s *stack) stop() {
	for i := len(s.all) - 1; i >= 0; i-- {
		s.all[i].stop()
	}
}

// alive reports components that exited.
func (s *stack) alive() error {
	var errs []error
	for _, p := range s.all {
		errs = append(errs, p.alive())
	}
	return errors.Join(errs...)
}

// logTails returns the end of every component's log.
func (s *stack) logTails(n int) string {
	var b strings.Builder
	for _, p := range s.all {
		fmt.Fprintf(&b, "----- %s (%s) -----\n%s\n", p.name, p.logPath, p.tail(n))
	}
	return b.String()
}

func (s *stack) startEtcd(ctx context.Context) error {
	cp, err := freePort()
	if err != nil {
		return err
	}
	pp, err := freePort()
	if err != nil {
		return err
	}
	client, peer := "http://"+hostPort(cp), "http://"+hostPort(pp)
	s.etcd, err = s.start("etcd", "etcd", []string{
		"--name=default",
		"--data-dir=" + filepath.Join(s.dir, "etcd"),
		"--listen-client-urls=" + client,
		"--advertise-client-urls=" + client,
		"--listen-peer-urls=" + peer,
		"--initial-advertise-peer-urls=" + peer,
		"--initial-cluster=default=" + peer,
		"--unsafe-no-fsync",
		"--quota-backend-bytes=8589934592",
		"--log-level=warn",
	}, nil)
	if err != nil {
		return err
	}
	s.etcdURL = client
	return waitHTTP(ctx, s.etcd, http.DefaultClient, client+"/health", "")
}

// auditPolicy records every request of the schedulers' users (the
// vc-scheduler's; Kueue's and kube-scheduler's), once, when its response is
// complete (watches: when it starts); nothing else.
const auditPolicy = `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived"]
rules:
- level: Metadata
  users: ["` + schedulerUser + `", "` + kueueUser + `", "` + kubeSchedulerUser + `"]
- level: None
`

func (s *stack) startAPIServer(ctx context.Context) error {
	port, err := freePort()
	if err != nil {
		return err
	}
	certs := filepath.Join(s.dir, "certs")
	keyFile, pubFile, err := writeServiceAccountKeys(certs)
	if err != nil {
		return err
	}
	s.adminToken = randomToken()
	schedulerToken := randomToken()
	s.kueueToken, s.kubeSchedulerToken = randomToken(), randomToken()
	tokens := filepath.Join(certs, "tokens.csv")
	lines := fmt.Sprintf("%s,%s,%s,\"system:masters\"\n%s,%s,%s,\"system:serviceaccounts,system:serviceaccounts:volcano-system\"\n",
		s.adminToken, adminUser, "uid-admin", schedulerToken, schedulerUser, "uid-volcano-scheduler") +
		fmt.Sprintf("%s,%s,%s,\"system:serviceaccounts,system:serviceaccounts:%s\"\n%s,%s,%s\n",
			s.kueueToken, kueueUser, "uid-kueue", kueueNamespace, s.kubeSchedulerToken, kubeSchedulerUser, "uid-kube-scheduler")
	if err := os.WriteFile(tokens, []byte(lines), 0o600); err != nil {
		return err
	}
	policy := filepath.Join(certs, "audit-policy.yaml")
	if err := os.WriteFile(policy, []byte(auditPolicy), 0o644); err != nil {
		return err
	}
	s.auditLog = filepath.Join(s.dir, "logs", "audit.jsonl")
	// Flow control (API Priority and Fairness) and the in-flight limits
	// are the API server's defaults: the scheduler's ServiceAccount falls
	// in the stock "service-accounts" flow schema, as in a real cluster.
	s.apiserver, err = s.start("kube-apiserver", "kube-apiserver", []string{
		"--etcd-servers=" + s.etcdURL,
		"--bind-address=127.0.0.1",
		fmt.Sprintf("--secure-port=%d", port),
		"--cert-dir=" + filepath.Join(certs, "apiserver"),
		"--token-auth-file=" + tokens,
		"--authorization-mode=RBAC",
		"--service-account-key-file=" + pubFile,
		"--service-account-signing-key-file=" + keyFile,
		"--service-account-issuer=https://kubernetes.default.svc.cluster.local",
		"--service-cluster-ip-range=10.0.0.0/24",
		"--disable-admission-plugins=ServiceAccount,TaintNodesByCondition",
		"--audit-policy-file=" + policy,
		"--audit-log-path=" + s.auditLog,
		"--audit-log-format=json",
		"--audit-log-maxsize=0",
		"--profiling=false",
	}, nil)
	if err != nil {
		return err
	}
	s.serverURL = "https://" + hostPort(port)
	if err := waitHTTP(ctx, s.apiserver, insecureHTTP(), s.serverURL+"/readyz", s.adminToken); err != nil {
		return err
	}
	s.adminKubeconfig = filepath.Join(certs, "admin.kubeconfig")
	if err := writeKubeconfig(s.adminKubeconfig, s.serverURL, adminUser, s.adminToken); err != nil {
		return err
	}
	s.schedulerKubeconfig = filepath.Join(certs, "scheduler.kubeconfig")
	return writeKubeconfig(s.schedulerKubeconfig, s.serverURL, "volcano-scheduler", schedulerToken)
}

func (s *stack) makeClients(context.Context) error {
	cfg, err := clientcmd.BuildConfigFromFlags("", s.adminKubeconfig)
	if err != nil {
		return err
	}
	cfg.QPS, cfg.Burst = 1000, 2000
	cfg.UserAgent = "rdmatopo-bench-e2e"
	cfg.WarningHandler = rest.NoWarnings{}
	s.config = cfg
	if s.kube, err = kubernetes.NewForConfig(cfg); err != nil {
		return err
	}
	if s.volcano, err = vcclient.NewForConfig(cfg); err != nil {
		return err
	}
	if s.katalyst, err = katalystclient.NewForConfig(cfg); err != nil {
		return err
	}
	s.dynamic, err = dynamic.NewForConfig(cfg)
	return err
}

var crdGVR = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

// installCRDs installs Volcano's CRDs (vc-controller-manager waits for
// its JobFlow informers too) and katalyst's CustomNodeResource from
// their modules and waits until they are served.
func (s *stack) installCRDs(ctx context.Context) error {
	volcano, err := moduleDir(ctx, s.repoRoot, volcanoModule)
	if err != nil {
		return err
	}
	katalyst, err := moduleDir(ctx, s.repoRoot, katalystModule)
	if err != nil {
		return err
	}
	var files []string
	for _, sub := range []string{"volcano", "jobflow"} {
		m, err := filepath.Glob(filepath.Join(volcano, "config", "crd", sub, "bases", "*.yaml"))
		if err != nil || len(m) == 0 {
			return fmt.Errorf("no Volcano %s CRDs under %s (%v)", sub, volcano, err)
		}
		files = append(files, m...)
	}
	files = append(files, filepath.Join(katalyst, "config", "crd", "bases", "node.katalyst.kubewharf.io_customnoderesources.yaml"))
	return s.installCRDFiles(ctx, files)
}

// installCRDFiles creates the CRDs of the files and waits until they are
// established.
func (s *stack) installCRDFiles(ctx context.Context, files []string) error {
	var names []string
	for _, f := range files {
		objs, err := readManifests(f)
		if err != nil {
			return err
		}
		for _, o := range objs {
			if _, err := s.dynamic.Resource(crdGVR).Create(ctx, o, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
				return fmt.Errorf("%s: create CRD %s: %w", f, o.GetName(), err)
			}
			names = append(names, o.GetName())
		}
	}
	sort.Strings(names)
	deadline := time.Now().Add(readyTimeout)
	for _, name := range names {
		for {
			crd, err := s.dynamic.Resource(crdGVR).Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			if established(crd) {
				break
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("CRD %s not established", name)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	return nil
}

func established(crd *unstructured.Unstructured) bool {
	conds, _, _ := unstructured.NestedSlice(crd.Object, "status", "conditions")
	for _, c := range conds {
		if m, _ := c.(map[string]interface{}); m["type"] == "Established" && m["status"] == "True" {
			return true
		}
	}
	return false
}

// createClusterObjects creates the default Queue, the namespaces and the
// scheduler's RBAC: Volcano's stock ClusterRole and binding plus
// config/rbac.
func (s *stack) createClusterObjects(ctx context.Context) error {
	reclaimable := true
	queue := &schedulingv1beta1.Queue{
		ObjectMeta: metav1.ObjectMeta{Name: "default"},
		Spec:       schedulingv1beta1.QueueSpec{Weight: 1, Reclaimable: &reclaimable},
	}
	if _, err := s.volcano.SchedulingV1beta1().Queues().Create(ctx, queue, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create Queue default: %w", err)
	}
	for _, ns := range []string{"volcano-system", preboundNamespace} {
		obj := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}
		if _, err := s.kube.CoreV1().Namespaces().Create(ctx, obj, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("create Namespace %s: %w", ns, err)
		}
	}
	volcano, err := moduleDir(ctx, s.repoRoot, volcanoModule)
	if err != nil {
		return err
	}
	installer := filepath.Join(volcano, "installer", "volcano-development.yaml")
	stock, err := readManifests(installer)
	if err != nil {
		return err
	}
	want := map[string]bool{"ClusterRole/volcano-scheduler": true, "ClusterRoleBinding/volcano-scheduler-role": true}
	var objs []*unstructured.Unstructured
	for _, o := range stock {
		if k := o.GetKind() + "/" + o.GetName(); want[k] {
			objs = append(objs, o)
			delete(want, k)
		}
	}
	if len(want) > 0 {
		return fmt.Errorf("%s: missing %v", installer, want)
	}
	ours, err := readManifests(filepath.Join(s.repoRoot, "config", "rbac", "rbac.yaml"))
	if err != nil {
		return err
	}
	return s.create(ctx, append(objs, ours...))
}

// create creates objects through the dynamic client.
func (s *stack) create(ctx context.Context, objs []*unstructured.Unstructured) error {
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(s.kube.Discovery()))
	for _, o := range objs {
		gvk := o.GroupVersionKind()
		m, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
		if err != nil {
			return fmt.Errorf("%s %s: %w", gvk.Kind, o.GetName(), err)
		}
		res := s.dynamic.Resource(m.Resource)
		if m.Scope.Name() == meta.RESTScopeNameNamespace {
			ns := o.GetNamespace()
			if ns == "" {
				ns = metav1.NamespaceDefault
			}
			_, err = res.Namespace(ns).Create(ctx, o, metav1.CreateOptions{})
		} else {
			_, err = res.Create(ctx, o, metav1.CreateOptions{})
		}
		if err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("create %s %s: %w", gvk.Kind, o.GetName(), err)
		}
	}
	return nil
}

func (s *stack) startControllers(ctx context.Context, o options) error {
	hp, err := freePort()
	if err != nil {
		return err
	}
	s.controllers, err = s.start("vc-controller-manager", "vc-controller-manager", []string{
		"--kubeconfig=" + s.adminKubeconfig,
		"--leader-elect=false",
		"--enable-healthz=true",
		"--healthz-address=" + hostPort(hp),
		fmt.Sprintf("--kube-api-qps=%d", o.controllerQPS),
		fmt.Sprintf("--kube-api-burst=%d", 2*o.controllerQPS),
		"--logtostderr",
		"-v=1",
	}, nil)
	if err != nil {
		return err
	}
	return waitHTTP(ctx, s.controllers, http.DefaultClient, "http://"+hostPort(hp)+"/healthz", "")
}

// kwokStages are kwok's own stage files (from its module) the fake nodes
// and pods go through: a node becomes Ready once, a bound pod becomes
// Running. There are no heartbeats and no node leases: nothing in the
// stack marks a silent node NotReady, and at thousands of nodes they
// would be most of the API server's load.
var kwokStages = []string{
	"kustomize/stage/node/fast/node-initialize.yaml",
	"kustomize/stage/pod/fast/pod-ready.yaml",
}

func (s *stack) startKwok(ctx context.Context) error {
	dir, err := moduleDir(ctx, filepath.Join(s.repoRoot, "integration", "tools", "kwok"), kwokModule)
	if err != nil {
		return err
	}
	port, err := freePort()
	if err != nil {
		return err
	}
	args := []string{
		"--kubeconfig=" + s.adminKubeconfig,
		"--manage-all-nodes=true",
		"--node-lease-duration-seconds=0",
		"--server-address=" + hostPort(port),
		"--node-ip=127.0.0.1",
	}
	for _, st := range kwokStages {
		args = append(args, "--config="+filepath.Join(dir, st))
	}
	s.kwok, err = s.start("kwok", "kwok", args, nil)
	if err != nil {
		return err
	}
	return waitHTTP(ctx, s.kwok, http.DefaultClient, "http://"+hostPort(port)+"/healthz", "")
}

// schedulerSpec is the scheduler under test.
type schedulerSpec struct {
	// binary in the tool directory; conf is the scheduler conf file.
	binary, conf string
	// extraArgs and env are added to its command line and environment.
	extraArgs, env []string
	// kueue runs Kueue with kube-scheduler instead of a vc-scheduler.
	kueue bool
}

// startScheduler starts the scheduler under test and waits for its health
// endpoint.
func (s *stack) startScheduler(ctx context.Context, spec schedulerSpec) error {
	hp, err := freePort()
	if err != nil {
		return err
	}
	mp, err := freePort()
	if err != nil {
		return err
	}
	args := append([]string{
		"--kubeconfig=" + s.schedulerKubeconfig,
		"--scheduler-conf=" + spec.conf,
		"--scheduler-name=volcano",
		"--leader-elect=false",
		"--enable-healthz=true",
		"--healthz-address=" + hostPort(hp),
		"--enable-metrics=true",
		"--listen-address=" + hostPort(mp),
		"--logtostderr",
		"-v=1",
	}, spec.extraArgs...)
	s.scheduler, err = s.start("scheduler", spec.binary, args, append([]string{"DEBUG_SOCKET_DIR=" + filepath.Join(s.dir, "logs")}, spec.env...))
	if err != nil {
		return err
	}
	s.schedulers = append(s.schedulers, s.scheduler)
	return waitHTTP(ctx, s.scheduler, http.DefaultClient, "http://"+hostPort(hp)+"/healthz", "")
}

// metrics returns the API server's /metrics text.
func (s *stack) metrics(ctx context.Context) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.serverURL+"/metrics", nil)
	if err != nil {
		return "", err
	}
	req.Header.Set("Authorization", "Bearer "+s.adminToken)
	c := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	resp, err := c.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("GET /metrics: %s", resp.Status)
	}
	return string(b), err
}

// insecureHTTP is a client for the components' self-signed endpoints on
// loopback.
func insecureHTTP() *http.Client {
	return &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
}

// waitHTTP polls url until it answers 200, the process exits or
// readyTimeout passes.
func waitHTTP(ctx context.Context, p *process, client *http.Client, url, token string) error {
	ctx, cancel := context.WithTimeout(ctx, readyTimeout)
	defer cancel()
	var last string
	for {
		if err := p.alive(); err != nil {
			return err
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return err
		}
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := client.Do(req)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			last = resp.Status
		} else {
			last = err.Error()
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s not ready at %s: %s", p.name, url, last)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

func writeServiceAccountKeys(dir string) (keyFile, pubFile string, err error) {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return "", "", err
	}
	pub, err := x509.MarshalPKIXPublicKey(&key.PublicKey)
	if err != nil {
		return "", "", err
	}
	keyFile, pubFile = filepath.Join(dir, "sa.key"), filepath.Join(dir, "sa.pub")
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)}), 0o600); err != nil {
		return "", "", err
	}
	return keyFile, pubFile, os.WriteFile(pubFile, pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pub}), 0o644)
}

// writeKubeconfig writes a kubeconfig for a token user; the server's
// certificate is self-signed and on loopback, so it is not verified.
func writeKubeconfig(path, server, user, token string) error {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["e2e"] = &clientcmdapi.Cluster{Server: server, InsecureSkipTLSVerify: true}
	cfg.AuthInfos[user] = &clientcmdapi.AuthInfo{Token: token}
	cfg.Contexts["e2e"] = &clientcmdapi.Context{Cluster: "e2e", AuthInfo: user}
	cfg.CurrentContext = "e2e"
	return clientcmd.WriteToFile(*cfg, path)
}

func randomToken() string {
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		panic(err)
	}
	return hex.EncodeToString(b)
}

// moduleDir returns a module's directory in the module cache as seen from
// the module rooted at dir, downloading it if needed.
func moduleDir(ctx context.Context, dir, module string) (string, error) {
	for range 2 {
		cmd := exec.CommandContext(ctx, "go", "list", "-m", "-f", "{{.Dir}}", module)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GOWORK=off")
		out, err := cmd.CombinedOutput()
		if err != nil {
			return "", fmt.Errorf("go list -m %s in %s: %v: %s", module, dir, err, out)
		}
		if d := strings.TrimSpace(string(out)); d != "" {
			return d, nil
		}
		dl := exec.CommandContext(ctx, "go", "mod", "download", module)
		dl.Dir, dl.Env = dir, cmd.Env
		if out, err := dl.CombinedOutput(); err != nil {
			return "", fmt.Errorf("go mod download %s in %s: %v: %s", module, dir, err, out)
		}
	}
	return "", fmt.Errorf("module %s has no directory as seen from %s", module, dir)
}

// readManifests decodes every object of a multi-document YAML file.
func readManifests(path string) ([]*unstructured.Unstructured, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	var out []*unstructured.Unstructured
	for {
		var obj map[string]interface{}
		if err := dec.Decode(&obj); err != nil {
			if errors.Is(err, io.EOF) {
				return out, nil
			}
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		if len(obj) == 0 {
			continue
		}
		u := &unstructured.Unstructured{Object: obj}
		if u.GetKind() == "" {
			return nil, fmt.Errorf("%s: object without kind", path)
		}
		out = append(out, u)
	}
}
