package integration

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"k8s.io/client-go/rest"

	"github.com/rdmatopo/rdmatopo/internal/testing/harness"
)

// Deadlines for bringing components up.
const (
	// etcdReadyTimeout bounds the wait for etcd's /health.
	etcdReadyTimeout = 60 * time.Second
	// apiserverReadyTimeout bounds the wait for kube-apiserver's /readyz.
	apiserverReadyTimeout = 120 * time.Second
	// componentReadyTimeout bounds the wait for a controller's health or
	// readiness endpoint.
	componentReadyTimeout = 120 * time.Second
)

// Identities in the API server's static token file.
const (
	// adminUser is in system:masters; tests and controllers use it.
	adminUser = "rdmatopo-it-admin"
	// schedulerUser is the ServiceAccount the stock Deployment runs the
	// scheduler as. The scheduler gets only the stock volcano-scheduler
	// ClusterRole plus config/rbac, so missing permissions fail the tests.
	schedulerUser = "system:serviceaccount:volcano-system:volcano-scheduler"
)

// Env is a running control plane with Volcano, the training operator,
// Kubeflow Trainer with JobSet and kube-controller-manager's Job controller,
// and rdmatopo's scheduler, plus clients for the tests.
type Env struct {
	// Dir holds everything the run writes: data, certificates, kubeconfigs
	// and the components' logs.
	Dir string
	// BinDir holds the binaries (see hack/build-tools.sh).
	BinDir string
	// RepoRoot is the root of the rdmatopo module.
	RepoRoot string

	// Clients (Kube, Volcano, Katalyst, Dynamic and their Config) talk
	// to the API server as the admin user.
	harness.Clients

	adminKubeconfig     string
	schedulerKubeconfig string
	etcdURL             string
	serverURL           string
	// schedulerMetrics is the current scheduler's /metrics URL.
	schedulerMetrics string
	adminToken       string

	etcd        *harness.Process
	apiserver   *harness.Process
	controllers *harness.Process
	scheduler   *harness.Process
	operator    *harness.Process
	kcm         *harness.Process
	jobset      *harness.Process
	trainer     *harness.Process
	// webhookCerts is what the JobSet and Trainer webhook servers serve.
	webhookCerts webhookCerts
	// procs is every process started, in start order, for logs and stop.
	procs harness.Group
	// removeWebhookCertDir is set when this run created the training
	// operator's fixed certificate directory and must remove it.
	removeWebhookCertDir bool
}

// binary returns the path of a built tool.
func (e *Env) binary(name string) string {
	return filepath.Join(e.BinDir, name)
}

// start launches and registers a component.
func (e *Env) start(spec harness.Spec) (*harness.Process, error) {
	return e.procs.Start(spec)
}

// Stop stops every component, newest first, and removes what the run put
// outside its directory.
func (e *Env) Stop() {
	e.procs.Stop()
	if e.removeWebhookCertDir {
		_ = os.RemoveAll(filepath.Dir(webhookCertDir))
	}
}

// LogTails returns the last lines of every component's log.
func (e *Env) LogTails(lines int) string {
	return e.procs.LogTails(lines)
}

// Alive returns an error for every component that has exited unexpectedly.
func (e *Env) Alive() error {
	var errs []error
	for _, p := range []*harness.Process{e.etcd, e.apiserver, e.controllers, e.scheduler, e.operator, e.kcm, e.jobset, e.trainer} {
		if p != nil {
			errs = append(errs, p.Alive())
		}
	}
	return errors.Join(errs...)
}

// StartEnv builds nothing: it expects the binaries in binDir and brings up
// the whole stack. On error the returned Env (never nil) still holds what
// was started, for its logs and Stop.
func StartEnv(ctx context.Context, binDir, repoRoot string) (*Env, error) {
	dir, err := os.MkdirTemp("", "rdmatopo-it-")
	if err != nil {
		return &Env{}, err
	}
	e := &Env{Dir: dir, BinDir: binDir, RepoRoot: repoRoot, procs: harness.Group{LogDir: filepath.Join(dir, "logs")}}
	for _, sub := range []string{"logs", "etcd", "certs", "klog-socks"} {
		if err := os.MkdirAll(filepath.Join(dir, sub), 0o755); err != nil {
			return e, err
		}
	}
	if e.webhookCerts, err = writeWebhookCerts(filepath.Join(dir, "certs", "webhook")); err != nil {
		return e, err
	}
	steps := []harness.Step{
		{Name: "etcd", Run: e.startEtcd},
		{Name: "kube-apiserver", Run: e.startAPIServer},
		{Name: "clients", Run: e.makeClients},
		{Name: "CRDs", Run: e.installCRDs},
		{Name: "cluster objects", Run: e.createClusterObjects},
		{Name: "vc-controller-manager", Run: e.startControllers},
		{Name: "vc-scheduler", Run: e.StartScheduler},
		{Name: "training-operator", Run: e.startOperator},
		{Name: "kube-controller-manager", Run: e.startKubeControllerManager},
		{Name: "jobset-controller", Run: e.startJobSet},
		{Name: "trainer-controller-manager", Run: e.startTrainer},
	}
	return e, harness.RunSteps(ctx, steps, func(name string, took time.Duration) {
		fmt.Fprintf(os.Stderr, "integration: %s ready in %s\n", name, took)
	})
}

func (e *Env) startEtcd(ctx context.Context) (err error) {
	e.etcd, e.etcdURL, err = e.procs.StartEtcd(ctx, harness.EtcdSpec{
		Binary:  e.binary("etcd"),
		DataDir: filepath.Join(e.Dir, "etcd"),
		Timeout: etcdReadyTimeout,
	})
	return err
}

