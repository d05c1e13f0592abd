package main

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"

	"github.com/rdmatopo/rdmatopo/internal/testing/harness"
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

	// Clients talk to the API server as the admin user.
	harness.Clients

	etcdURL, serverURL, adminToken string
	kueueToken, kubeSchedulerToken string
	companionToken                 string
	adminKubeconfig                string
	schedulerKubeconfig            string
	auditLog                       string

	etcd, apiserver, controllers, kwok, scheduler *harness.Process
	companion                                     *harness.CompanionProcess
	procs                                         harness.Group
	// schedulers are the processes under test whose CPU and memory the
	// run reports: the vc-scheduler, or Kueue and kube-scheduler; the
	// companion beside either.
	schedulers []*harness.Process
}

// newStack brings up a control plane in a fresh directory under parent.
func newStack(ctx context.Context, parent, name, binDir, repoRoot string, o options) (*stack, error) {
	dir := filepath.Join(parent, name)
	s := &stack{dir: dir, binDir: binDir, repoRoot: repoRoot, procs: harness.Group{LogDir: filepath.Join(dir, "logs")}}
	for _, sub := range []string{"logs", "etcd", "certs"} {
		if err := os.MkdirAll(filepath.Join(dir, sub), 0o755); err != nil {
			return s, err
		}
	}
	steps := []harness.Step{
		{Name: "etcd", Run: s.startEtcd},
		{Name: "kube-apiserver", Run: s.startAPIServer},
		{Name: "clients", Run: s.makeClients},
		{Name: "CRDs", Run: s.installCRDs},
		{Name: "cluster objects", Run: s.createClusterObjects},
		{Name: "vc-controller-manager", Run: func(ctx context.Context) error { return s.startControllers(ctx, o) }},
		{Name: "kwok", Run: s.startKwok},
	}
	if err := harness.RunSteps(ctx, steps, func(step string, took time.Duration) {
		logf("%s: %s ready in %s", name, step, took)
	}); err != nil {
		return s, fmt.Errorf("%s: %w", name, err)
	}
	return s, nil
}

func (s *stack) start(name, bin string, args, env []string) (*harness.Process, error) {
	return s.procs.Start(harness.Spec{Name: name, Path: filepath.Join(s.binDir, bin), Args: args, Env: env})
}

// stop ends every component, newest first.
func (s *stack) stop() { s.procs.Stop() }

// alive reports components that exited.
func (s *stack) alive() error { return s.procs.Alive() }

// logTails returns the end of every component's log.
func (s *stack) logTails(n int) string { return s.procs.LogTails(n) }

func (s *stack) startEtcd(ctx context.Context) (err error) {
	s.etcd, s.etcdURL, err = s.procs.StartEtcd(ctx, harness.EtcdSpec{
		Binary:    filepath.Join(s.binDir, "etcd"),
		DataDir:   filepath.Join(s.dir, "etcd"),
		ExtraArgs: []string{"--quota-backend-bytes=8589934592"},
		Timeout:   readyTimeout,
	})
	return err
}

// auditPolicy records every request of the schedulers' users (the
// vc-scheduler's; Kueue's and kube-scheduler's; the companion's), once, when its response is
// complete (watches: when it starts); nothing else.
const auditPolicy = `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived"]
rules:
- level: Metadata
  users: ["` + schedulerUser + `", "` + kueueUser + `", "` + kubeSchedulerUser + `", "` + companionUser + `"]
- level: None
`

func (s *stack) startAPIServer(ctx context.Context) error {
	certs := filepath.Join(s.dir, "certs")
	admin := harness.User{Name: adminUser, UID: "uid-admin", Groups: []string{"system:masters"}, Token: harness.RandomToken()}
	scheduler := harness.User{Name: schedulerUser, UID: "uid-volcano-scheduler",
		Groups: []string{"system:serviceaccounts", "system:serviceaccounts:volcano-system"}, Token: harness.RandomToken()}
	kueue := harness.User{Name: kueueUser, UID: "uid-kueue",
		Groups: []string{"system:serviceaccounts", "system:serviceaccounts:" + kueueNamespace}, Token: harness.RandomToken()}
	kubeScheduler := harness.User{Name: kubeSchedulerUser, UID: "uid-kube-scheduler", Token: harness.RandomToken()}
	companion := harness.User{Name: companionUser, UID: "uid-companion", Groups: []string{"system:masters"}, Token: harness.RandomToken()}
	policy := filepath.Join(certs, "audit-policy.yaml")
	if err := os.WriteFile(policy, []byte(auditPolicy), 0o644); err != nil {
		return err
	}
	s.auditLog = filepath.Join(s.dir, "logs", "audit.jsonl")
	// Flow control (API Priority and Fairness) and the in-flight limits
	// are the API server's defaults: the scheduler's ServiceAccount falls
	// in the stock "service-accounts" flow schema, as in a real cluster.
	a, err := s.procs.StartAPIServer(ctx, harness.APIServerSpec{
		Binary:  filepath.Join(s.binDir, "kube-apiserver"),
		CertDir: certs,
		EtcdURL: s.etcdURL,
		Users:   []harness.User{admin, scheduler, kueue, kubeScheduler, companion},
		ExtraArgs: []string{
			"--audit-policy-file=" + policy,
			"--audit-log-path=" + s.auditLog,
			"--audit-log-format=json",
			"--audit-log-maxsize=0",
		},
		Timeout: readyTimeout,
	})
	if a != nil {
		s.apiserver, s.serverURL = a.Process, a.URL
	}
	if err != nil {
		return err
	}
	s.adminToken, s.kueueToken, s.kubeSchedulerToken = admin.Token, kueue.Token, kubeScheduler.Token
	s.companionToken = companion.Token
	if s.adminKubeconfig, err = a.Kubeconfig("admin", admin); err != nil {
		return err
	}
	s.schedulerKubeconfig, err = a.Kubeconfig("scheduler", scheduler)
	return err
}

