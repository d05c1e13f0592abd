// Package soak drives the real scheduler session loop (Volcano's mock cache,
// the project's scheduler conf) through a long churn and checks, after every
// cycle, invariants read from the API objects: gangs arrive and finish,
// nodes are drained and come back, binds fail at a given rate, KCNR
// allocations lag the binds by a number of cycles, and the scheduler
// restarts every so many jobs (a new Volcano cache and rdma-topology
// runtime), rebuilding its state from the objects alone.
//
// Invariants, checked after every cycle on the objects (Checker):
//
//   - DoubleBookedNIC: no NIC of a node is in the rdmatopo.io/nics
//     annotation of more live bound pods than it has RDMA units
//     (--nic-units; one pod on a NIC of one unit).
//   - KCNRConflict: a pod bound in a cycle holds no NIC whose units the
//     KCNRs the cycle's session saw list consumed by other consumers. (A
//     KCNR that later shows a pod deleted before its allocation caught up
//     is the lag.)
//   - PartialGang: a gang with 0 < bound < minMember pods is a violation
//     unless one of its binds failed at most PartialGrace cycles ago, or
//     the node of its last failed bind is drained (the freed room is gone;
//     the grace starts again when the node is back).
//   - HardLimitBreach: a hard gang's planned tier (node if all its pods
//     share one node and their NICs one S0, else s0 if all the NICs its
//     pods were bound with hang off one S0, else s1 if one S1, else
//     cluster; S0 and S1 from the fabric) is no wider than its highest
//     tier. A gang the nodes realized wider than a
//     plan within the limit is counted in realizedWider, not as a breach,
//     except with the exact agent, where the realized tier is held to the
//     limit too.
//   - NICCountMismatch: a bound pod holds, in its annotation, exactly as
//     many NICs as it requests, all NICs of its node.
//   - LedgerMismatch: the plugin's ledger holds, per bound pod, the node and
//     NICs per NUMA zone that ledger.Rebuild derives from the pods, and
//     nothing else except pods whose bind failed in this very cycle
//     (reconcile releases those when the next session opens).
//   - KCNRDivergence: once a bound pod's KCNR lists it on NICs (the lag has
//     passed for it), its ledger reservation holds exactly those NICs in
//     those zones: no divergence, no leaked capacity.
//   - StuckGang: no gang stays pending for StuckAfter cycles on a whole,
//     idle cluster (every generated gang fits the empty cluster), and the
//     soak ends within MaxCycles.
//   - HigherPriorityEvicted (with Priorities): every evicted pod names a
//     preemptor the soak submitted, and, when the preemptor is of the
//     pod's queue, its priority (the higher of its own and its gang's) is
//     strictly below the preemptor's.
//   - WrongQueueEvicted (with Priorities): a pod evicted for a gang of
//     another queue is in a reclaimable queue (the soak's gangs run in a
//     prod queue that is not reclaimable and a batch queue that is).
//   - NonPreemptableEvicted (with Priorities): no pod carrying
//     volcano.sh/preemptable: "false" is evicted.
//   - PartialVictimGang (with Priorities): after a cycle's evictions no
//     victim gang keeps 0 < bound < minMember pods.
//
// With Priorities, a hard gang pending at least its max-wait since it was
// submitted may be placed wider than its highest tier, and a gang left
// partial by a failed bind waits without violation while the room that
// bind freed is held by a gang ahead of it in the job order (higher
// priority, or equal and older), as it waits when a node agent gave the
// room away. The NICs of evicted pods go to their preemptor while a
// lagging KCNR still lists the victims (not a KCNR conflict), and the
// reservations of pods pipelined by a preemption last until the next
// session opens (not a leak).
//
// Run is the library entry point; Main is the `rdmatopo-dev soak` command.
package soak

import (
	"fmt"
	"hash/fnv"
	"math"
	"math/rand"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"
	schedulingv1beta1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"

	"github.com/rdmatopo/rdmatopo/config"
	"github.com/rdmatopo/rdmatopo/core/ledger"
	"github.com/rdmatopo/rdmatopo/internal/sim"
	"github.com/rdmatopo/rdmatopo/internal/sim/nodeagent"
	"github.com/rdmatopo/rdmatopo/internal/testing/builders"
	"github.com/rdmatopo/rdmatopo/internal/workload"
	"github.com/rdmatopo/rdmatopo/plugins/rdmatopology"
)

