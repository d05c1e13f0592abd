// Command benche2e runs rdmatopo's vc-scheduler and stock Volcano v1.10's
// vc-scheduler, one after the other, against a real kube-apiserver with
// kwok's fake nodes, on the trace `rdmatopo-dev bench` replays in-process, and
// prints one JSON object comparing them (`make bench-e2e`).
//
// Each run gets a fresh etcd, kube-apiserver (default flow control and
// in-flight limits), vc-controller-manager and kwok. The driver writes the
// generated provider-shaped cluster (trace.NewCluster: Nodes, KCNRs with
// status, the pods already running), plays katalyst's node agent (bound pods
// appear in their node's KCNR a lag after the bind), submits the trace's
// gangs as VolcanoJobs at their arrival times and deletes each placed gang
// when its run time is over. See docs/benchmarks.md for what it measures.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	benchreplay "github.com/rdmatopo/rdmatopo/internal/devtools/bench/replay"
	"github.com/rdmatopo/rdmatopo/internal/devtools/bench/trace"
	"github.com/rdmatopo/rdmatopo/internal/sim/nodeagent"
	"github.com/rdmatopo/rdmatopo/internal/testing/harness"
	"github.com/rdmatopo/rdmatopo/internal/workload"
)

// options are the driver's flags.
type options struct {
	nodes, gangs  int
	seed          uint64
	binDir, root  string
	workDir       string
	keep          bool
	lag, period   time.Duration
	nodeAgent     nodeagent.Mode
	runTimeout    time.Duration
	stallTimeout  time.Duration
	settle        time.Duration
	controllerQPS int
	runs          string
	burst         bool
	direct        bool
	profileDir    string
	profileFor    time.Duration
	heapEvery     time.Duration
	schedulerArgs string
	schedulerEnv  string
	// companionArgs are extra flags of the companion runs' companion.
	companionArgs string
	// current names the run in progress, for log lines.
	current string
}

func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "bench-e2e: "+format+"\n", args...)
}

