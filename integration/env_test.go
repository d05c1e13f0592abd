package integration

import (
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
	"strconv"
	"strings"
	"time"

	katalystclient "github.com/kubewharf/katalyst-api/pkg/client/clientset/versioned"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	vcclient "volcano.sh/apis/pkg/client/clientset/versioned"
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

	// Kube, Volcano, Katalyst and Dynamic talk to the API server as the
	// admin user.
	Kube     kubernetes.Interface
	Volcano  vcclient.Interface
	Katalyst katalystclient.Interface
	Dynamic  dynamic.Interface
	// Config is the admin client configuration.
	Config *rest.Config

	adminKubeconfig     string
	schedulerKubeconfig string
	etcdURL             string
	serverURL           string
	// schedulerMetrics is the current scheduler's /metrics URL.
	schedulerMetrics string
	adminToken       string

	etcd        *process
	apiserver   *process
	controllers *process
	scheduler   *process
	operator    *process
	kcm         *process
	jobset      *process
	trainer     *process
	// webhookCerts is what the JobSet and Trainer webhook servers serve.
	webhookCerts webhookCerts
	// all lists every process started, in start order, for logs and stop.
	all []*process
	// removeWebhookCertDir is set when this run created the training
	// operator's fixed certificate directory and must remove it.
	removeWebhookCertDir bool
}

// binary returns the path of a built tool.
func (e *Env) binary(name string) string {
	return filepath.Join(e.BinDir, name)
}

// start launches and registers a component.
func (e *Env) start(spec processSpec) (*process, error) {
	p, err := startProcess(filepath.Join(e.Dir, "logs"), spec)
	if err != nil {
		return nil, err
	}
	e.all = append(e.all, p)
	return p, nil
}

// Stop stops every component, newest first, and removes what the run put
// outside its directory.
func (e *Env) Stop() {
	for i := len(e.all) - 1; i >= 0; i-- {
		e.all[i].stop()
	}
	if e.removeWebhookCertDir {
		_ = os.RemoveAll(filepath.Dir(webhookCertDir))
	}
}

// LogTails returns the last lines of every component's log.
func (e *Env) LogTails(lines int) string {
	var b strings.Builder
	for _, p := range e.all {
		fmt.Fprintf(&b, "----- %s (%s), last %d lines -----\n%s\n", p.name, p.logPath, lines, p.tail(lines))
	}
	return b.String()
}