// Config describes a soak run. Zero fields take the defaults of
// WithDefaults, except the fault knobs (BindFailureRate, KCNRLag,
// RestartEvery, DrainEvery), where zero means "no such fault".
type Config struct {
	// Jobs is how many gangs are submitted in total.
	Jobs int
	// BindFailureRate is the probability, in [0, 1), that one bind fails.
	BindFailureRate float64
	// KCNRLag is how many cycles after a bind (or a deletion) the node's
	// KCNR shows (or drops) the pod's allocations; at least one cycle
	// always passes.
	KCNRLag int
	// RestartEvery restarts the scheduler each time this many more jobs
	// have been submitted (0: never).
	RestartEvery int
	// Seed makes the run reproducible.
	Seed int64
	// Nodes is the cluster size (default 16).
	Nodes int
	// ZonesPerLeaf is how many NUMA zones share one S0 (default 4).
	ZonesPerLeaf int
	// SpanningEvery gives every n-th node a topology policy that lets a
	// pod span NUMA zones (default 4).
	SpanningEvery int
	// NICUnits is each NIC's RDMA units (default 1): above 1, pods share a
	// NIC up to its units.
	NICUnits int64
	// MaxLiveJobs caps the gangs alive at once (default Nodes).
	MaxLiveJobs int
	// DrainEvery drains a random node every so many cycles (0: never).
	DrainEvery int
	// DrainFor is how many cycles a drained node stays away (default 5).
	DrainFor int
	// PartialGrace is how many cycles after a failed bind a gang may stay
	// partial (default 2; see Checker).
	PartialGrace int
	// StuckAfter is how many idle cycles a pending gang may wait on an
	// otherwise empty cluster before it counts as stuck (default 5).
	StuckAfter int
	// MaxCycles bounds the run (default 50 per job plus 1000).
	MaxCycles int
	// SchedulerConf is the volcano-scheduler.conf (default: the project's).
	SchedulerConf string
	// NodeAgent chooses each bound pod's zones and NICs before its KCNR
	// lists them (see nodeagent.Mode; default nodeagent.Default).
	NodeAgent nodeagent.Mode
	// Constraints gives the cluster GPU taints, node pools and memory-tight
	// nodes, and soft gangs tolerations, masters of other shapes on their
	// own pool, memory and host ports (constraints.go).
	Constraints bool
	// Priorities gives the gangs PriorityClasses (low, medium, high), some
	// hard gangs a max-wait, and brings bursts of high-priority hard gangs
	// beyond MaxLiveJobs every BurstEvery cycles: the scheduler preempts.
	// Victim gangs are resubmitted (not counted in Jobs).
	Priorities bool
	// Queues, with Priorities, runs the gangs in two queues (queues.go): a
	// prod queue that may not be reclaimed from and a reclaimable batch
	// queue, so the scheduler reclaims across them (`rdmatopo-dev soak`
	// sets it unless --queues=false). Volcano's proportion plugin keeps a
	// queue at its deserved share from allocating; the pods of a gang
	// whose binds failed go back to the slots kept for them regardless
	// (rebind holds), so such a gang is not left partial by its queue's
	// share.
	Queues bool
	// BurstEvery is the cycles between bursts with Priorities (default 30).
	BurstEvery int
	// Faults are the hardware faults injected (faults.go: nic, leaf, node,
	// flap), one every FaultEvery cycles (default 10), in turn; each lasts
	// FaultFor cycles (default 6). The pods on failed hardware are deleted
	// and re-created ReplaceAfter cycles later (default 2).
	Faults       []string
	FaultEvery   int
	FaultFor     int
	ReplaceAfter int
}

// WithDefaults fills unset sizes.
func (c Config) WithDefaults() Config {
	def := func(v *int, d int) {
		if *v <= 0 {
			*v = d
		}
	}
	def(&c.Nodes, 16)
	def(&c.ZonesPerLeaf, 4)
	def(&c.SpanningEvery, 4)
	if c.NICUnits <= 0 {
		c.NICUnits = 1
	}
	def(&c.MaxLiveJobs, c.Nodes)
	def(&c.DrainFor, 5)
	def(&c.PartialGrace, 2)
	def(&c.StuckAfter, 5)
	def(&c.MaxCycles, 50*c.Jobs+1000)
	def(&c.BurstEvery, 30)
	def(&c.FaultEvery, 10)
	def(&c.FaultFor, 6)
	def(&c.ReplaceAfter, 2)
	if c.SchedulerConf == "" {
		c.SchedulerConf = config.SchedulerConf
	}
	if c.NodeAgent == "" {
		c.NodeAgent = nodeagent.Default
	}
	return c
}

