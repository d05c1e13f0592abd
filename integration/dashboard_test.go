package integration

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rdmatopo/rdmatopo/internal/fabricmap"
	"github.com/rdmatopo/rdmatopo/internal/kubectlcmd"
)

// chromiumPath is Debian's chromium, which `make -C integration test`
// installs when it is missing (hack/install-chromium.sh).
const chromiumPath = "/usr/bin/chromium"

// browserTimeout bounds each wait on the page.
const browserTimeout = 90 * time.Second

// syncBuffer is a bytes.Buffer safe for a writer and a reader goroutine.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// startDashboard runs `kubectl rdmatopo dashboard` in-process on a free
// loopback port and returns its URL; it stops when the test ends.
func startDashboard(t *testing.T, e *Env) string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	pr, pw := io.Pipe()
	stderr := &syncBuffer{}
	done := make(chan int, 1)
	go func() {
		done <- kubectlcmd.MainContext(ctx, []string{"dashboard", "--listen", "127.0.0.1:0", "--interval", "1s",
			"--kubeconfig", e.adminKubeconfig}, strings.NewReader(""), pw, stderr)
		_ = pw.Close()
	}()
	t.Cleanup(func() {
		cancel()
		if code := <-done; code != 0 {
			t.Errorf("dashboard exited %d: %s", code, stderr.String())
		}
	})
	lines := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(pr)
		if sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
		_, _ = io.Copy(io.Discard, pr)
	}()
	select {
	case line, ok := <-lines:
		m := regexp.MustCompile(`http://127\.0\.0\.1:\d+/`).FindString(line)
		if !ok || m == "" {
			t.Fatalf("dashboard did not say where it listens (%q); stderr: %s", line, stderr.String())
		}
		return m
	case <-time.After(30 * time.Second):
		t.Fatalf("dashboard did not start; stderr: %s", stderr.String())
	}
	return ""
}

// newBrowser starts headless Chromium with a fresh profile.
func newBrowser(t *testing.T) context.Context {
	t.Helper()
	if _, err := os.Stat(chromiumPath); err != nil {
		t.Fatalf("%s: %v (make -C integration test installs it with hack/install-chromium.sh)", chromiumPath, err)
	}
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(chromiumPath),
		chromedp.Flag("headless", true),
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.NoFirstRun,
		chromedp.UserDataDir(t.TempDir()),
	}
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	bctx, cancelBrowser := chromedp.NewContext(actx)
	t.Cleanup(func() {
		cancelBrowser()
		cancelAlloc()
	})
	return bctx
}

// browse runs one step on the page within browserTimeout and returns its
// value; on failure the test stops with the page's text.
func browse[T any](t *testing.T, bctx context.Context, what string, a chromedp.Action[T]) T {
	t.Helper()
	ctx, cancel := context.WithTimeout(bctx, browserTimeout)
	defer cancel()
	v, err := chromedp.Run(ctx, a)
	if err != nil {
		page, _ := chromedp.Run(bctx, chromedp.Text(chromedp.CSS("body")))
		t.Fatalf("%s: %v\npage text:\n%s", what, err, page)
	}
	return v
}

