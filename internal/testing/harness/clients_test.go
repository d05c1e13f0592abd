package harness

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/rest"
)

func TestNewClients(t *testing.T) {
	path := filepath.Join(t.TempDir(), "admin.kubeconfig")
	if err := WriteKubeconfig(path, "https://127.0.0.1:6443", "admin", "tok"); err != nil {
		t.Fatal(err)
	}
	c, err := NewClients(path, func(cfg *rest.Config) { cfg.QPS, cfg.Burst, cfg.UserAgent = 123, 246, "e2e" })
	if err != nil {
		t.Fatal(err)
	}
	if c.Kube == nil || c.Volcano == nil || c.Katalyst == nil || c.Dynamic == nil {
		t.Fatalf("clients missing: %+v", c)
	}
	if c.Config.QPS != 123 || c.Config.UserAgent != "e2e" || c.Config.BearerToken != "tok" {
		t.Errorf("config QPS %v, user agent %q, token %q", c.Config.QPS, c.Config.UserAgent, c.Config.BearerToken)
	}
	if _, err := NewClients(filepath.Join(t.TempDir(), "missing"), nil); err == nil {
		t.Error("a missing kubeconfig gave clients")
	}
}

func TestRunSteps(t *testing.T) {
	var ran, ready []string
	step := func(name string, err error) Step {
		return Step{Name: name, Run: func(context.Context) error { ran = append(ran, name); return err }}
	}
	err := RunSteps(context.Background(), []Step{step("etcd", nil), step("kube-apiserver", errors.New("port in use")), step("never", nil)},
		func(name string, _ time.Duration) { ready = append(ready, name) })
	if err == nil || err.Error() != "start kube-apiserver: port in use" {
		t.Errorf("error %v, want the failed step named", err)
	}
	if strings.Join(ran, ",") != "etcd,kube-apiserver" || strings.Join(ready, ",") != "etcd" {
		t.Errorf("ran %v, ready %v", ran, ready)
	}
	if err := RunSteps(context.Background(), []Step{step("a", nil)}, nil); err != nil {
		t.Error(err)
	}
}