// Alive returns an error for every component that has exited unexpectedly.
func (e *Env) Alive() error {
	var errs []error
	for _, p := range []*process{e.etcd, e.apiserver, e.controllers, e.scheduler, e.operator, e.kcm, e.jobset, e.trainer} {
		if p != nil {
			errs = append(errs, p.alive())
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
	e := &Env{Dir: dir, BinDir: binDir, RepoRoot: repoRoot}
	for _, sub := range []string{"logs", "etcd", "certs", "klog-socks"} {
		if err := os.MkdirAll(filepath.Join(dir, sub), 0o755); err != nil {
			return e, err
		}
	}
	if e.webhookCerts, err = writeWebhookCerts(filepath.Join(dir, "certs", "webhook")); err != nil {
		return e, err
	}
	steps := []struct {
		name string
		run  func(context.Context) error
	}{
		{"etcd", e.startEtcd},
		{"kube-apiserver", e.startAPIServer},
		{"clients", e.makeClients},
		{"CRDs", e.installCRDs},
		{"cluster objects", e.createClusterObjects},
		{"vc-controller-manager", e.startControllers},
		{"vc-scheduler", e.StartScheduler},
		{"training-operator", e.startOperator},
		{"kube-controller-manager", e.startKubeControllerManager},
		{"jobset-controller", e.startJobSet},
		{"trainer-controller-manager", e.startTrainer},
	}
	for _, s := range steps {
		start := time.Now()
		if err := s.run(ctx); err != nil {
			return e, fmt.Errorf("start %s: %w", s.name, err)
		}
		fmt.Fprintf(os.Stderr, "integration: %s ready in %s\n", s.name, time.Since(start).Round(time.Millisecond))
	}
	return e, nil
}

func (e *Env) startEtcd(ctx context.Context) error {
	clientPort, err := freePort()
	if err != nil {
		return err
	}
	peerPort, err := freePort()
	if err != nil {
		return err
	}
	client := "http://" + hostPort(clientPort)
	peer := "http://" + hostPort(peerPort)
	e.etcd, err = e.start(processSpec{
		Name: "etcd",
		Path: e.binary("etcd"),
		Args: []string{
			"--name=default",
			"--data-dir=" + filepath.Join(e.Dir, "etcd"),
			"--listen-client-urls=" + client,
			"--advertise-client-urls=" + client,
			"--listen-peer-urls=" + peer,
			"--initial-advertise-peer-urls=" + peer,
			"--initial-cluster=default=" + peer,
			// Test data need not survive a power cut.
			"--unsafe-no-fsync",
			"--log-level=warn",
		},
	})
	if err != nil {
		return err
	}
	e.etcdURL = client
	return waitHTTP(ctx, e.etcd, http.DefaultClient, client+"/health", "", etcdReadyTimeout)
}

func (e *Env) startAPIServer(ctx context.Context) error {
	port, err := freePort()
	if err != nil {
		return err
	}
	certs := filepath.Join(e.Dir, "certs")
	keyFile, pubFile, err := writeServiceAccountKeys(certs)
	if err != nil {
		return err
	}
	e.adminToken = randomToken()
	schedulerToken := randomToken()
	tokens := filepath.Join(certs, "tokens.csv")
	tokenLines := fmt.Sprintf("%s,%s,%s,\"system:masters\"\n%s,%s,%s,\"system:serviceaccounts,system:serviceaccounts:volcano-system\"\n",
		e.adminToken, adminUser, "uid-admin", schedulerToken, schedulerUser, "uid-volcano-scheduler")
	if err := os.WriteFile(tokens, []byte(tokenLines), 0o600); err != nil {
		return err
	}
	e.apiserver, err = e.start(processSpec{
		Name: "kube-apiserver",
		Path: e.binary("kube-apiserver"),
		Args: []string{
			"--etcd-servers=" + e.etcdURL,
			"--bind-address=127.0.0.1",
			fmt.Sprintf("--secure-port=%d", port),
			"--cert-dir=" + filepath.Join(certs, "apiserver"),
			"--token-auth-file=" + tokens,
			"--authorization-mode=RBAC",
			"--service-account-key-file=" + pubFile,
			"--service-account-signing-key-file=" + keyFile,
			"--service-account-issuer=https://kubernetes.default.svc.cluster.local",
			"--service-cluster-ip-range=10.0.0.0/24",
			// No controller creates ServiceAccounts here, and none would
			// lift the not-ready taint TaintNodesByCondition puts on
			// every new Node (kube-controller-manager does not run).
			"--disable-admission-plugins=ServiceAccount,TaintNodesByCondition",
			"--enable-priority-and-fairness=false",
			"--profiling=false",
		},
	})
	if err != nil {
		return err
	}
	e.serverURL = "https://" + hostPort(port)
	insecure := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	if err := waitHTTP(ctx, e.apiserver, insecure, e.serverURL+"/readyz", e.adminToken, apiserverReadyTimeout); err != nil {
		return err
	}
	e.adminKubeconfig = filepath.Join(certs, "admin.kubeconfig")
	if err := writeKubeconfig(e.adminKubeconfig, e.serverURL, adminUser, e.adminToken); err != nil {
		return err
	}
	e.schedulerKubeconfig = filepath.Join(certs, "scheduler.kubeconfig")
	return writeKubeconfig(e.schedulerKubeconfig, e.serverURL, "volcano-scheduler", schedulerToken)
}

func (e *Env) makeClients(context.Context) error {
	cfg, err := clientcmd.BuildConfigFromFlags("", e.adminKubeconfig)
	if err != nil {
		return err
	}
	cfg.QPS, cfg.Burst = 200, 400
	cfg.WarningHandler = templateWarningFilter{}
	e.Config = cfg
	if e.Kube, err = kubernetes.NewForConfig(cfg); err != nil {
		return err
	}
	if e.Volcano, err = vcclient.NewForConfig(cfg); err != nil {
		return err
	}
	if e.Katalyst, err = katalystclient.NewForConfig(cfg); err != nil {
		return err
	}
	e.Dynamic, err = dynamic.NewForConfig(cfg)
	return err
}

func (e *Env) startControllers(ctx context.Context) error {
	healthPort, err := freePort()
	if err != nil {
		return err
	}
	e.controllers, err = e.start(processSpec{
		Name: "vc-controller-manager",
		Path: e.binary("vc-controller-manager"),
		Args: []string{
			"--kubeconfig=" + e.adminKubeconfig,
			"--leader-elect=false",
			"--enable-healthz=true",
			"--healthz-address=" + hostPort(healthPort),
			"--logtostderr",
			"-v=2",
		},
		Env: []string{"DEBUG_SOCKET_DIR=" + filepath.Join(e.Dir, "klog-socks")},
	})
	if err != nil {
		return err
	}
	return waitHTTP(ctx, e.controllers, http.DefaultClient, "http://"+hostPort(healthPort)+"/healthz", "", componentReadyTimeout)
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
		if gone, _ := e.scheduler.exited(); !gone {
			return errors.New("vc-scheduler is already running")
		}
	}
	healthPort, err := freePort()
	if err != nil {
		return err
	}
	metricsPort, err := freePort()
	if err != nil {
		return err
	}
	e.scheduler, err = e.start(processSpec{
		Name: "vc-scheduler",
		Path: e.binary("vc-scheduler"),
		Args: []string{
			"--kubeconfig=" + e.schedulerKubeconfig,
			"--scheduler-conf=" + conf,
			"--scheduler-name=volcano",
			"--leader-elect=false",
			"--enable-healthz=true",
			"--healthz-address=" + hostPort(healthPort),
			"--enable-metrics=true",
			"--listen-address=" + hostPort(metricsPort),
			"--logtostderr",
			"-v=3",
		},
		Env: []string{"DEBUG_SOCKET_DIR=" + filepath.Join(e.Dir, "klog-socks")},
	})
	if err != nil {
		return err
	}
	e.schedulerMetrics = "http://" + hostPort(metricsPort) + "/metrics"
	return waitHTTP(ctx, e.scheduler, http.DefaultClient, "http://"+hostPort(healthPort)+"/healthz", "", componentReadyTimeout)
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
		e.scheduler.stop()
	}
}