// TestKubectlDashboard: the live fabric page, in headless Chromium against
// the real API server, shows the bound gang in its colour and the waiting
// gang with the scheduler's reason, and updates itself after a new gang
// binds.
func TestKubectlDashboard(t *testing.T) {
	e := requireEnv(t)
	ctx := context.Background()
	f := newFabric(t, e)
	ns := newNamespace(t, e)
	twoGroups(ctx, f)

	first := volcanoJob{Name: "first", Workers: 1, Shape: trainer, Contract: hardS0}
	first.Create(t, e, ns)
	firstPG := podGroupOf(t, e, waitBound(t, e, ns, first.Selector(), first.Size(), placeTimeout)[0])
	waiting := pytorchJob{Name: "big", Workers: 4, Shape: trainer, Contract: hardS0}
	waiting.Create(t, e, ns)
	eventually(t, placeTimeout, func() (bool, string) {
		pg, err := e.Volcano.SchedulingV1beta1().PodGroups(ns).Get(ctx, waiting.Name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return condition(pg, "Unschedulable") != nil, describePodGroup(pg)
	})

	url := startDashboard(t, e)
	b := newBrowser(t)
	firstRow := fmt.Sprintf(`tr.placed[data-job=%q]`, ns+"/"+firstPG.Name)
	waitingRow := fmt.Sprintf(`tr.waiting[data-job=%q] td.reason`, ns+"/"+waiting.Name)
	// The browser starts on the first run, under a context without a
	// deadline (a deadline would stop the whole browser).
	if err := chromedp.Do(b, chromedp.Navigate(url)); err != nil {
		t.Fatalf("open %s: %v", url, err)
	}
	browse(t, b, "the page shows the placed gang", chromedp.WaitVisible(chromedp.CSS(firstRow)))
	browse(t, b, "the page shows the waiting gang", chromedp.WaitVisible(chromedp.CSS(waitingRow)))
	reason := browse(t, b, "the waiting gang's reason", chromedp.Text(chromedp.CSS(waitingRow)))
	title := browse(t, b, "the title", chromedp.Title())
	hasMap := browse(t, b, "the map", chromedp.Evaluate[bool](`document.querySelector("#map svg") !== null && document.querySelectorAll("#map svg rect").length > 10`))
	if strings.TrimSpace(reason) == "" || !strings.Contains(title, "RDMA fabric") || !hasMap {
		t.Errorf("page: title %q, waiting reason %q, map drawn %v", title, reason, hasMap)
	}
	// The waiting gang is on the map, at the leaves it would go to, with
	// the scheduler's reason in full as the marks' tooltip.
	waitingKey := ns + "/" + waiting.Name
	marks := browse(t, b, "the waiting gang on the map", chromedp.Evaluate[[]string](fmt.Sprintf(
		`Array.from(document.querySelectorAll('#map svg g[data-waiting=%q] > title')).map(function (t) { return t.textContent; })`, waitingKey)))
	if len(marks) == 0 {
		t.Errorf("the waiting gang %s is on no leaf of the map", waitingKey)
	}
	for _, m := range marks {
		if !strings.Contains(m, strings.TrimSpace(reason)) {
			t.Errorf("a map mark of %s says %q, want the reason %q in full", waitingKey, m, reason)
		}
	}
	// Colours derive from the job's identity (its PodGroup's UID).
	swatch := func(key string) string {
		return browse(t, b, "the swatch of "+key, chromedp.Evaluate[string](fmt.Sprintf(
			`getComputedStyle(document.querySelector('tr[data-job=%q] .swatch')).backgroundColor`, key)))
	}
	firstKey := ns + "/" + firstPG.Name
	firstColor := swatch(firstKey)
	if want := cssRGB(t, fabricmap.ColorOf(string(firstPG.UID))); firstColor != want {
		t.Errorf("%s has colour %s, want %s (from its UID)", firstKey, firstColor, want)
	}
	// A foreign Host header (DNS rebinding) is refused.
	req, err := http.NewRequest(http.MethodGet, url+"api/state.json", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Host = "rebind.example:80"
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMisdirectedRequest {
		t.Errorf("Host %s: %s, want 421 Misdirected Request", req.Host, resp.Status)
	}

	second := volcanoJob{Name: "second", Workers: 1, Shape: trainer, Contract: hardS0}
	second.Create(t, e, ns)
	secondPG := podGroupOf(t, e, waitBound(t, e, ns, second.Selector(), second.Size(), placeTimeout)[0])
	secondRow := fmt.Sprintf(`tr.placed[data-job=%q]`, ns+"/"+secondPG.Name)
	browse(t, b, "the page shows the gang bound after it loaded", chromedp.WaitVisible(chromedp.CSS(secondRow)))
	browse(t, b, "the map's legend shows the new gang",
		chromedp.Poll[bool](fmt.Sprintf(`Array.from(document.querySelectorAll("#map svg text")).some(function (t) { return t.textContent.indexOf(%q) === 0; })`,
			ns+"/"+secondPG.Name+": tier"), chromedp.WithPollingTimeout(browserTimeout)))
	// The first job kept its colour though a job joined the list.
	if got := swatch(firstKey); got != firstColor {
		t.Errorf("%s changed colour from %s to %s when %s was added", firstKey, firstColor, got, secondPG.Name)
	}
}

// cssRGB is how a browser reports the colour "#rrggbb".
func cssRGB(t *testing.T, hex string) string {
	t.Helper()
	var r, g, b int
	if _, err := fmt.Sscanf(hex, "#%02x%02x%02x", &r, &g, &b); err != nil {
		t.Fatalf("colour %q: %v", hex, err)
	}
	return fmt.Sprintf("rgb(%d, %d, %d)", r, g, b)
}
