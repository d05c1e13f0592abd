package main

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rdmatopo/rdmatopo/internal/testing/harness"
	"github.com/rdmatopo/rdmatopo/internal/testing/webhookcert"
)

// The companion runs (stock-companion, kueue-companion): `rdmatopo
// companion` beside the scheduler, its pods/binding webhook installed as
// the Helm chart installs it.
const (
	// companionUser is the identity the companion runs as: in
	// system:masters, counted in the run's API requests.
	companionUser      = "system:serviceaccount:rdmatopo-companion:rdmatopo-companion"
	companionNamespace = "rdmatopo-companion"
	// companionWebhookTimeout is the chart's default timeoutSeconds.
	companionWebhookTimeout = 2
)

// startCompanion starts `rdmatopo companion` with its webhook and installs
// the chart's MutatingWebhookConfiguration calling it. The companion
// publishes neither HyperNodes nor node labels here: stock Volcano v1.10
// reads no HyperNodes, and the Kueue runs' Topology names the benchmark's
// own leaf-group label (the same grouping the companion would label).
// extra are appended to its flags.
func (s *stack) startCompanion(ctx context.Context, extra []string) error {
	certDir := filepath.Join(s.dir, "certs", "companion-webhook")
	ca, err := webhookcert.Write(certDir, "rdmatopo-bench-e2e-companion-ca")
	if err != nil {
		return err
	}
	kc := filepath.Join(s.dir, "certs", "companion.kubeconfig")
	if err := harness.WriteKubeconfig(kc, s.serverURL, "companion", s.companionToken); err != nil {
		return err
	}
	p, err := s.procs.StartCompanion(ctx, s.Kube, harness.Companion{
		Name: "companion", Binary: filepath.Join(s.binDir, "rdmatopo"), Kubeconfig: kc,
		Namespace: companionNamespace, CertDir: certDir, Timeout: readyTimeout,
		ExtraArgs: append([]string{"--publish-hypernodes=false", "--publish-labels=false", "--profiling", "--v=1"}, extra...),
	})
	if p != nil && p.Process != nil {
		s.companion = p
		s.schedulers = append(s.schedulers, p.Process)
	}
	if err != nil {
		return err
	}
	cfg := harness.BindWebhookConfiguration("rdmatopo-companion", ca, companionWebhookTimeout,
		harness.BindHook{Name: harness.BindWebhookName, URL: p.WebhookURL})
	if _, err := s.Kube.AdmissionregistrationV1().MutatingWebhookConfigurations().Create(ctx, cfg, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("create MutatingWebhookConfiguration %s: %w", cfg.Name, err)
	}
	return nil
}

// companionBinds reads rdmatopo_companion_binds_total by result from the
// companion's /metrics, and into w the companion's own account of its
// answer time (rdmatopo_companion_bind_webhook_seconds).
func companionBinds(ctx context.Context, base string, w *webhookFigures) (map[string]int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/metrics", nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%s/metrics: %s", base, resp.Status)
	}
	var p expfmt.TextParser
	families, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("%s/metrics: %w", base, err)
	}
	if fam := families["rdmatopo_companion_bind_webhook_seconds"]; fam != nil && w != nil {
		cum := map[float64]float64{}
		for _, m := range fam.GetMetric() {
			addHistogram(cum, m.GetHistogram())
		}
		bounds := sortedBounds(cum)
		w.CompanionAnswerP50Ms, _ = histogramQuantile(0.50, bounds, cum)
		w.CompanionAnswerP99Ms, _ = histogramQuantile(0.99, bounds, cum)
	}
	out := map[string]int{}
	if fam := families["rdmatopo_companion_binds_total"]; fam != nil {
		for _, m := range fam.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "result" {
					out[l.GetValue()] += int(m.GetCounter().GetValue())
				}
			}
		}
	}
	return out, nil
}

// webhookFigures is what kube-apiserver's own metrics say of one admission
// webhook: apiserver_admission_webhook_admission_duration_seconds (the
// time the API server waited for the webhook's answer, over every
// operation and outcome), apiserver_admission_webhook_fail_open_count.
type webhookFigures struct {
	// Calls is the histogram's count.
	Calls int `json:"calls"`
	// BucketsMs are the histogram's cumulative counts by upper bound in
	// milliseconds ("+Inf" last).
	BucketsMs []bucketCount `json:"bucketsMs"`
	// P50Ms and P99Ms interpolate linearly inside the bucket the quantile
	// falls in (as Prometheus' histogram_quantile); P99BucketMs is that
	// bucket's upper bound: the p99 is at most it.
	P50Ms       float64 `json:"p50Ms"`
	P99Ms       float64 `json:"p99Ms"`
	P99BucketMs float64 `json:"p99BucketMs"`
	// FailOpen counts the calls that failed or timed out and, under
	// failurePolicy Ignore, let the bind go on unannotated.
	FailOpen int `json:"failOpen"`
	// LeaseWrites, LeaseWriteP50Ms and LeaseWriteP99Ms are the API
	// server's own account of the Lease creates and updates in the
	// companion's namespace and every other (apiserver_request_duration_seconds,
	// resource leases, verbs POST and PUT; the same interpolation): the
	// companion's owner election beside the leases of the other
	// components; no bind waits for them.
	LeaseWrites     int     `json:"leaseWrites"`
	LeaseWriteP50Ms float64 `json:"leaseWriteP50Ms"`
	LeaseWriteP99Ms float64 `json:"leaseWriteP99Ms"`
	// CompanionAnswerP50Ms and CompanionAnswerP99Ms are the companion's
	// own account of the time it took to answer the RDMA binds it chose
	// for, from reading the request to the answer
	// (rdmatopo_companion_bind_webhook_seconds, buckets 1 ms to 2 s; the
	// same interpolation): the part of the API server's figure spent in
	// the companion's code.
	CompanionAnswerP50Ms float64 `json:"companionAnswerP50Ms"`
	CompanionAnswerP99Ms float64 `json:"companionAnswerP99Ms"`
}