// waitHTTP polls url until it answers 200, the process exits or the
// deadline passes.
func waitHTTP(ctx context.Context, p *process, client *http.Client, url, token string, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
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
			return fmt.Errorf("%s not ready at %s within %s: %s", p.name, url, timeout, last)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// writeServiceAccountKeys writes the key pair the API server signs and
// verifies ServiceAccount tokens with.
func writeServiceAccountKeys(dir string) (keyFile, pubFile string, err error) {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return "", "", err
	}
	pub, err := x509.MarshalPKIXPublicKey(&key.PublicKey)
	if err != nil {
		return "", "", err
	}
	keyFile = filepath.Join(dir, "sa.key")
	pubFile = filepath.Join(dir, "sa.pub")
	keyPEM := pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)})
	if err := os.WriteFile(keyFile, keyPEM, 0o600); err != nil {
		return "", "", err
	}
	pubPEM := pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pub})
	return keyFile, pubFile, os.WriteFile(pubFile, pubPEM, 0o644)
}

// writeKubeconfig writes a kubeconfig for a token user. The API server's
// certificate is self-signed and it listens on loopback only, so the
// certificate is not verified.
func writeKubeconfig(path, server, user, token string) error {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["it"] = &clientcmdapi.Cluster{Server: server, InsecureSkipTLSVerify: true}
	cfg.AuthInfos[user] = &clientcmdapi.AuthInfo{Token: token}
	cfg.Contexts["it"] = &clientcmdapi.Context{Cluster: "it", AuthInfo: user}
	cfg.CurrentContext = "it"
	return clientcmd.WriteToFile(*cfg, path)
}

func randomToken() string {
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		panic(err) // crypto/rand does not fail on Linux
	}
	return hex.EncodeToString(b)
}

// moduleDir returns the directory of a module in the module cache, as seen
// from the module rooted at dir, downloading it if needed.
func moduleDir(ctx context.Context, dir, module string) (string, error) {
	for attempt := 0; attempt < 2; attempt++ {
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
		dl.Dir = dir
		dl.Env = cmd.Env
		if out, err := dl.CombinedOutput(); err != nil {
			return "", fmt.Errorf("go mod download %s in %s: %v: %s", module, dir, err, out)
		}
	}
	return "", fmt.Errorf("module %s has no directory as seen from %s", module, dir)
}