// Validate reports the first unusable field.
func (c Config) Validate() error {
	switch {
	case c.Jobs < 1:
		return fmt.Errorf("jobs: must be at least 1, got %d", c.Jobs)
	case math.IsNaN(c.BindFailureRate) || c.BindFailureRate < 0 || c.BindFailureRate >= 1:
		return fmt.Errorf("bind-failure-rate: must be in [0, 1), got %v", c.BindFailureRate)
	case c.KCNRLag < 0:
		return fmt.Errorf("kcnr-lag: must be >= 0, got %d", c.KCNRLag)
	case c.RestartEvery < 0:
		return fmt.Errorf("restart-every: must be >= 0, got %d", c.RestartEvery)
	case c.DrainEvery < 0:
		return fmt.Errorf("drain-every: must be >= 0, got %d", c.DrainEvery)
	case c.Nodes < 0 || c.Nodes > 4096:
		return fmt.Errorf("nodes: must be in [1, 4096], got %d", c.Nodes)
	}
	if c.NodeAgent != "" {
		if _, err := nodeagent.ParseMode(string(c.NodeAgent)); err != nil {
			return fmt.Errorf("node-agent: %w", err)
		}
	}
	return nil
}

// Result is the soak's outcome; its JSON form is the `rdmatopo-dev soak -o json`
// output. Violations count distinct (kind, object) pairs, each once however
// many cycles it persists.
type Result struct {
	Jobs              int `json:"jobs"`
	Cycles            int `json:"cycles"`
	Restarts          int `json:"restarts"`
	BindFailures      int `json:"bindFailures"`
	Violations        int `json:"violations"`
	DoubleBookedNICs  int `json:"doubleBookedNICs"`
	PartialGangs      int `json:"partialGangs"`
	HardLimitBreaches int `json:"hardLimitBreaches"`
	// The remaining kinds of violation, and workload figures.
	KCNRConflicts    int `json:"kcnrConflicts"`
	NICCounts        int `json:"nicCountMismatches"`
	LedgerMismatches int `json:"ledgerMismatches"`
	// KCNRDivergences counts bound pods their KCNR lists whose ledger
	// reservation is not what the KCNR lists.
	KCNRDivergences int `json:"kcnrDivergences"`
	StuckGangs      int `json:"stuckGangs"`
	// PlanRefused counts planned nodes Volcano's predicates or idle
	// resources refused when a plan was applied
	// (rdmatopo_plan_refused_total over the run, this process): 0 when the
	// planner plans only what Kubernetes admits.
	PlanRefused   int `json:"planRefused"`
	Binds         int `json:"binds"`
	Drains        int `json:"drains"`
	JobsCompleted int `json:"jobsCompleted"`
	JobsKilled    int `json:"jobsKilled"`
	// NICMismatches counts bound pods whose KCNR entry listed other NICs
	// than they were bound with: the node agent chose otherwise and the
	// scheduler adopted its choice (not a violation).
	NICMismatches int `json:"nicMismatches"`
	// RealizedWider counts hard gangs planned within their highest tier
	// that the nodes realized wider (not a violation; see Checker).
	RealizedWider int `json:"realizedWider"`
	// ZoneDrift counts reservations whose GPU/CPU split over NUMA zones
	// differs from a rebuild (reported, not a violation; see Checker).
	ZoneDrift int `json:"zoneDrift"`
	// MaxPartialCycles is the longest a gang stayed partial, in cycles.
	MaxPartialCycles int `json:"maxPartialCycles"`
	// HigherPriorityEvictions and PartialVictimGangs count those
	// violations (Priorities).
	HigherPriorityEvictions int `json:"higherPriorityEvictions"`
	PartialVictimGangs      int `json:"partialVictimGangs"`
	// WrongQueueEvictions and NonPreemptableEvictions count those
	// violations (Priorities).
	WrongQueueEvictions     int `json:"wrongQueueEvictions"`
	NonPreemptableEvictions int `json:"nonPreemptableEvictions"`
	// EvictedPods counts pods the scheduler evicted, Resubmitted the victim
	// gangs submitted again, Relaxed the max-wait gangs whose wait passed.
	EvictedPods int `json:"evictedPods"`
	Resubmitted int `json:"resubmitted"`
	Relaxed     int `json:"relaxed"`
	// Faults counts the hardware faults injected (LeafFaults of them on a
	// whole leaf), LostPods the pods they failed.
	Faults     int `json:"faults"`
	LeafFaults int `json:"leafFaults"`
	LostPods   int `json:"lostPods"`
	// PlacedOnFailed counts pods bound onto failed hardware or a NIC in its
	// cool-down (violations).
	PlacedOnFailed int `json:"placedOnFailed"`
	// Replacements counts re-created pods bound; ReplacementsInLeaf those
	// under a leaf their gang held when the pod was lost,
	// ReplacementsWithinTier those plus the ones under the gang's S1s while
	// no leaf of the gang had room (graded by the checker), and
	// ReplacementsWithinTierFrac their share.
	Replacements               int     `json:"replacements"`
	ReplacementsInLeaf         int     `json:"replacementsInLeaf"`
	ReplacementsWithinTier     int     `json:"replacementsWithinTier"`
	ReplacementsWithinTierFrac float64 `json:"replacementsWithinTierFrac"`
	// FirstDrift describes the first such difference.
	FirstDrift string `json:"firstDrift,omitempty"`
	// FirstViolation describes the first violation found ("" if none).
	FirstViolation string `json:"firstViolation,omitempty"`
	// OutsideTier describes the replacements not within tier.
	OutsideTier []string `json:"-"`
	// Found lists the first violations (at most maxRecorded).
	Found []Violation `json:"-"`
}

