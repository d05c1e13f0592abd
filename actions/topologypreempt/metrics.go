package topologypreempt

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"
)

// Metrics on the scheduler's Prometheus endpoint, under the subsystem
// "rdmatopo".
const metricsSubsystem = "rdmatopo"

var (
	// preemptions counts gangs that evicted pods to be placed.
	preemptions = promauto.NewCounter(prometheus.CounterOpts{
		Subsystem: metricsSubsystem,
		Name:      "preemptions_total",
		Help:      "RDMA gangs for which topology-preempt evicted lower-priority pods.",
	})
	// evictedPods counts the pods topology-preempt evicted.
	evictedPods = promauto.NewCounter(prometheus.CounterOpts{
		Subsystem: metricsSubsystem,
		Name:      "evicted_pods_total",
		Help:      "Pods evicted by topology-preempt to place higher-priority RDMA gangs.",
	})
	// reclaims counts gangs that evicted pods of other queues to be placed.
	reclaims = promauto.NewCounter(prometheus.CounterOpts{
		Subsystem: metricsSubsystem,
		Name:      "reclaims_total",
		Help:      "RDMA gangs for which topology-reclaim evicted pods of other queues.",
	})
	// reclaimedPods counts the pods topology-reclaim evicted.
	reclaimedPods = promauto.NewCounter(prometheus.CounterOpts{
		Subsystem: metricsSubsystem,
		Name:      "reclaimed_pods_total",
		Help:      "Pods of other queues evicted by topology-reclaim to place RDMA gangs.",
	})
)
