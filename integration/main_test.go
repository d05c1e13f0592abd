package integration

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/rdmatopo/rdmatopo/internal/testing/harness"
)

// binEnv names the directory with prebuilt binaries (set by the Makefile).
// Without it, TestMain builds them with hack/build-tools.sh into .bin.
const binEnv = "RDMATOPO_INTEGRATION_BIN"

// startupTimeout bounds bringing the whole stack up (binaries built).
const startupTimeout = 5 * time.Minute

// logTailLines is how much of each component's log a failure prints.
const logTailLines = 60

var (
	// env is the stack every test runs against.
	env *Env
	// setupErr is why the stack is not usable; every test fails with it.
	setupErr error
)

func TestMain(m *testing.M) {
	os.Exit(runMain(m))
}

func runMain(m *testing.M) int {
	root, err := repoRoot()
	if err != nil {
		fmt.Fprintln(os.Stderr, "integration:", err)
		return 1
	}
	binDir := os.Getenv(binEnv)
	if binDir == "" {
		binDir = filepath.Join(root, "integration", ".bin")
	}
	// Always run the build script: it returns at once for up-to-date tools
	// and rebuilds whatever changed (vc-scheduler after a code change).
	if err := buildTools(root, binDir); err != nil {
		setupErr = fmt.Errorf("build the integration binaries: %w", err)
	}

	// Stop the components on SIGINT/SIGTERM too; SIGKILL and crashes are
	// covered by the children's parent-death signal.
	ctx, stopSignals := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stopSignals()

	if setupErr == nil {
		startCtx, cancel := context.WithTimeout(ctx, startupTimeout)
		env, setupErr = StartEnv(startCtx, binDir, root)
		cancel()
		if setupErr != nil {
			fmt.Fprintf(os.Stderr, "integration: %v\n%s", setupErr, env.LogTails(logTailLines))
		}
	}
	code := m.Run()
	if env != nil {
		env.Stop()
		if code == 0 && setupErr == nil {
			_ = os.RemoveAll(env.Dir)
		} else if env.Dir != "" {
			fmt.Fprintf(os.Stderr, "integration: logs and data kept in %s\n", env.Dir)
		}
	}
	if setupErr != nil && code == 0 {
		code = 1
	}
	return code
}

// requireEnv fails the test when the stack did not come up, and prints the
// components' log tails if the test fails.
func requireEnv(t *testing.T) *Env {
	t.Helper()
	if setupErr != nil {
		t.Fatalf("integration environment: %v", setupErr)
	}
	t.Cleanup(func() {
		if err := env.Alive(); err != nil {
			t.Errorf("component died during the test: %v", err)
		}
		if t.Failed() {
			t.Logf("component logs:\n%s", env.LogTails(logTailLines))
		}
	})
	return env
}

// repoRoot finds the rdmatopo module root from the test's directory.
func repoRoot() (string, error) {
	wd, err := os.Getwd()
	if err != nil {
		return "", err
	}
	root := filepath.Dir(wd)
	if !harness.FileExists(filepath.Join(root, "go.mod")) || !harness.FileExists(filepath.Join(root, "config", "volcano-scheduler.conf")) {
		return "", fmt.Errorf("%s is not the rdmatopo module root", root)
	}
	return root, nil
}

// buildTools runs hack/build-tools.sh, streaming its output.
func buildTools(root, binDir string) error {
	script := filepath.Join(root, "integration", "hack", "build-tools.sh")
	cmd := exec.Command(script)
	cmd.Dir = filepath.Join(root, "integration")
	cmd.Env = append(os.Environ(), "BIN_DIR="+binDir)
	cmd.Stdout = os.Stderr
	cmd.Stderr = os.Stderr
	if err := cmd.Run(); err != nil {
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			return fmt.Errorf("%s exited with %d", script, exit.ExitCode())
		}
		return err
	}
	return nil
}