// maxRecorded bounds Result.Found.
const maxRecorded = 100

// Namespace is where the soak's gangs live.
const Namespace = "soak"

// job is one gang of the soak.
type job struct {
	name      string
	minMember int
	pods      []*corev1.Pod
	duration  int
	// finishAt is the cycle after which the gang finishes (0: not yet
	// fully bound).
	finishAt int
	// spec is what it was generated as (resubmitted as such after an
	// eviction), submitted the cycle before which it arrived, maxWait its
	// max-wait in cycles (0: none).
	spec      gangSpec
	submitted int
	maxWait   int
	relaxed   bool
}

// runner holds a soak in progress.
type runner struct {
	cfg     Config
	rng     *rand.Rand
	sim     *sim.Simulator
	agent   *kcnrAgent
	checker *Checker
	nodes   map[string]*corev1.Node
	// drained maps a drained node to the cycle before which it returns.
	drained   map[string]int
	live      map[string]*job
	submitted int
	attempts  map[types.UID]int
	seen      map[string]bool
	res       Result
	// priorities maps every gang submitted ("namespace/name") to its
	// priority; resubmits counts resubmissions, for names.
	priorities map[string]int32
	resubmits  int
	// marks are the gangs' queues and preemptable marks (Priorities).
	marks queueMarks
	// evictedConsumers are the KCNR consumers of every evicted pod.
	evictedConsumers map[string]bool
	// faults are the hardware faults injected (nil: none); recreated
	// counts the pods re-created, for their UIDs.
	faults    *faults
	recreated int
}

