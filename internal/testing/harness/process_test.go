package harness

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// waitFor polls cond until it holds or the deadline passes.
func waitFor(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("not within %s: %s", timeout, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func shell(name, script string) Spec {
	return Spec{Name: name, Path: "/bin/sh", Args: []string{"-c", script}}
}

func TestGroupStartStop(t *testing.T) {
	g := &Group{LogDir: t.TempDir()}
	p, err := g.Start(shell("svc", `echo "ready $GREETING"; exec sleep 60`).withEnv("GREETING=hi"))
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "the log line", func() bool { return strings.Contains(p.Tail(1), "ready hi") })
	if err := g.Alive(); err != nil {
		t.Fatalf("running component reported dead: %v", err)
	}
	if u, err := p.Usage(); err != nil || u.PeakRSSBytes <= 0 {
		t.Errorf("usage of a running process: %+v, %v", u, err)
	}
	again, err := g.Start(shell("svc", "exit 3"))
	if err != nil {
		t.Fatal(err)
	}
	if filepath.Base(again.LogPath) != "svc.2.log" {
		t.Errorf("second log %s, want svc.2.log", again.LogPath)
	}
	waitFor(t, 10*time.Second, "the second start to exit", func() bool { gone, _ := again.Exited(); return gone })
	if err := g.Alive(); err == nil || !strings.Contains(err.Error(), "svc exited") || !strings.Contains(err.Error(), "svc.2.log") {
		t.Errorf("Alive = %v, want the exited component and its log named", err)
	}
	g.Stop()
	if gone, _ := p.Exited(); !gone {
		t.Error("Stop left the component running")
	}
	g.Stop() // a second Stop is harmless
	var nilProc *Process
	nilProc.Stop()
	tails := g.LogTails(5)
	for _, want := range []string{"----- svc (", "ready hi", "# /bin/sh -c exit 3"} {
		if !strings.Contains(tails, want) {
			t.Errorf("LogTails lacks %q:\n%s", want, tails)
		}
	}
}

func (s Spec) withEnv(env ...string) Spec {
	s.Env = append(s.Env, env...)
	return s
}

func TestStartMissingBinary(t *testing.T) {
	_, err := Start(t.TempDir(), Spec{Name: "etcd", Path: filepath.Join(t.TempDir(), "etcd")})
	if err == nil || !strings.HasPrefix(err.Error(), "etcd: binary:") {
		t.Fatalf("error %v, want one naming the component's binary", err)
	}
}

func TestParseStat(t *testing.T) {
	cases := []struct {
		name    string
		in      string
		want    float64
		wantErr bool
	}{
		{name: "plain", in: "42 (vc-scheduler) S 1 42 42 0 -1 4194560 100 0 0 0 250 150 0 0 20 0 12", want: 4},
		{name: "spaces and parentheses in the command", in: "42 (a (b) c) S 1 42 42 0 -1 4194560 100 0 0 0 10 5 0 0 20 0 12", want: 0.15},
		{name: "no command", in: "42 S 1", wantErr: true},
		{name: "too short", in: "42 (x) S 1 2", wantErr: true},
		{name: "not a number", in: "42 (x) S 1 42 42 0 -1 4194560 100 0 0 0 ten 5 0", wantErr: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			u, err := parseStat(tc.in)
			if (err != nil) != tc.wantErr || (!tc.wantErr && u.CPUSeconds != tc.want) {
				t.Errorf("parseStat = %+v, %v; want %v, error %v", u, err, tc.want, tc.wantErr)
			}
		})
	}
}

func TestParseStatusKB(t *testing.T) {
	const status = "Name:\tetcd\nVmPeak:\t  100 kB\nVmHWM:\t    2048 kB\nVmRSS:\t    1536 kB\n"
	cases := []struct {
		in      string
		field   string
		want    int64
		wantErr bool
	}{
		{in: status, field: "VmHWM", want: 2048 * 1024},
		{in: status, field: "VmRSS", want: 1536 * 1024},
		// A field is matched whole: VmPeak is not read for Vm.
		{in: status, field: "Vm", want: 0},
		{in: "Name:\tzombie\nState:\tZ\n", field: "VmHWM", want: 0},
		{in: "VmHWM:\tlots kB\n", field: "VmHWM", wantErr: true},
	}
	for _, tc := range cases {
		got, err := parseStatusKB(tc.in, tc.field)
		if (err != nil) != tc.wantErr || got != tc.want {
			t.Errorf("parseStatusKB(%q, %s) = %d, %v; want %d, error %v", tc.in, tc.field, got, err, tc.want, tc.wantErr)
		}
	}
}

func TestFreePortsDistinct(t *testing.T) {
	ports, err := FreePorts(20)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[int]bool{}
	for _, p := range ports {
		if seen[p] || p <= 0 {
			t.Fatalf("port %d handed out twice or invalid in %v", p, ports)
		}
		seen[p] = true
	}
	if got := HostPort(8080); got != "127.0.0.1:8080" {
		t.Errorf("HostPort = %q", got)
	}
}

func TestTailFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "log")
	if err := os.WriteFile(path, []byte("a\nb\nc\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := TailFile(path, 2); got != "b\nc" {
		t.Errorf("TailFile = %q, want the last two lines", got)
	}
	if got := TailFile(path, 10); got != "a\nb\nc" {
		t.Errorf("TailFile = %q, want every line", got)
	}
	if got := TailFile(path+".missing", 2); !strings.Contains(got, "cannot read") {
		t.Errorf("TailFile of a missing file = %q", got)
	}
}

func TestWaitHTTP(t *testing.T) {
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer tok" {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		if calls.Add(1) < 3 {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		w.WriteHeader(http.StatusOK)
	}))
	defer srv.Close()
	g := &Group{LogDir: t.TempDir()}
	defer g.Stop()
	live, err := g.Start(shell("live", "exec sleep 60"))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := WaitHTTP(ctx, live, srv.Client(), srv.URL, "tok", 30*time.Second); err != nil {
		t.Errorf("ready after two 503s: %v", err)
	}
	err = WaitHTTP(ctx, live, srv.Client(), srv.URL, "wrong", 500*time.Millisecond)
	if err == nil || !strings.Contains(err.Error(), "live not ready") || !strings.Contains(err.Error(), "401") {
		t.Errorf("never ready: %v, want the component and the last answer named", err)
	}
	dead, err := g.Start(shell("dead", "exit 1"))
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "the process to exit", func() bool { gone, _ := dead.Exited(); return gone })
	if err := WaitHTTP(ctx, dead, srv.Client(), srv.URL, "tok", 30*time.Second); err == nil || !strings.Contains(err.Error(), "dead exited") {
		t.Errorf("exited component: %v, want it named", err)
	}
}
