// Package monitoring holds the checks of config/monitoring: the Grafana
// dashboard and the PrometheusRule alerts parse, and every metric they
// name is one the rdmatopo vc-scheduler exports.
package monitoring
