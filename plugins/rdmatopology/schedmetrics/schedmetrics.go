// Package schedmetrics declares the vc-scheduler's rdmatopo metrics: every
// one is named rdmatopo_<name> and registered on Prometheus' default
// registry, the one Volcano serves on --listen-address. The plugin and the
// actions declare theirs through these constructors, so the subsystem and
// the registry are chosen in one place. Names, help texts and labels are a
// contract (docs/metrics.md, the alerts of config/monitoring).
package schedmetrics

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"
)

// Subsystem is the prefix of every metric name: rdmatopo_<name>.
const Subsystem = "rdmatopo"

// Counter registers the counter rdmatopo_<name>.
func Counter(name, help string) prometheus.Counter {
	return promauto.NewCounter(prometheus.CounterOpts{Subsystem: Subsystem, Name: name, Help: help})
}

// CounterVec registers the counter rdmatopo_<name> with labels; it has no
// series until one is asked for.
func CounterVec(name, help string, labels ...string) *prometheus.CounterVec {
	return promauto.NewCounterVec(prometheus.CounterOpts{Subsystem: Subsystem, Name: name, Help: help}, labels)
}

// Gauge registers the gauge rdmatopo_<name>, exported (at 0) from the start.
func Gauge(name, help string) prometheus.Gauge {
	return promauto.NewGauge(prometheus.GaugeOpts{Subsystem: Subsystem, Name: name, Help: help})
}

// GaugeVec registers the gauge rdmatopo_<name> with labels; it has no
// series until one is asked for. Without labels it is how a gauge only a
// session sets stays absent on a replica that runs none (a standby), rather
// than reading 0.
func GaugeVec(name, help string, labels ...string) *prometheus.GaugeVec {
	return promauto.NewGaugeVec(prometheus.GaugeOpts{Subsystem: Subsystem, Name: name, Help: help}, labels)
}

// Histogram registers the histogram rdmatopo_<name> with its buckets' upper
// bounds.
func Histogram(name, help string, buckets []float64) prometheus.Histogram {
	return promauto.NewHistogram(prometheus.HistogramOpts{Subsystem: Subsystem, Name: name, Help: help, Buckets: buckets})
}