// Run runs a soak. An error means the soak could not run (bad config, a
// scheduler panic); invariant violations are reported in the Result.
func Run(cfg Config) (*Result, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.WithDefaults()
	if len(cfg.Faults) > 0 {
		// The fault arguments the checker expects (faults.go), at one
		// simulated second per cycle.
		const anchor = "    arguments:\n"
		i := strings.Index(cfg.SchedulerConf, "  - name: "+rdmatopology.PluginName+"\n")
		j := strings.Index(cfg.SchedulerConf[max(i, 0):], anchor)
		if i < 0 || j < 0 {
			return nil, fmt.Errorf("faults: the scheduler conf has no %s plugin with arguments to set the fault arguments in", rdmatopology.PluginName)
		}
		at := i + j + len(anchor)
		cfg.SchedulerConf = cfg.SchedulerConf[:at] + faultArgs + cfg.SchedulerConf[at:]
	}
	conf, err := sim.ParseConf(cfg.SchedulerConf)
	if err != nil {
		return nil, fmt.Errorf("scheduler conf: %w", err)
	}
	nodes, cnrs := builders.ClusterShape{Nodes: cfg.Nodes, ZonesPerLeaf: cfg.ZonesPerLeaf, SpanningEvery: cfg.SpanningEvery, NICUnits: cfg.NICUnits}.Generate()
	if cfg.Constraints {
		constrainNodes(nodes)
	}
	r := &runner{
		cfg:      cfg,
		rng:      rand.New(rand.NewSource(cfg.Seed)),
		agent:    newKCNRAgent(conf.Topology, cfg.KCNRLag, cnrs),
		checker:  NewChecker(conf.Topology, cfg.PartialGrace),
		nodes:    map[string]*corev1.Node{},
		drained:  map[string]int{},
		live:     map[string]*job{},
		attempts: map[types.UID]int{},
		seen:     map[string]bool{},

		priorities:       map[string]int32{},
		evictedConsumers: map[string]bool{},
		marks:            queueMarks{queue: map[string]string{}, nonPreemptable: map[string]bool{}},
	}
	r.checker.NodeFollowsPlan = cfg.NodeAgent == nodeagent.Exact
	r.checker.NICUnits = cfg.NICUnits
	if len(cfg.Faults) > 0 {
		r.faults = newFaults(cfg.Faults)
	}
	for _, n := range nodes {
		n.Status.Allocatable[corev1.ResourcePods] = resource.MustParse("110")
		n.Status.Capacity[corev1.ResourcePods] = resource.MustParse("110")
		r.nodes[n.Name] = n
	}
	r.sim, err = sim.New(conf, &workload.Cluster{Nodes: nodes, CNRs: cnrs}, sim.Options{BindHook: r.bindHook})
	if err != nil {
		return nil, err
	}
	queues := []*schedulingv1beta1.Queue{workload.NewDefaultQueue()}
	if cfg.Priorities && cfg.Queues {
		queues = append(queues, queueObjects()...)
	}
	if err := r.sim.Submit(&workload.Set{Queues: queues, PriorityClasses: priorityClasses()}); err != nil {
		return nil, err
	}
	err = r.loop()
	drifted := map[string]bool{}
	for _, d := range r.checker.Drift {
		drifted[d.Object] = true
		if r.res.FirstDrift == "" {
			r.res.FirstDrift = d.String()
		}
	}
	r.res.ZoneDrift = len(drifted)
	r.res.MaxPartialCycles = r.checker.MaxPartialCycles
	r.res.NICMismatches = r.checker.NICMismatches
	r.res.RealizedWider = r.checker.RealizedWider
	r.res.PlanRefused = int(r.sim.PlanRefused())
	r.res.PlacedOnFailed = r.checker.PlacedOnFailed
	r.res.Replacements = r.checker.Replacements
	r.res.ReplacementsInLeaf = r.checker.ReplacementsInLeaf
	r.res.ReplacementsWithinTier = r.checker.ReplacementsWithinTier
	r.res.OutsideTier = r.checker.OutsideTier
	if r.res.Replacements > 0 {
		r.res.ReplacementsWithinTierFrac = float64(r.res.ReplacementsWithinTier) / float64(r.res.Replacements)
	}
	return &r.res, err
}

// bindHook fails a bind with probability BindFailureRate, decided by a hash
// of the seed, the pod's UID and its bind attempt, so the outcome does not
// depend on the order in which Volcano issues binds.
func (r *runner) bindHook(pod *corev1.Pod, node string) error {
	r.attempts[pod.UID]++
	if r.cfg.BindFailureRate <= 0 {
		return nil
	}
	h := fnv.New64a()
	fmt.Fprintf(h, "%d/%s/%d", r.cfg.Seed, pod.UID, r.attempts[pod.UID])
	if float64(mix64(h.Sum64())>>11)/float64(1<<53) < r.cfg.BindFailureRate {
		return fmt.Errorf("injected bind failure: pod %s/%s to node %s: conflict", pod.Namespace, pod.Name, node)
	}
	return nil
}

