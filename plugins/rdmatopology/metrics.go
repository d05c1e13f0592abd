package rdmatopology

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"
	"volcano.sh/volcano/pkg/scheduler/api"

	"github.com/rdmatopo/rdmatopo/framework/ledger"
	"github.com/rdmatopo/rdmatopo/framework/placement"
	"github.com/rdmatopo/rdmatopo/framework/topology"
)

// Metrics on the scheduler's existing Prometheus endpoint (the default
// registry Volcano serves), under the subsystem "rdmatopo".
const metricsSubsystem = "rdmatopo"

var (
	// gangsPlaced counts gangs committed, by the tier they were placed at.
	gangsPlaced = promauto.NewCounterVec(prometheus.CounterOpts{
		Subsystem: metricsSubsystem,
		Name:      "gangs_placed_total",
		Help:      "RDMA gangs placed, by placement tier (node, s0, s1, cluster).",
	}, []string{"tier"})

	// gangS0s observes how many S0 switches each placed gang spans.
	gangS0s = promauto.NewHistogram(prometheus.HistogramOpts{
		Subsystem: metricsSubsystem,
		Name:      "gang_s0_switches",
		Help:      "Number of S0 leaf switches a placed RDMA gang spans.",
		Buckets:   []float64{1, 2, 3, 4, 6, 8, 12, 16, 32},
	})

	// gangsPending is the number of RDMA gangs left unplaced in the last
	// session, by reason code.
	gangsPending = promauto.NewGaugeVec(prometheus.GaugeOpts{
		Subsystem: metricsSubsystem,
		Name:      "gangs_pending",
		Help:      "RDMA gangs not placed in the last session, by reason.",
	}, []string{"reason"})

	// planDuration observes the planner's time per gang.
	planDuration = promauto.NewHistogram(prometheus.HistogramOpts{
		Subsystem: metricsSubsystem,
		Name:      "plan_duration_seconds",
		Help:      "Time to plan one RDMA gang.",
		Buckets:   prometheus.ExponentialBuckets(0.0001, 2, 16),
	})

	// planRefused counts planned nodes refused when the plan was applied.
	planRefused = promauto.NewCounterVec(prometheus.CounterOpts{
		Subsystem: metricsSubsystem,
		Name:      "plan_refused_total",
		Help:      "Planned nodes that the session's predicates or idle resources refused when a gang's plan was applied, each costing a replan: what the planner's view of Kubernetes' admission missed; by the predicate that refused (Volcano's or Kubernetes' plugin name, IdleResources, or Allocate).",
	}, []string{"predicate"})

	// nicsUnconfirmed is the number of NICs reserved for pods the KCNRs do
	// not list yet. A vector without labels, like every gauge a session
	// sets: its one series exists from the first session on, so a standby
	// replica (which runs none) exports no value rather than a 0.
	nicsUnconfirmed = promauto.NewGaugeVec(prometheus.GaugeOpts{
		Subsystem: metricsSubsystem,
		Name:      "nics_reserved_unconfirmed",
		Help:      "NICs reserved for bound pods that no CustomNodeResource lists yet.",
	}, nil)

	// hardGangsPending is the number of hard-mode RDMA gangs left unplaced
	// in the last session, whatever the reason: a hard gang waiting for its
	// tier on a cluster that fills moves from TierLimit to NoCapacity, and
	// the alert on long waits must follow it.
	hardGangsPending = promauto.NewGaugeVec(prometheus.GaugeOpts{
		Subsystem: metricsSubsystem,
		Name:      "hard_gangs_pending",
		Help:      "Hard-mode (rdmatopo.io/mode: hard) RDMA gangs not placed in the last session, whatever the reason.",
	}, nil)

	// topologyUnknownNICs is the number of NICs whose leaf is unknown, by
	// the reason code of the cause, as of the last fabric sync.
	topologyUnknownNICs = promauto.NewGaugeVec(prometheus.GaugeOpts{
		Subsystem: metricsSubsystem,
		Name:      "topology_unknown_nics",
		Help:      "RDMA NICs whose S0 leaf is unknown (each counted as a leaf of its own), by reason code of the topology problem.",
	}, []string{"reason"})

	// Hardware faults (faults.go, replace.go).
	nicFailures = promauto.NewCounter(prometheus.CounterOpts{
		Subsystem: metricsSubsystem,
		Name:      "nic_failures_total",
		Help:      "NICs seen failing: gone from their node's CustomNodeResource zones, or listed with allocatable 0.",
	})
	nicCooldowns = promauto.NewCounter(prometheus.CounterOpts{
		Subsystem: metricsSubsystem,
		Name:      "nic_cooldowns_total",
		Help:      "Cool-downs started: a NIC back after failing nicFlapCount times within nicFlapWindow, kept out of placement for nicCooldown.",
	})
	nicsCoolingDown = promauto.NewGauge(prometheus.GaugeOpts{
		Subsystem: metricsSubsystem,
		Name:      "nics_cooling_down",
		Help:      "NICs listed and free but kept out of placement in their cool-down.",
	})
	failedLeaves = promauto.NewGauge(prometheus.GaugeOpts{
		Subsystem: metricsSubsystem,
		Name:      "failed_leaves",
		Help:      "S0 leaves every NIC of which has failed.",
	})
	replacements = promauto.NewCounterVec(prometheus.CounterOpts{
		Subsystem: metricsSubsystem,
		Name:      "replacements_total",
		Help:      "Pods of running RDMA gangs replaced after a loss, by where the replacement went: leaf (a leaf the gang held), s1 (the gang's S1), wider.",
	}, []string{"within"})
)

