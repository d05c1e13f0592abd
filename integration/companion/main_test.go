// Package companion tests `rdmatopo companion` on a real etcd and
// kube-apiserver, with kube-scheduler v1.30 binding pods: the admission
// webhook on pods/binding, two replicas electing one owner of the NIC book,
// binds with the webhook down, and the published HyperNodes. It needs only
// etcd, kube-apiserver, kube-scheduler, hypernode-check and rdmatopo from
// hack/build-tools.sh, not the Volcano and Kubeflow controllers of the
// package one directory up.
package companion

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"

	"github.com/rdmatopo/rdmatopo/internal/testing/harness"
)

// binEnv names the directory with prebuilt binaries (set by the Makefile).
const binEnv = "RDMATOPO_INTEGRATION_BIN"

// tools are the binaries these tests run.
var tools = []string{"etcd", "kube-apiserver", "kube-scheduler", "hypernode-check", "rdmatopo"}

// Deadlines.
const (
	startupTimeout        = 5 * time.Minute
	componentReadyTimeout = 120 * time.Second
	crdEstablishedTimeout = 60 * time.Second
)

// Env is the control plane the tests share.
type Env struct {
	Dir, BinDir, RepoRoot string
	harness.Clients
	adminKubeconfig string
	procs           harness.Group
	etcd, apiserver *harness.Process
}

var (
	env      *Env
	setupErr error
)

func TestMain(m *testing.M) { os.Exit(runMain(m)) }

func runMain(m *testing.M) int {
	wd, err := os.Getwd()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	root := filepath.Dir(filepath.Dir(wd))
	binDir := os.Getenv(binEnv)
	if binDir == "" {
		binDir = filepath.Join(root, "integration", ".bin")
	}
	script := filepath.Join(root, "integration", "hack", "build-tools.sh")
	cmd := exec.Command(script, tools...)
	cmd.Dir = filepath.Join(root, "integration")
	cmd.Env = append(os.Environ(), "BIN_DIR="+binDir)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		setupErr = fmt.Errorf("build the integration binaries: %w", err)
	}
	if setupErr == nil {
		ctx, cancel := context.WithTimeout(context.Background(), startupTimeout)
		env, setupErr = startEnv(ctx, binDir, root)
		cancel()
		if setupErr != nil {
			fmt.Fprintf(os.Stderr, "companion: %v\n%s", setupErr, env.procs.LogTails(60))
		}
	}
	code := m.Run()
	if env != nil {
		env.procs.Stop()
		if code == 0 && setupErr == nil {
			_ = os.RemoveAll(env.Dir)
		} else {
			fmt.Fprintf(os.Stderr, "companion: logs kept in %s\n", env.Dir)
		}
	}
	if setupErr != nil && code == 0 {
		code = 1
	}
	return code
}

// requireEnv fails the test when the control plane did not come up and
// prints the components' logs when it fails.
func requireEnv(t *testing.T) *Env {
	t.Helper()
	if setupErr != nil {
		t.Fatalf("integration environment: %v", setupErr)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("component logs:\n%s", env.procs.LogTails(60))
		}
	})
	return env
}

func (e *Env) binary(name string) string { return filepath.Join(e.BinDir, name) }

func (e *Env) start(spec harness.Spec) (*harness.Process, error) { return e.procs.Start(spec) }

// alive reports a control-plane component that died.
func (e *Env) alive() error {
	return errors.Join(e.etcd.Alive(), e.apiserver.Alive())
}

func startEnv(ctx context.Context, binDir, root string) (*Env, error) {
	dir, err := os.MkdirTemp("", "rdmatopo-companion-it-")
	if err != nil {
		return &Env{}, err
	}
	e := &Env{Dir: dir, BinDir: binDir, RepoRoot: root, procs: harness.Group{LogDir: filepath.Join(dir, "logs")}}
	for _, sub := range []string{"logs", "etcd", "certs"} {
		if err := os.MkdirAll(filepath.Join(dir, sub), 0o755); err != nil {
			return e, err
		}
	}
	var etcdURL string
	if e.etcd, etcdURL, err = e.procs.StartEtcd(ctx, harness.EtcdSpec{Binary: e.binary("etcd"), DataDir: filepath.Join(dir, "etcd"), Timeout: 60 * time.Second}); err != nil {
		return e, err
	}
	admin := harness.User{Name: "rdmatopo-it-admin", UID: "uid-admin", Groups: []string{"system:masters"}, Token: harness.RandomToken()}
	a, err := e.procs.StartAPIServer(ctx, harness.APIServerSpec{
		Binary: e.binary("kube-apiserver"), CertDir: filepath.Join(dir, "certs"), EtcdURL: etcdURL,
		Users: []harness.User{admin}, ExtraArgs: []string{"--enable-priority-and-fairness=false"}, Timeout: 120 * time.Second,
	})
	if a != nil {
		e.apiserver = a.Process
	}
	if err != nil {
		return e, err
	}
	if e.adminKubeconfig, err = a.Kubeconfig("admin", admin); err != nil {
		return e, err
	}
	if e.Clients, err = harness.NewClients(e.adminKubeconfig, func(cfg *rest.Config) { cfg.QPS, cfg.Burst = 200, 400 }); err != nil {
		return e, err
	}
	katalyst, err := harness.ModuleDir(ctx, root, "github.com/kubewharf/katalyst-api")
	if err != nil {
		return e, err
	}
	files := []string{filepath.Join(katalyst, "config", "crd", "bases", "node.katalyst.kubewharf.io_customnoderesources.yaml")}
	return e, harness.InstallCRDs(ctx, e.Dynamic, files, []*unstructured.Unstructured{harness.HyperNodeCRD()}, crdEstablishedTimeout)
}
