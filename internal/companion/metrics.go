package companion

import (
	"github.com/prometheus/client_golang/prometheus"
)

// Bind results counted by rdmatopo_companion_binds_total.
const (
	// ResultAssisted: the webhook chose the pod's NICs.
	ResultAssisted = "assisted"
	// ResultAnnotated: the Binding already carried rdmatopo's annotations
	// (rdmatopo's own scheduler placed the pod); left as is.
	ResultAnnotated = "annotated"
	// ResultNoFit: no zone of the target node holds the pod; the bind goes
	// on unannotated and the node decides.
	ResultNoFit = "nofit"
	// ResultError: the owner could not answer (an API error reading the
	// pod, a patch it could not build); the bind goes on unannotated.
	ResultError = "error"
	// ResultRefused: the bind broke a hard tier and the webhook is
	// configured to refuse such binds.
	ResultRefused = "refused"
)

// Metrics are the companion's Prometheus metrics.
type Metrics struct {
	Registry *prometheus.Registry
	// Binds counts RDMA binds the webhook answered, by result.
	Binds *prometheus.CounterVec
	// Unassisted counts RDMA pods found bound without rdmatopo's
	// annotations: binds the webhook never answered (down, slow, or
	// not configured), whose NICs the node agent chose.
	Unassisted prometheus.Counter
	// HardTierBroken counts binds whose node, chosen by the other
	// scheduler, put a hard gang beyond its highest tier.
	HardTierBroken prometheus.Counter
	// Latency is the webhook's answer time for RDMA binds.
	Latency prometheus.Histogram
	// Forwarded counts RDMA binds this replica forwarded to the owner of
	// the book and answered with the owner's answer.
	Forwarded prometheus.Counter
	// UnassistedAnswers counts RDMA binds this replica let through without
	// choosing NICs because no owner could answer, by reason (Reason*).
	UnassistedAnswers *prometheus.CounterVec
	// Owner is 1 on the replica that owns the book, from the end of its
	// takeover until it stops leading (Answering also checks each bind).
	Owner prometheus.Gauge
	// PublishWrites counts writes of the publisher, by kind (hypernode,
	// label) and op (create, update, delete, patch).
	PublishWrites *prometheus.CounterVec
	// Adopted counts pods whose annotations were set to what their KCNR lists.
	Adopted prometheus.Counter
}

// NewMetrics registers the companion's metrics on a new registry (with the
// Go and process collectors).
func NewMetrics() *Metrics {
	m := &Metrics{
		Registry: prometheus.NewRegistry(),
		Binds: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "rdmatopo_companion_binds_total", Help: "RDMA pod binds the companion's webhook answered, by result.",
		}, []string{"result"}),
		Unassisted: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "rdmatopo_companion_unassisted_binds_total", Help: "RDMA pods bound without rdmatopo's annotations (the webhook did not answer their bind).",
		}),
		HardTierBroken: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "rdmatopo_companion_hard_tier_broken_total", Help: "Binds whose node put a hard gang beyond its highest tier.",
		}),
		Latency: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "rdmatopo_companion_bind_webhook_seconds", Help: "Time the webhook took to answer an RDMA bind.",
			Buckets: []float64{.001, .002, .005, .01, .02, .05, .1, .2, .5, 1, 2},
		}),
		Forwarded: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "rdmatopo_companion_forwarded_binds_total", Help: "RDMA binds this replica forwarded to the owner of the NIC book.",
		}),
		UnassistedAnswers: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "rdmatopo_companion_unassisted_answers_total", Help: "RDMA binds let through without NICs because no owner of the NIC book could answer, by reason.",
		}, []string{"reason"}),
		Owner: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "rdmatopo_companion_owner", Help: "1 on the replica that owns the NIC book, from the end of its takeover until it stops leading.",
		}),
		PublishWrites: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "rdmatopo_companion_publish_writes_total", Help: "Writes of HyperNodes and node labels, by kind and operation.",
		}, []string{"kind", "op"}),
		Adopted: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "rdmatopo_companion_adopted_total", Help: "Pods whose rdmatopo.io annotations were set to the NICs their KCNR lists.",
		}),
	}
	m.Registry.MustRegister(m.Binds, m.Unassisted, m.HardTierBroken, m.Latency, m.Forwarded, m.UnassistedAnswers, m.Owner, m.PublishWrites, m.Adopted,
		prometheus.NewGoCollector(), prometheus.NewProcessCollector(prometheus.ProcessCollectorOpts{}))
	return m
}
