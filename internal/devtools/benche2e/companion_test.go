package main

import (
	"math"
	"strings"
	"testing"
)

// apiserverWebhookMetrics is kube-apiserver's exposition of the webhook
// latency histogram for two webhooks (buckets of kube-apiserver v1.30),
// the companion's with two label sets, and a fail-open counter.
const apiserverWebhookMetrics = `# HELP apiserver_admission_webhook_admission_duration_seconds [STABLE] Admission webhook latency histogram in seconds, identified by name and broken out for each operation and API resource and type (validate or admit).
# TYPE apiserver_admission_webhook_admission_duration_seconds histogram
apiserver_admission_webhook_admission_duration_seconds_bucket{name="bind.companion.rdmatopo.io",operation="CREATE",rejected="false",type="admit",le="0.005"} 90
apiserver_admission_webhook_admission_duration_seconds_bucket{name="bind.companion.rdmatopo.io",operation="CREATE",rejected="false",type="admit",le="0.025"} 98
apiserver_admission_webhook_admission_duration_seconds_bucket{name="bind.companion.rdmatopo.io",operation="CREATE",rejected="false",type="admit",le="0.1"} 98
apiserver_admission_webhook_admission_duration_seconds_bucket{name="bind.companion.rdmatopo.io",operation="CREATE",rejected="false",type="admit",le="+Inf"} 98
apiserver_admission_webhook_admission_duration_seconds_sum{name="bind.companion.rdmatopo.io",operation="CREATE",rejected="false",type="admit"} 0.3
apiserver_admission_webhook_admission_duration_seconds_count{name="bind.companion.rdmatopo.io",operation="CREATE",rejected="false",type="admit"} 98
apiserver_admission_webhook_admission_duration_seconds_bucket{name="bind.companion.rdmatopo.io",operation="CREATE",rejected="true",type="admit",le="0.005"} 0
apiserver_admission_webhook_admission_duration_seconds_bucket{name="bind.companion.rdmatopo.io",operation="CREATE",rejected="true",type="admit",le="0.025"} 0
apiserver_admission_webhook_admission_duration_seconds_bucket{name="bind.companion.rdmatopo.io",operation="CREATE",rejected="true",type="admit",le="0.1"} 0
apiserver_admission_webhook_admission_duration_seconds_bucket{name="bind.companion.rdmatopo.io",operation="CREATE",rejected="true",type="admit",le="+Inf"} 2
apiserver_admission_webhook_admission_duration_seconds_sum{name="bind.companion.rdmatopo.io",operation="CREATE",rejected="true",type="admit"} 4
apiserver_admission_webhook_admission_duration_seconds_count{name="bind.companion.rdmatopo.io",operation="CREATE",rejected="true",type="admit"} 2
apiserver_admission_webhook_admission_duration_seconds_bucket{name="other.example.com",operation="CREATE",rejected="false",type="admit",le="0.005"} 0
apiserver_admission_webhook_admission_duration_seconds_bucket{name="other.example.com",operation="CREATE",rejected="false",type="admit",le="0.025"} 0
apiserver_admission_webhook_admission_duration_seconds_bucket{name="other.example.com",operation="CREATE",rejected="false",type="admit",le="0.1"} 0
apiserver_admission_webhook_admission_duration_seconds_bucket{name="other.example.com",operation="CREATE",rejected="false",type="admit",le="+Inf"} 50
apiserver_admission_webhook_admission_duration_seconds_sum{name="other.example.com",operation="CREATE",rejected="false",type="admit"} 100
apiserver_admission_webhook_admission_duration_seconds_count{name="other.example.com",operation="CREATE",rejected="false",type="admit"} 50
# HELP apiserver_admission_webhook_fail_open_count [ALPHA] Admission webhook fail open count.
# TYPE apiserver_admission_webhook_fail_open_count counter
apiserver_admission_webhook_fail_open_count{name="bind.companion.rdmatopo.io",type="admit"} 2
`

func TestWebhookLatency(t *testing.T) {
	f, err := webhookLatency(apiserverWebhookMetrics, "bind.companion.rdmatopo.io")
	if err != nil {
		t.Fatal(err)
	}
	// 100 calls: 90 under 5 ms, 8 in (5, 25] ms, 2 beyond 100 ms. The
	// median is the 50th of the 90 in the first bucket; the p99 (rank 99)
	// lies in the +Inf bucket, reported as the highest finite bound.
	if f.Calls != 100 || f.FailOpen != 2 {
		t.Errorf("calls %d, fail open %d; want 100, 2", f.Calls, f.FailOpen)
	}
	if want := 5 * 50.0 / 90; math.Abs(f.P50Ms-want) > 1e-9 {
		t.Errorf("p50 %v ms, want %v", f.P50Ms, want)
	}
	if f.P99Ms != 100 || f.P99BucketMs != 100 {
		t.Errorf("p99 %v ms (bucket %v), want 100 (100)", f.P99Ms, f.P99BucketMs)
	}
	var les []string
	for _, b := range f.BucketsMs {
		les = append(les, b.LeMs)
	}
	if got := strings.Join(les, " "); got != "5 25 100 +Inf" {
		t.Errorf("buckets %q", got)
	}
	if _, err := webhookLatency(apiserverWebhookMetrics, "absent.example.com"); err == nil {
		t.Error("a webhook the API server never called: no error")
	}
}

func TestHistogramQuantile(t *testing.T) {
	inf := math.Inf(1)
	bounds := []float64{0.005, 0.025, 0.1, inf}
	for _, tc := range []struct {
		name         string
		cum          []float64
		q            float64
		ms, bucketMs float64
	}{
		{"first bucket, from zero", []float64{100, 100, 100, 100}, 0.5, 2.5, 5},
		{"inside the second bucket", []float64{50, 100, 100, 100}, 0.99, 5 + 20*49.0/50, 25},
		{"on a bucket's upper edge", []float64{99, 100, 100, 100}, 0.99, 5, 5},
		{"beyond every finite bound", []float64{0, 0, 0, 10}, 0.5, 100, 100},
		{"no calls", []float64{0, 0, 0, 0}, 0.99, 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cum := map[float64]float64{}
			for i, b := range bounds {
				cum[b] = tc.cum[i]
			}
			ms, bucketMs := histogramQuantile(tc.q, bounds, cum)
			if math.Abs(ms-tc.ms) > 1e-9 || bucketMs != tc.bucketMs {
				t.Errorf("got %v ms (bucket %v), want %v (%v)", ms, bucketMs, tc.ms, tc.bucketMs)
			}
		})
	}
}