// loop runs cycles until every job was submitted and has finished.
func (r *runner) loop() error {
	idle := 0
	for r.submitted < r.cfg.Jobs || len(r.live) > 0 {
		if r.sim.Cycle() >= r.cfg.MaxCycles {
			r.record([]Violation{{Cycle: r.sim.Cycle(), Kind: KindStuck, Object: "soak",
				Detail: fmt.Sprintf("%d gangs still alive after %d cycles", len(r.live), r.cfg.MaxCycles)}})
			return nil
		}
		if err := r.churn(); err != nil {
			return err
		}
		sessionCNRs := r.sim.CNRs()
		rep, err := r.sim.RunCycle()
		if err != nil {
			return err
		}
		r.res.Cycles = rep.Cycle
		obs, err := r.observe(rep)
		if err != nil {
			return err
		}
		obs.SessionCNRs = sessionCNRs
		if obs.Faults != nil {
			obs.Faults.SessionFabric = r.fabricOf(sessionCNRs)
		}
		r.record(r.checker.Check(obs))
		if r.faults != nil {
			for uid := range obs.JustBound {
				if p := podByUID(obs.Pods, uid); p != nil {
					delete(r.faults.lost, podKey(p))
				}
			}
		}
		if r.idle(obs) {
			idle++
		} else {
			idle = 0
		}
		if idle > r.cfg.StuckAfter {
			var stuck []Violation
			for _, name := range sortedKeys(boolSet(r.live)) {
				stuck = append(stuck, Violation{Cycle: rep.Cycle, Kind: KindStuck, Object: Namespace + "/" + name,
					Detail: fmt.Sprintf("pending for %d cycles on an idle cluster", idle)})
			}
			r.record(stuck)
			return nil
		}
	}
	return nil
}

func boolSet(m map[string]*job) map[string]bool {
	out := make(map[string]bool, len(m))
	for k := range m {
		out[k] = true
	}
	return out
}

// idle reports whether the cluster is whole and empty with gangs pending:
// no pod bound, no node drained, no KCNR change queued, nothing left to
// submit this cycle.
func (r *runner) idle(o *Observation) bool {
	if len(r.live) == 0 || len(r.drained) > 0 || r.agent.pending() || (r.faults != nil && r.faults.active(r.sim.Cycle()+1)) {
		return false
	}
	for _, p := range o.Pods {
		if bound(p) {
			return false
		}
	}
	return true
}

// record counts new violations.
func (r *runner) record(vs []Violation) {
	for _, v := range vs {
		key := string(v.Kind) + "|" + v.Object
		if r.seen[key] {
			continue
		}
		r.seen[key] = true
		r.res.Violations++
		if r.res.FirstViolation == "" {
			r.res.FirstViolation = v.String()
		}
		if len(r.res.Found) < maxRecorded {
			r.res.Found = append(r.res.Found, v)
		}
		switch v.Kind {
		case KindDoubleBooked:
			r.res.DoubleBookedNICs++
		case KindPartialGang:
			r.res.PartialGangs++
		case KindHardLimit:
			r.res.HardLimitBreaches++
		case KindKCNRConflict:
			r.res.KCNRConflicts++
		case KindNICCount:
			r.res.NICCounts++
		case KindLedgerMismatch:
			r.res.LedgerMismatches++
		case KindKCNRDivergence:
			r.res.KCNRDivergences++
		case KindStuck:
			r.res.StuckGangs++
		case KindHigherPriorityEvicted:
			r.res.HigherPriorityEvictions++
		case KindPartialVictim:
			r.res.PartialVictimGangs++
		case KindWrongQueueEvicted:
			r.res.WrongQueueEvictions++
		case KindNonPreemptableEvicted:
			r.res.NonPreemptableEvictions++
		case KindPlacedOnFailed:
		}
	}
}