func (e *Env) startAPIServer(ctx context.Context) error {
	admin := harness.User{Name: adminUser, UID: "uid-admin", Groups: []string{"system:masters"}, Token: harness.RandomToken()}
	scheduler := harness.User{Name: schedulerUser, UID: "uid-volcano-scheduler",
		Groups: []string{"system:serviceaccounts", "system:serviceaccounts:volcano-system"}, Token: harness.RandomToken()}
	a, err := e.procs.StartAPIServer(ctx, harness.APIServerSpec{
		Binary:    e.binary("kube-apiserver"),
		CertDir:   filepath.Join(e.Dir, "certs"),
		EtcdURL:   e.etcdURL,
		Users:     []harness.User{admin, scheduler},
		ExtraArgs: []string{"--enable-priority-and-fairness=false"},
		Timeout:   apiserverReadyTimeout,
	})
	if a != nil {
		e.apiserver, e.serverURL = a.Process, a.URL
	}
	if err != nil {
		return err
	}
	e.adminToken = admin.Token
	if e.adminKubeconfig, err = a.Kubeconfig("admin", admin); err != nil {
		return err
	}
	e.schedulerKubeconfig, err = a.Kubeconfig("scheduler", scheduler)
	return err
}

func (e *Env) makeClients(context.Context) (err error) {
	e.Clients, err = harness.NewClients(e.adminKubeconfig, func(cfg *rest.Config) {
		cfg.QPS, cfg.Burst = 200, 400
		cfg.WarningHandler = templateWarningFilter{}
	})
	return err
}

func (e *Env) startControllers(ctx context.Context) error {
	healthPort, err := harness.FreePort()
	if err != nil {
		return err
	}
	e.controllers, err = e.start(harness.Spec{
		Name: "vc-controller-manager",
		Path: e.binary("vc-controller-manager"),
		Args: []string{
			"--kubeconfig=" + e.adminKubeconfig,
			"--leader-elect=false",
			"--enable-healthz=true",
			"--healthz-address=" + harness.HostPort(healthPort),
			"--logtostderr",
			"-v=2",
		},
		Env: []string{"DEBUG_SOCKET_DIR=" + filepath.Join(e.Dir, "klog-socks")},
	})
	if err != nil {
		return err
	}
	return harness.WaitHTTP(ctx, e.controllers, http.DefaultClient, "http://"+harness.HostPort(healthPort)+"/healthz", "", componentReadyTimeout)
}

// templateWarningFilter drops the API server's warning about the null
// creationTimestamp that the typed VolcanoJob client serializes in every pod
// template (the field is pruned, nothing is lost) and prints any other
// warning.
type templateWarningFilter struct{}

// HandleWarningHeader implements rest.WarningHandler.
func (templateWarningFilter) HandleWarningHeader(code int, agent, text string) {
	if strings.HasPrefix(text, "unknown field") && strings.HasSuffix(text, ".template.metadata.creationTimestamp\"") {
		return
	}
	rest.WarningLogger{}.HandleWarningHeader(code, agent, text)
}

// SchedulerConf is the scheduler conf the tests run with: the project's
// shipped config/volcano-scheduler.conf.
func (e *Env) SchedulerConf() string {
	return filepath.Join(e.RepoRoot, "config", "volcano-scheduler.conf")
}

// StartScheduler starts rdmatopo's vc-scheduler (again, after
// StopScheduler) and waits for its health endpoint.
func (e *Env) StartScheduler(ctx context.Context) error {
	return e.StartSchedulerConf(ctx, e.SchedulerConf())
}

// StartSchedulerConf is StartScheduler with another scheduler conf.
func (e *Env) StartSchedulerConf(ctx context.Context, conf string) error {
	if e.scheduler != nil {
		if gone, _ := e.scheduler.Exited(); !gone {
			return errors.New("vc-scheduler is already running")
		}
	}
	p, metrics, err := e.procs.StartVCScheduler(ctx, harness.VCScheduler{
		Name:       "vc-scheduler",
		Binary:     e.binary("vc-scheduler"),
		Kubeconfig: e.schedulerKubeconfig,
		Conf:       conf,
		Verbosity:  3,
		Env:        []string{"DEBUG_SOCKET_DIR=" + filepath.Join(e.Dir, "klog-socks")},
		Timeout:    componentReadyTimeout,
	})
	e.scheduler, e.schedulerMetrics = p, "http://"+metrics+"/metrics"
	return err
}

// cyclesMetric counts the scheduler's completed scheduling cycles (the
// count of Volcano's end-to-end latency histogram, observed once per cycle).
const cyclesMetric = "volcano_e2e_scheduling_latency_milliseconds_count"

// SchedulerCycles returns how many scheduling cycles the running scheduler
// has completed.
func (e *Env) SchedulerCycles(ctx context.Context) (int64, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, e.schedulerMetrics, nil)
	if err != nil {
		return 0, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(body), "\n") {
		if rest, ok := strings.CutPrefix(line, cyclesMetric+" "); ok {
			v, err := strconv.ParseFloat(strings.TrimSpace(rest), 64)
			if err != nil {
				return 0, fmt.Errorf("%s: %q: %w", e.schedulerMetrics, line, err)
			}
			return int64(v), nil
		}
	}
	// No cycle has finished yet: the histogram has no samples.
	return 0, nil
}

// StopScheduler stops the scheduler and waits until it has exited.
func (e *Env) StopScheduler() {
	if e.scheduler != nil {
		e.scheduler.Stop()
	}
}