type bucketCount struct {
	LeMs  string `json:"le"`
	Count int    `json:"count"`
}

// webhookLatency reads the figures of the webhook named name from the API
// server's /metrics text.
func webhookLatency(metrics, name string) (webhookFigures, error) {
	var p expfmt.TextParser
	families, err := p.TextToMetricFamilies(strings.NewReader(metrics))
	if err != nil {
		return webhookFigures{}, fmt.Errorf("parse the API server's metrics: %w", err)
	}
	const hist = "apiserver_admission_webhook_admission_duration_seconds"
	named := func(m *dto.Metric) bool {
		for _, l := range m.GetLabel() {
			if l.GetName() == "name" {
				return l.GetValue() == name
			}
		}
		return false
	}
	var f webhookFigures
	byLe := map[float64]float64{}
	if fam := families[hist]; fam != nil {
		for _, m := range fam.GetMetric() {
			if !named(m) {
				continue
			}
			addHistogram(byLe, m.GetHistogram())
			f.Calls += int(m.GetHistogram().GetSampleCount())
		}
	}
	if fam := families["apiserver_admission_webhook_fail_open_count"]; fam != nil {
		for _, m := range fam.GetMetric() {
			if named(m) {
				f.FailOpen += int(m.GetCounter().GetValue())
			}
		}
	}
	if len(byLe) == 0 {
		return f, fmt.Errorf("the API server exports no %s for webhook %s", hist, name)
	}
	bounds := sortedBounds(byLe)
	for _, le := range bounds {
		f.BucketsMs = append(f.BucketsMs, bucketCount{LeMs: formatLeMs(le), Count: int(byLe[le])})
	}
	f.P50Ms, _ = histogramQuantile(0.50, bounds, byLe)
	f.P99Ms, f.P99BucketMs = histogramQuantile(0.99, bounds, byLe)
	leases := map[float64]float64{}
	if fam := families["apiserver_request_duration_seconds"]; fam != nil {
		for _, m := range fam.GetMetric() {
			l := map[string]string{}
			for _, p := range m.GetLabel() {
				l[p.GetName()] = p.GetValue()
			}
			if l["resource"] != "leases" || l["verb"] != "POST" && l["verb"] != "PUT" {
				continue
			}
			addHistogram(leases, m.GetHistogram())
			f.LeaseWrites += int(m.GetHistogram().GetSampleCount())
		}
	}
	if len(leases) > 0 {
		lb := sortedBounds(leases)
		f.LeaseWriteP50Ms, _ = histogramQuantile(0.50, lb, leases)
		f.LeaseWriteP99Ms, _ = histogramQuantile(0.99, lb, leases)
	}
	return f, nil
}

// addHistogram adds a histogram's cumulative buckets to cum, by upper
// bound (+Inf: the count).
func addHistogram(cum map[float64]float64, h *dto.Histogram) {
	for _, b := range h.GetBucket() {
		if !math.IsInf(b.GetUpperBound(), 1) {
			cum[b.GetUpperBound()] += float64(b.GetCumulativeCount())
		}
	}
	cum[math.Inf(1)] += float64(h.GetSampleCount())
}

// sortedBounds lists a histogram's upper bounds in order.
func sortedBounds(cum map[float64]float64) []float64 {
	bounds := make([]float64, 0, len(cum))
	for le := range cum {
		bounds = append(bounds, le)
	}
	sort.Float64s(bounds)
	return bounds
}

func formatLeMs(le float64) string {
	if math.IsInf(le, 1) {
		return "+Inf"
	}
	return strconv.FormatFloat(le*1000, 'f', -1, 64)
}

// histogramQuantile returns, in milliseconds, the q-quantile of a
// cumulative histogram (bounds sorted, the last +Inf) interpolated
// linearly inside its bucket (the first bucket from 0), and that bucket's
// upper bound. A quantile in the +Inf bucket is the highest finite bound
// for both: the histogram cannot say more.
func histogramQuantile(q float64, bounds []float64, cum map[float64]float64) (ms, bucketMs float64) {
	total := cum[bounds[len(bounds)-1]]
	if total == 0 {
		return 0, 0
	}
	rank := q * total
	lower, below := 0.0, 0.0
	for _, le := range bounds {
		c := cum[le]
		if c >= rank {
			if math.IsInf(le, 1) {
				return lower * 1000, lower * 1000
			}
			if c == below {
				return le * 1000, le * 1000
			}
			return 1000 * (lower + (le-lower)*(rank-below)/(c-below)), le * 1000
		}
		lower, below = le, c
	}
	return lower * 1000, lower * 1000
}