func main() {
	var o options
	flag.IntVar(&o.nodes, "nodes", 1000, "fake nodes (provider shape, as rdmatopo-dev bench)")
	flag.IntVar(&o.gangs, "gangs", 0, "gangs of the trace (default nodes/5)")
	flag.Uint64Var(&o.seed, "seed", 1, "seed of the cluster and the trace")
	flag.StringVar(&o.binDir, "bin", "integration/.bin", "directory of the built tools (integration/hack/build-tools.sh)")
	flag.StringVar(&o.root, "repo", ".", "root of the rdmatopo module")
	flag.StringVar(&o.workDir, "dir", "", "directory for data and logs (default: a new temporary directory)")
	flag.BoolVar(&o.keep, "keep", false, "keep data and logs after a successful run")
	flag.DurationVar(&o.lag, "agent-lag", 2*time.Second, "how long after a bind the node agent lists the pod in its KCNR")
	agentMode := flag.String("node-agent", string(nodeagent.Default), "how the node agent hands bound pods their NUMA zones and NICs: numa, exact or blind (as rdmatopo-dev bench)")
	flag.DurationVar(&o.period, "period", time.Second, "one trace cycle (arrival spacing and run-time unit); the schedulers' default --schedule-period")
	flag.DurationVar(&o.runTimeout, "run-timeout", 10*time.Minute, "give up on gangs not placed this long after the first submit")
	flag.DurationVar(&o.stallTimeout, "stall-timeout", 0, "end a run in which no gang was placed this long after the first submit: something in the stack is broken (default 90s, 5 minutes with --burst: a thousand jobs submitted at once take minutes to reach the scheduler on a loaded machine)")
	flag.DurationVar(&o.settle, "settle", 10*time.Second, "wait after the scheduler is up before the first submit")
	flag.IntVar(&o.controllerQPS, "controller-qps", 200, "vc-controller-manager --kube-api-qps (burst: twice that), the same for both runs")
	flag.StringVar(&o.runs, "runs", "rdmatopo,stock,kueue", "runs, in order (kueue: Kueue TAS with kube-scheduler; stock-companion, kueue-companion: stock or kueue with rdmatopo companion's bind webhook)")
	flag.BoolVar(&o.direct, "direct", false, "create each gang's PodGroup and pods directly instead of a VolcanoJob (no job controller, no enqueue wait)")
	flag.BoolVar(&o.burst, "burst", false, "submit every gang at once instead of at its arrival time (a bind burst)")
	flag.StringVar(&o.profileDir, "profile-dir", "", "write a CPU profile of each scheduler and companion (its /debug/pprof/profile) here")
	flag.DurationVar(&o.profileFor, "profile-seconds", 60*time.Second, "length of that profile, from the first submit (the scheduler must outlive it)")
	flag.DurationVar(&o.heapEvery, "heap-every", 0, "with --profile-dir: every this long from the first submit to the last bind, save the scheduler's heap profile (its /debug/pprof/heap) and its VmRSS and VmHWM (<run>.rss.tsv); 0 for none")
	flag.StringVar(&o.schedulerArgs, "scheduler-args", "", "extra flags for both schedulers, space-separated")
	flag.StringVar(&o.companionArgs, "companion-args", "", "extra flags for rdmatopo companion in the companion runs, space-separated (e.g. --refuse-no-fit)")
	flag.StringVar(&o.schedulerEnv, "scheduler-env", "", "extra environment for both schedulers, space-separated NAME=VALUE")
	flag.Parse()
	mode, err := nodeagent.ParseMode(*agentMode)
	if err != nil {
		logf("--node-agent: %v", err)
		os.Exit(2)
	}
	o.nodeAgent = mode
	if o.gangs == 0 {
		o.gangs = o.nodes / 5
	}
	if o.stallTimeout == 0 {
		o.stallTimeout = 90 * time.Second
		if o.burst {
			o.stallTimeout = 5 * time.Minute
		}
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	report, err := run(ctx, o)
	if err != nil {
		logf("%v", err)
		os.Exit(1)
	}
	enc := json.NewEncoder(os.Stdout)
	enc.SetIndent("", "  ")
	if err := enc.Encode(report); err != nil {
		logf("%v", err)
		os.Exit(1)
	}
}

// report is the driver's output.
type report struct {
	Nodes int `json:"nodes"`
	Jobs  int `json:"jobs"`
	Pods  int `json:"pods"`
	// Burst is set when every job was submitted at once (--burst).
	Burst bool                  `json:"burst"`
	Runs  map[string]*runResult `json:"runs"`
}

func run(ctx context.Context, o options) (*report, error) {
	root, err := filepath.Abs(o.root)
	if err != nil {
		return nil, err
	}
	o.root = root
	if o.binDir, err = filepath.Abs(o.binDir); err != nil {
		return nil, err
	}
	if o.workDir == "" {
		if o.workDir, err = os.MkdirTemp("", "rdmatopo-bench-e2e-"); err != nil {
			return nil, err
		}
	}
	if err := os.MkdirAll(o.workDir, 0o755); err != nil {
		return nil, err
	}
	logf("data and logs in %s", o.workDir)
	stockConf := filepath.Join(o.workDir, "stock-scheduler.conf")
	if err := os.WriteFile(stockConf, []byte(benchreplay.BaselineConfText), 0o644); err != nil {
		return nil, err
	}
	specs := map[string]schedulerSpec{
		"rdmatopo": {binary: "vc-scheduler", conf: filepath.Join(root, "config", "volcano-scheduler.conf")},
		"stock":    {binary: "vc-scheduler-stock", conf: stockConf},
		"kueue":    {kueue: true},
		// The companion's webhook choosing NUMA zones and NICs at bind
		// beside stock Volcano v1.10 and beside Kueue TAS.
		"stock-companion": {binary: "vc-scheduler-stock", conf: stockConf, companion: true},
		"kueue-companion": {kueue: true, companion: true},
	}
	cluster := trace.NewCluster(o.nodes, o.seed)
	trace := trace.NewTrace(o.gangs, o.seed)
	rep := &report{Nodes: o.nodes, Jobs: len(trace.Gangs), Burst: o.burst, Runs: map[string]*runResult{}}
	for _, g := range trace.Gangs {
		rep.Pods += g.Pods
	}
	logf("%d nodes, %d running pods, %d gangs (%d pods)", o.nodes, len(cluster.Pods), rep.Jobs, rep.Pods)
	floors, err := gangFloors(cluster, trace)
	if err != nil {
		return nil, err
	}
	failed := false
	for _, name := range strings.Split(o.runs, ",") {
		spec, ok := specs[name]
		if !ok {
			return nil, fmt.Errorf("unknown run %q (rdmatopo, stock, kueue, stock-companion, kueue-companion)", name)
		}
		if o.schedulerArgs != "" {
			spec.extraArgs = strings.Fields(o.schedulerArgs)
		}
		if o.schedulerEnv != "" {
			spec.env = strings.Fields(o.schedulerEnv)
		}
		o.current = name
		r, err := runOne(ctx, o, name, spec, cluster, trace, floors)
		if err != nil {
			failed = true
			return nil, fmt.Errorf("run %s: %w (logs in %s)", name, err, filepath.Join(o.workDir, name, "logs"))
		}
		rep.Runs[name] = r
	}
	if !o.keep && !failed {
		_ = os.RemoveAll(o.workDir)
	}
	return rep, nil
}

// runOne brings up a fresh stack, writes the cluster, starts the scheduler
// and replays the trace.
func runOne(ctx context.Context, o options, name string, spec schedulerSpec, cluster *workload.Cluster, trace *trace.Trace, floors map[string]int) (*runResult, error) {
	s, err := newStack(ctx, o.workDir, name, o.binDir, o.root, o)
	defer s.stop()
	if err != nil {
		logf("%s", s.logTails(30))
		return nil, err
	}
	if spec.kueue {
		// The node labels a Kueue user sets for TAS.
		if cluster, err = kueueCluster(cluster); err != nil {
			return nil, err
		}
	}
	ag, err := writeCluster(ctx, s, cluster, o.lag, o.nodeAgent)
	if err != nil {
		return nil, err
	}
	if spec.companion {
		if err := s.startCompanion(ctx, strings.Fields(o.companionArgs)); err != nil {
			logf("%s", s.logTails(30))
			return nil, err
		}
	}
	if spec.kueue {
		err = s.startKueue(ctx, cluster)
	} else {
		err = s.startScheduler(ctx, spec)
	}
	if err != nil {
		logf("%s", s.logTails(30))
		return nil, err
	}
	logf("%s: scheduler up; settling %s", name, o.settle)
	time.Sleep(o.settle)
	if o.profileDir != "" && !spec.kueue {
		go profile("http://"+listenAddress(s), filepath.Join(o.profileDir, name+".cpu.pprof"), o.profileFor)
	}
	if o.profileDir != "" && spec.companion {
		go profile(s.companion.MetricsURL, filepath.Join(o.profileDir, name+".companion.cpu.pprof"), o.profileFor)
	}
	stopSampling := func() {}
	if o.profileDir != "" && o.heapEvery > 0 && !spec.kueue {
		stopSampling = sampleMemory(s, o.profileDir, name, o.heapEvery)
	}
	t, start, err := replay(ctx, s, ag, trace, o, spec.kueue)
	stopSampling()
	if err != nil {
		logf("%s", s.logTails(30))
		return nil, err
	}
	r := summarize(t, start, floors)
	// The kueue run's figures add Kueue's and kube-scheduler's: CPU,
	// and peak RSS as the sum of each one's peak.
	r.Details.Schedulers = map[string]componentUsage{}
	for _, p := range s.schedulers {
		u, err := p.Usage()
		if err != nil {
			return nil, fmt.Errorf("%s usage: %w", p.Name, err)
		}
		r.CPUSeconds += u.CPUSeconds
		r.PeakRSSBytes += u.PeakRSSBytes
		r.Details.Schedulers[p.Name] = componentUsage{CPUSeconds: u.CPUSeconds, PeakRSSBytes: u.PeakRSSBytes}
	}
	ag.mu.Lock()
	r.Details.PodsWithNUMAHint, r.Details.PodsWithoutNUMAHint = ag.hinted, ag.unhinted
	r.NUMAMisalignedPods, r.Details.KCNRWrites = ag.misaligned, ag.writes
	ag.mu.Unlock()
	m, err := s.metrics(ctx)
	if err == nil {
		r.Details.APIServerRequests, r.Details.APIServerRejected429 = requestTotals(m)
	} else if !spec.companion {
		logf("%s: API server metrics: %v", name, err)
	} else {
		return nil, fmt.Errorf("API server metrics: %w", err)
	}
	if spec.companion {
		w, err := webhookLatency(m, harness.BindWebhookName)
		if err != nil {
			return nil, err
		}
		r.BindWebhookP50Ms, r.BindWebhookP99Ms = &w.P50Ms, &w.P99Ms
		r.Details.BindWebhook = &w
		if r.Details.CompanionBinds, err = companionBinds(ctx, s.companion.MetricsURL, r.Details.BindWebhook); err != nil {
			logf("%s: companion metrics: %v", name, err)
		}
		logf("%s: the companion's own answer time p50/p99 %.2f/%.2f ms", name, w.CompanionAnswerP50Ms, w.CompanionAnswerP99Ms)
	}
	// Stop the schedulers before reading the audit log, so that every one
	// of their requests is in it.
	for _, p := range s.schedulers {
		p.Stop()
	}
	users := []string{schedulerUser}
	if spec.kueue {
		users = []string{kueueUser, kubeSchedulerUser}
	}
	if spec.companion {
		users = append(users, companionUser)
	}
	a, err := readAudit(s.auditLog, users...)
	if err != nil {
		return nil, err
	}
	r.APIRequests, r.Rejected429 = a.requests, a.rejected429
	r.CPUSecondsPerPod = perPod(r.CPUSeconds, r.Details.PodsBound)
	r.APIRequestsPerPod = perPod(float64(r.APIRequests), r.Details.PodsBound)
	r.Details.APIRequestsByKind, r.Details.SchedulerUserAgents = a.byKind, a.userAgents
	r.Details.SchedulerPeakInFlight = a.peakInFlight
	logf("%s: %d/%d gangs, %d pods bound in %.1fs; %.1f pods/s; gang p50/p99 %.1f/%.1fs; scheduler %.1f CPU s (%.4f per pod), peak RSS %d MiB, %d API requests (%.2f per pod, %d answered 429)",
		name, r.Details.GangsPlaced, len(trace.Gangs), r.Details.PodsBound, r.Details.WallSeconds, r.PodsPerSecond, r.GangP50Seconds, r.GangP99Seconds,
		r.CPUSeconds, r.CPUSecondsPerPod, r.PeakRSSBytes>>20, r.APIRequests, r.APIRequestsPerPod, r.Rejected429)
	if w := r.Details.BindWebhook; w != nil {
		logf("%s: bind webhook p50/p99 %.2f/%.2f ms (p99 ≤ %g ms) over %d calls, %d failed open; Lease writes p50/p99 %.2f/%.2f ms; %d NUMA-misaligned pods",
			name, w.P50Ms, w.P99Ms, w.P99BucketMs, w.Calls, w.FailOpen, w.LeaseWriteP50Ms, w.LeaseWriteP99Ms, r.NUMAMisalignedPods)
	}
	return &r, nil
}

// listenAddress is the scheduler's metrics address (host:port), where
// vc-scheduler serves net/http/pprof.
func listenAddress(s *stack) string {
	addr := ""
	for _, a := range s.scheduler.Args {
		if v, ok := strings.CutPrefix(a, "--listen-address="); ok {
			addr = v
		}
	}
	return addr
}

// profile saves a CPU profile of a running process serving net/http/pprof
// at base (the scheduler; the companion).
func profile(base, path string, d time.Duration) {
	url := fmt.Sprintf("%s/debug/pprof/profile?seconds=%d", base, int(d.Seconds()))
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		logf("profile: %v", err)
		return
	}
	// The profile takes d to answer: no client timeout.
	if err := saveURL(http.DefaultClient, url, path); err != nil {
		logf("profile: %v", err)
		return
	}
	logf("CPU profile written to %s", path)
}