func (s *stack) makeClients(context.Context) (err error) {
	s.Clients, err = harness.NewClients(s.adminKubeconfig, func(cfg *rest.Config) {
		cfg.QPS, cfg.Burst = 1000, 2000
		cfg.UserAgent = "rdmatopo-bench-e2e"
		cfg.WarningHandler = rest.NoWarnings{}
	})
	return err
}

// installCRDs installs Volcano's CRDs (vc-controller-manager waits for
// its JobFlow informers too) and katalyst's CustomNodeResource from
// their modules and waits until they are served.
func (s *stack) installCRDs(ctx context.Context) error {
	volcano, err := harness.ModuleDir(ctx, s.repoRoot, harness.VolcanoModule)
	if err != nil {
		return err
	}
	katalyst, err := harness.ModuleDir(ctx, s.repoRoot, katalystModule)
	if err != nil {
		return err
	}
	files, err := harness.VolcanoCRDFiles(volcano)
	if err != nil {
		return err
	}
	files = append(files, filepath.Join(katalyst, "config", "crd", "bases", "node.katalyst.kubewharf.io_customnoderesources.yaml"))
	return s.installCRDFiles(ctx, files)
}

// installCRDFiles creates the CRDs of the files and waits until they are
// established.
func (s *stack) installCRDFiles(ctx context.Context, files []string) error {
	return harness.InstallCRDs(ctx, s.Dynamic, files, nil, readyTimeout)
}

// createClusterObjects creates the default Queue, the namespaces and the
// scheduler's RBAC: Volcano's stock ClusterRole and binding plus
// config/rbac.
func (s *stack) createClusterObjects(ctx context.Context) error {
	return s.CreateVolcanoBasics(ctx, s.repoRoot, preboundNamespace)
}

// create creates objects through the dynamic client.
func (s *stack) create(ctx context.Context, objs []*unstructured.Unstructured) error {
	return harness.CreateObjects(ctx, s.Kube.Discovery(), s.Dynamic, objs)
}

func (s *stack) startControllers(ctx context.Context, o options) error {
	hp, err := harness.FreePort()
	if err != nil {
		return err
	}
	s.controllers, err = s.start("vc-controller-manager", "vc-controller-manager", []string{
		"--kubeconfig=" + s.adminKubeconfig,
		"--leader-elect=false",
		"--enable-healthz=true",
		"--healthz-address=" + harness.HostPort(hp),
		fmt.Sprintf("--kube-api-qps=%d", o.controllerQPS),
		fmt.Sprintf("--kube-api-burst=%d", 2*o.controllerQPS),
		"--logtostderr",
		"-v=1",
	}, nil)
	if err != nil {
		return err
	}
	return harness.WaitHTTP(ctx, s.controllers, http.DefaultClient, "http://"+harness.HostPort(hp)+"/healthz", "", readyTimeout)
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
	dir, err := harness.ModuleDir(ctx, filepath.Join(s.repoRoot, "integration", "tools", "kwok"), kwokModule)
	if err != nil {
		return err
	}
	port, err := harness.FreePort()
	if err != nil {
		return err
	}
	args := []string{
		"--kubeconfig=" + s.adminKubeconfig,
		"--manage-all-nodes=true",
		"--node-lease-duration-seconds=0",
		"--server-address=" + harness.HostPort(port),
		"--node-ip=127.0.0.1",
	}
	for _, st := range kwokStages {
		args = append(args, "--config="+filepath.Join(dir, st))
	}
	s.kwok, err = s.start("kwok", "kwok", args, nil)
	if err != nil {
		return err
	}
	return harness.WaitHTTP(ctx, s.kwok, http.DefaultClient, "http://"+harness.HostPort(port)+"/healthz", "", readyTimeout)
}

// schedulerSpec is the scheduler under test.
type schedulerSpec struct {
	// binary in the tool directory; conf is the scheduler conf file.
	binary, conf string
	// extraArgs and env are added to its command line and environment.
	extraArgs, env []string
	// kueue runs Kueue with kube-scheduler instead of a vc-scheduler.
	kueue bool
	// companion runs `rdmatopo companion` beside it, its pods/binding
	// webhook installed.
	companion bool
}

// startScheduler starts the scheduler under test and waits for its health
// endpoint.
func (s *stack) startScheduler(ctx context.Context, spec schedulerSpec) (err error) {
	s.scheduler, _, err = s.procs.StartVCScheduler(ctx, harness.VCScheduler{
		Name:       "scheduler",
		Binary:     filepath.Join(s.binDir, spec.binary),
		Kubeconfig: s.schedulerKubeconfig,
		Conf:       spec.conf,
		Verbosity:  1,
		ExtraArgs:  spec.extraArgs,
		Env:        append([]string{"DEBUG_SOCKET_DIR=" + filepath.Join(s.dir, "logs")}, spec.env...),
		Timeout:    readyTimeout,
	})
	if s.scheduler != nil {
		s.schedulers = append(s.schedulers, s.scheduler)
	}
	return err
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