// churn changes the cluster before a cycle: drained nodes return, due KCNR
// updates land, finished gangs leave, a node may be drained, new gangs
// arrive and the scheduler may restart.
func (r *runner) churn() error {
	next := r.sim.Cycle() + 1
	for _, name := range sortedKeys(boolSet2(r.drained)) {
		if r.drained[name] <= next {
			delete(r.drained, name)
			r.sim.UpsertNode(r.nodes[name])
			r.sim.UpsertCNR(r.cnr(name))
		}
	}
	for _, name := range r.agent.due(next) {
		if _, away := r.drained[name]; !away {
			r.sim.UpsertCNR(r.cnr(name))
		}
	}
	for _, name := range sortedKeys(boolSet(r.live)) {
		if j := r.live[name]; j.finishAt > 0 && j.finishAt < next {
			if err := r.finish(j); err != nil {
				return err
			}
			r.res.JobsCompleted++
		}
	}
	if r.cfg.DrainEvery > 0 && next%r.cfg.DrainEvery == 0 {
		if err := r.drain(); err != nil {
			return err
		}
	}
	if r.faults != nil {
		if err := r.injectFaults(next); err != nil {
			return err
		}
	}
	restart := false
	if r.cfg.Priorities && next%r.cfg.BurstEvery == 0 {
		for i := 0; i < burstSize && r.submitted < r.cfg.Jobs; i++ {
			if err := r.submitSpec(r.burstGang(), ""); err != nil {
				return err
			}
			if r.cfg.RestartEvery > 0 && r.submitted%r.cfg.RestartEvery == 0 {
				restart = true
			}
		}
	}
	for r.submitted < r.cfg.Jobs && len(r.live) < r.cfg.MaxLiveJobs {
		if err := r.submit(); err != nil {
			return err
		}
		if r.cfg.RestartEvery > 0 && r.submitted%r.cfg.RestartEvery == 0 {
			restart = true
		}
	}
	if restart {
		r.sim.Restart()
		r.res.Restarts++
		if r.faults != nil {
			r.faults.restart = next
		}
	}
	return nil
}

func boolSet2(m map[string]int) map[string]bool {
	out := make(map[string]bool, len(m))
	for k := range m {
		out[k] = true
	}
	return out
}

// finish deletes a gang's pods and PodGroup; the KCNR drops their
// allocations after the lag.
func (r *runner) finish(j *job) error {
	bound := map[string]string{}
	evicted := map[string]bool{}
	for _, ps := range r.sim.Pods() {
		if ps.Pod.Namespace == Namespace && ps.Pod.Annotations[ledger.GroupNameAnnotation] == j.name {
			bound[ps.Pod.Name] = ps.Pod.Spec.NodeName
			evicted[ps.Pod.Name] = ps.Evicted != ""
		}
	}
	for _, p := range j.pods {
		node, ok := bound[p.Name]
		if !ok {
			continue
		}
		// The scheduler's evictions are deleted already; their node still
		// drops their allocations after the lag.
		if !evicted[p.Name] {
			if err := r.sim.DeletePod(Namespace, p.Name); err != nil {
				return err
			}
		}
		if node != "" {
			r.agent.schedule(r.sim.Cycle(), node, builders.Consumer(Namespace, p.Name, string(p.UID)), nil)
		}
	}
	delete(r.live, j.name)
	return r.sim.DeletePodGroup(Namespace, j.name)
}

// drain picks a present node, kills every gang with a pod bound there (a
// training job does not survive losing a member) and removes the node and
// its KCNR for DrainFor cycles.
func (r *runner) drain() error {
	var present []string
	for name := range r.nodes {
		if _, away := r.drained[name]; !away {
			present = append(present, name)
		}
	}
	if len(present) <= 1 {
		return nil
	}
	sort.Strings(present)
	node := present[r.rng.Intn(len(present))]
	victims := map[string]bool{}
	for _, ps := range r.sim.Pods() {
		if ps.Pod.Spec.NodeName == node && ps.Evicted == "" {
			victims[ps.Pod.Annotations[ledger.GroupNameAnnotation]] = true
		}
	}
	for _, name := range sortedKeys(victims) {
		if j, ok := r.live[name]; ok {
			if err := r.finish(j); err != nil {
				return err
			}
			r.res.JobsKilled++
		}
	}
	if err := r.sim.DeleteCNR(node); err != nil {
		return err
	}
	if err := r.sim.DeleteNode(node); err != nil {
		return err
	}
	r.drained[node] = r.sim.Cycle() + 1 + r.cfg.DrainFor
	if r.faults != nil {
		r.faults.forgetNode(node)
		delete(r.faults.nodes, node)
	}
	r.res.Drains++
	return nil
}