// observeUnknownNICs sets rdmatopo_topology_unknown_nics to the counts of a
// freshly synced fabric: every reason code a NIC can be unknown for has its
// series, 0 when no NIC is, so that a dashboard shows 0 rather than no
// data.
func observeUnknownNICs(byReason map[topology.ReasonCode]int) {
	topologyUnknownNICs.Reset()
	for _, code := range topology.UnknownLeafReasons {
		topologyUnknownNICs.WithLabelValues(string(code)).Set(0)
	}
	for code, n := range byReason {
		topologyUnknownNICs.WithLabelValues(string(code)).Set(float64(n))
	}
}

// observePlan records the duration of one planner call on the free view.
func observePlan(d time.Duration) { planDuration.Observe(d.Seconds()) }

// planRefusedStart are the label values rdmatopo_plan_refused_total is
// exported with, at 0, from the start (an absent counter reads as no data,
// not as 0, in an increase() or a dashboard): what refuses a plan when the
// predicates name no plugin, the idle resources and the allocation itself.
var planRefusedStart = []string{"predicates", "IdleResources", "Allocate"}

func init() {
	for _, v := range planRefusedStart {
		planRefused.WithLabelValues(v)
	}
}

// observePlanRefused records a planned node refused when the plan was
// applied, by the predicate that refused it.
func observePlanRefused(predicate string) { planRefused.WithLabelValues(predicate).Inc() }

// observePlaced records a committed gang.
func observePlaced(p *placement.Plan) {
	gangsPlaced.WithLabelValues(p.Tier.String()).Inc()
	gangS0s.Observe(float64(len(p.S0s)))
}

// observeSession refreshes the per-session gauges.
func (s *Session) observeSession() {
	var unconfirmed int
	s.rt.Ledger.Each(func(r ledger.Reservation) {
		if !r.Confirmed {
			for _, z := range r.Zones {
				unconfirmed += len(z.NICs)
			}
		}
	})
	nicsUnconfirmed.WithLabelValues().Set(float64(unconfirmed))
	observeFabric(s.fabric, s.rt.Ledger)
	gangsPending.Reset()
	var pending []*api.JobInfo
	s.mu.Lock()
	for id, f := range s.failures {
		if job := s.ssn.Jobs[id]; job != nil && job.ReadyTaskNum() < job.MinAvailable {
			gangsPending.WithLabelValues(string(f.Code)).Inc()
			pending = append(pending, job)
		}
	}
	s.mu.Unlock()
	hard := 0
	for _, job := range pending {
		if c, err := s.contract(job); err == nil && c.Mode == placement.ModeHard {
			hard++
		}
	}
	hardGangsPending.WithLabelValues().Set(float64(hard))
}
