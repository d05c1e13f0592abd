package rdmatopology

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"volcano.sh/volcano/pkg/scheduler/api"

	"github.com/rdmatopo/rdmatopo/core/ledger"
	"github.com/rdmatopo/rdmatopo/core/placement"
	"github.com/rdmatopo/rdmatopo/core/topology"
	"github.com/rdmatopo/rdmatopo/plugins/rdmatopology/schedmetrics"
)

// Metrics on the scheduler's existing Prometheus endpoint (schedmetrics:
// the default registry Volcano serves).
var (
	// gangsPlaced counts gangs committed, by the tier they were placed at.
	gangsPlaced = schedmetrics.CounterVec("gangs_placed_total",
		"RDMA gangs placed, by placement tier (node, s0, s1, cluster).", "tier")

	// gangS0s observes how many S0 switches each placed gang spans.
	gangS0s = schedmetrics.Histogram("gang_s0_switches",
		"Number of S0 leaf switches a placed RDMA gang spans.", []float64{1, 2, 3, 4, 6, 8, 12, 16, 32})

	// gangsPending is the number of RDMA gangs left unplaced in the last
	// session, by reason code.
	gangsPending = schedmetrics.GaugeVec("gangs_pending",
		"RDMA gangs not placed in the last session, by reason.", "reason")

	// planDuration observes the planner's time per gang.
	planDuration = schedmetrics.Histogram("plan_duration_seconds",
		"Time to plan one RDMA gang.", prometheus.ExponentialBuckets(0.0001, 2, 16))

	// planRefused counts planned nodes refused when the plan was applied.
	planRefused = schedmetrics.CounterVec("plan_refused_total",
		"Planned nodes that the session's predicates or idle resources refused when a gang's plan was applied, each costing a replan: what the planner's view of Kubernetes' admission missed; by the predicate that refused (Volcano's or Kubernetes' plugin name, IdleResources, or Allocate).", "predicate")

	// nicsUnconfirmed is the number of NICs reserved for pods the KCNRs do
	// not list yet. A vector without labels, like every gauge a session
	// sets: its one series exists from the first session on, so a standby
	// replica (which runs none) exports no value rather than a 0.
	nicsUnconfirmed = schedmetrics.GaugeVec("nics_reserved_unconfirmed",
		"NICs reserved for bound pods that no CustomNodeResource lists yet.")

	// hardGangsPending is the number of hard-mode RDMA gangs left unplaced
	// in the last session, whatever the reason: a hard gang waiting for its
	// tier on a cluster that fills moves from TierLimit to NoCapacity, and
	// the alert on long waits must follow it.
	hardGangsPending = schedmetrics.GaugeVec("hard_gangs_pending",
		"Hard-mode (rdmatopo.io/mode: hard) RDMA gangs not placed in the last session, whatever the reason.")

	// topologyUnknownNICs is the number of NICs whose leaf is unknown, by
	// the reason code of the cause, as of the last fabric sync.
	topologyUnknownNICs = schedmetrics.GaugeVec("topology_unknown_nics",
		"RDMA NICs whose S0 leaf is unknown (each counted as a leaf of its own), by reason code of the topology problem.", "reason")

	// Hardware faults (faults.go, replace.go).
	nicFailures = schedmetrics.Counter("nic_failures_total",
		"NICs seen failing: gone from their node's CustomNodeResource zones, or listed with allocatable 0.")
	nicCooldowns = schedmetrics.Counter("nic_cooldowns_total",
		"Cool-downs started: a NIC back after failing nicFlapCount times within nicFlapWindow, kept out of placement for nicCooldown.")
	nicsCoolingDown = schedmetrics.Gauge("nics_cooling_down",
		"NICs listed and free but kept out of placement in their cool-down.")
	failedLeaves = schedmetrics.Gauge("failed_leaves",
		"S0 leaves every NIC of which has failed.")
	replacements = schedmetrics.CounterVec("replacements_total",
		"Pods of running RDMA gangs replaced after a loss, by where the replacement went: leaf (a leaf the gang held), s1 (the gang's S1), wider.", "within")
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
func (s *SessionState) observeSession() {
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