// observe records the cycle's binds (queueing their KCNR allocations) and
// failures, advances gangs that became whole, and returns what the checker
// reads.
func (r *runner) observe(rep *sim.CycleReport) (*Observation, error) {
	o := &Observation{Cycle: rep.Cycle, FailedBinds: map[string]bool{}, GangFailures: map[string][]string{},
		GangFailedNICs: map[string][]NodeNIC{}, JustBound: map[string]bool{}}
	r.res.Binds += len(rep.Binds)
	r.res.BindFailures += len(rep.FailedBinds)
	for _, b := range rep.FailedBinds {
		o.FailedBinds[string(b.Pod.UID)] = true
		gang := Namespace + "/" + b.Pod.Annotations[ledger.GroupNameAnnotation]
		o.GangFailures[gang] = append(o.GangFailures[gang], b.Node)
		nics, _ := ledger.ParseNICs(b.Pod.Annotations[ledger.AnnotationNICs])
		for _, n := range nics {
			o.GangFailedNICs[gang] = append(o.GangFailedNICs[gang], NodeNIC{Node: b.Node, NIC: n})
		}
	}
	justBound := o.JustBound
	for _, b := range rep.Binds {
		justBound[string(b.Pod.UID)] = true
	}
	evicted := map[string]bool{}
	for _, key := range rep.Evicted {
		evicted[key] = true
	}
	r.res.EvictedPods += len(rep.Evicted)
	o.Priorities = r.priorities
	o.Queues, o.NonPreemptable = r.marks.queue, r.marks.nonPreemptable
	o.EvictedConsumers = r.evictedConsumers
	o.Relaxed = map[string]bool{}
	for name, j := range r.live {
		if j.maxWait > 0 && rep.Cycle-j.submitted >= j.maxWait {
			o.Relaxed[Namespace+"/"+name] = true
			if !j.relaxed {
				j.relaxed = true
				r.res.Relaxed++
			}
		}
	}
	o.Fabric = r.sim.Fabric()
	boundByGang := map[string]int{}
	for _, ps := range r.sim.Pods() {
		if ps.Evicted != "" {
			if key := ps.Pod.Namespace + "/" + ps.Pod.Name; evicted[key] {
				o.Evictions = append(o.Evictions, evictionOf(ps))
				r.evictedConsumers[builders.Consumer(ps.Pod.Namespace, ps.Pod.Name, string(ps.Pod.UID))] = true
			}
			continue
		}
		p := ps.Pod
		o.Pods = append(o.Pods, p)
		if !bound(p) {
			continue
		}
		boundByGang[p.Annotations[ledger.GroupNameAnnotation]]++
		if !justBound[string(p.UID)] {
			continue
		}
		if res, ok := r.allot(p, o); ok {
			r.agent.schedule(rep.Cycle, p.Spec.NodeName, res.Consumer(), &res)
		}
	}
	// The PodGroups as the cycle left them, before victims are cleared away.
	o.PodGroups = r.sim.PodGroups()
	for _, name := range sortedKeys(boolSet(r.live)) {
		j := r.live[name]
		killed := false
		for _, p := range j.pods {
			killed = killed || evicted[Namespace+"/"+p.Name]
		}
		switch {
		case killed:
			if err := r.finish(j); err != nil {
				return nil, err
			}
			r.res.JobsKilled++
			if r.cfg.Priorities {
				// The job controller restarts a preempted job.
				r.resubmits++
				if err := r.submitSpec(j.spec, fmt.Sprintf("%s-r%d", j.name, r.resubmits)); err != nil {
					return nil, err
				}
				r.res.Resubmitted++
			}
		case j.finishAt == 0 && boundByGang[name] >= j.minMember:
			j.finishAt = rep.Cycle + j.duration
		}
	}
	if r.faults != nil {
		o.Faults = r.faultView(o)
	}
	o.Ledger = r.sim.Ledger().All()
	if err := r.sim.Ledger().CheckInvariants(); err != nil {
		r.record([]Violation{{Cycle: rep.Cycle, Kind: KindLedgerMismatch, Object: "ledger", Detail: err.Error()}})
	}
	return o, nil
}

// mix64 is the splitmix64 finaliser: FNV leaves the high bits nearly
// unchanged when only the last byte differs (the attempt number), so the
// hash is mixed before its high bits are used.
func mix64(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return x
}

// allot is the node agent's choice for a pod just bound: with the exact
// agent the reservation its annotations record; otherwise what the agent
// gives it on the node, given what it already handed out there.
func (r *runner) allot(p *corev1.Pod, o *Observation) (ledger.Reservation, bool) {
	if r.cfg.NodeAgent == nodeagent.Exact {
		rebuilt, _ := ledger.Rebuild(r.checker.Config, []*corev1.Pod{p}, o.Fabric)
		return rebuilt.Get(string(p.UID))
	}
	return nodeagent.Allot(r.cfg.NodeAgent, r.checker.Config, r.baseOf(p.Spec.NodeName), r.agent.given(p.Spec.NodeName), p)
}
