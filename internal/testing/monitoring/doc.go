// Package monitoring reads and evaluates config/monitoring: the
// PrometheusRule alerts, parsed in the subset of PromQL they are written
// in (Expr) and evaluated over scrapes of the scheduler's /metrics, so that
// tests can check which alerts a set of scheduler replicas would fire. Its
// tests also check that the Grafana dashboard and the alerts parse and
// name only metrics the rdmatopo vc-scheduler exports.
package monitoring