// sampleMemory saves, every interval until the returned stop is called, the
// running scheduler's heap profile (dir/<run>.heap-<seconds>s.pprof, the
// seconds since sampling began) and a line of dir/<run>.rss.tsv: seconds,
// VmRSS and VmHWM in bytes. stop waits for a sample in progress. A sample
// that fails is logged and the sampling goes on.
func sampleMemory(s *stack, dir, name string, every time.Duration) (stop func()) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		logf("memory samples: %v", err)
		return func() {}
	}
	tsv, err := os.Create(filepath.Join(dir, name+".rss.tsv"))
	if err != nil {
		logf("memory samples: %v", err)
		return func() {}
	}
	fmt.Fprintln(tsv, "seconds\trssBytes\tpeakRSSBytes")
	url := fmt.Sprintf("http://%s/debug/pprof/heap", listenAddress(s))
	quit, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		defer tsv.Close()
		start := time.Now()
		tick := time.NewTicker(every)
		defer tick.Stop()
		for {
			select {
			case <-quit:
				return
			case <-tick.C:
			}
			sec := int(time.Since(start).Seconds())
			if u, err := s.scheduler.Usage(); err != nil {
				logf("memory samples: %v", err)
			} else {
				fmt.Fprintf(tsv, "%d\t%d\t%d\n", sec, u.RSSBytes, u.PeakRSSBytes)
			}
			if err := saveURL(sampleClient, url, filepath.Join(dir, fmt.Sprintf("%s.heap-%04ds.pprof", name, sec))); err != nil {
				logf("memory samples: %v", err)
			}
		}
	}()
	return func() {
		close(quit)
		<-done
	}
}

// sampleClient fetches memory samples; a scheduler that does not answer
// in time costs one sample, not the run.
var sampleClient = &http.Client{Timeout: 30 * time.Second}

// saveURL writes the body of a GET of url to path; nothing is written
// unless the answer is 200.
func saveURL(c *http.Client, url, path string) error {
	resp, err := c.Get(url)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: %s", url, resp.Status)
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, resp.Body); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
