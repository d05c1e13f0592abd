package replay

import (
	"fmt"
	"math"
	"runtime"
	"slices"
	"sort"
	"strings"
	"time"

	"k8s.io/klog/v2"

	"github.com/rdmatopo/rdmatopo/actions/topologypreempt"
	"github.com/rdmatopo/rdmatopo/core/placement"
	"github.com/rdmatopo/rdmatopo/internal/devtools/bench/grade"
	"github.com/rdmatopo/rdmatopo/internal/devtools/bench/trace"
	"github.com/rdmatopo/rdmatopo/internal/sim"
	"github.com/rdmatopo/rdmatopo/internal/sim/nodeagent"
	"github.com/rdmatopo/rdmatopo/internal/testing/builders"
	"github.com/rdmatopo/rdmatopo/internal/workload"
)

// BaselinePreemptConfText is BaselineConfText with Volcano's preempt and
// reclaim actions, as a stock scheduler that preempts runs it.
var BaselinePreemptConfText = strings.Replace(BaselineConfText,
	`actions: "enqueue, allocate, backfill"`, `actions: "enqueue, allocate, preempt, reclaim, backfill"`, 1)

// DefaultEvictionGrace is the default of --eviction-grace: evicted pods
// terminate for 5 cycles (5 s at vc-scheduler's 1 s period; a pod's
// terminationGracePeriodSeconds is 30 s unless it sets less).
const DefaultEvictionGrace = 5

// futileWindow is how many cycles after an eviction its preemptor must be
// placed for the eviction to count as useful.
const futileWindow = 3

// LoadResult is what one replay of the high-load trace measured. JSON names
// are the benchmark's output contract for --load high.
type LoadResult struct {
	// BigGangWaitP50Cycles and BigGangWaitP95Cycles are percentiles of the
	// large gangs' waits: cycles from arrival to the cycle the last pod of
	// a submission no kubelet refused bound. A large gang that never ran
	// counts as waiting until one cycle past the last cycle run (a lower
	// bound).
	BigGangWaitP50Cycles float64 `json:"bigGangWaitP50Cycles"`
	BigGangWaitP95Cycles float64 `json:"bigGangWaitP95Cycles"`
	// StarvedGangs counts the trace's hard gangs not running at the end:
	// their latest submission unplaced, or killed in the last cycle (a
	// victim, or refused by a kubelet) with its resubmission still to come.
	// The run goes on past the trace's cycles, with no new arrival, while
	// such a gang is left, for at most the trace's SettleCycles.
	StarvedGangs int `json:"starvedGangs"`
	// NeverWithinTier counts the trace's hard gangs none of whose
	// submissions ran within its highest-tier: starved, or placed only
	// beyond the tier (HardTierViolations) or where a kubelet refused a pod.
	// What a hard contract asks for is the tier, not a place anywhere.
	NeverWithinTier int `json:"neverWithinTier"`
	// WaitingAtTraceEnd counts the hard gangs not running after the trace's
	// cycles, before any settle cycle.
	WaitingAtTraceEnd int `json:"waitingAtTraceEnd"`
	// Cycles is how many cycles the run took, settle cycles included.
	Cycles int `json:"cycles"`
	// EvictedPods counts the pods the scheduler evicted.
	EvictedPods int `json:"evictedPods"`
	// FutileEvictions counts evicted pods whose node no waiting gang used:
	// a pod's node is used when a gang that was waiting (submitted, not yet
	// placed) when the pod was evicted bound a pod to it and completed, from
	// the evicting cycle to futileWindow cycles after the pod was gone from
	// its node (the evicting cycle, or the end of its grace). The pods of
	// one victim gang evicted in one cycle are one eviction (a gang does not
	// survive a lost pod): useful when any of their nodes was used. It is
	// read from binds alone, not from what the scheduler says it evicted
	// for (eviction reasons, nominations).
	FutileEvictions int `json:"futileEvictions"`
	// UndecidedEvictions counts evictions left out of FutileEvictions: the
	// pod was still terminating at the end, or its window outlasts the run.
	UndecidedEvictions int `json:"undecidedEvictions"`
	// EvictionGrace is the cycles an evicted pod terminated before it was
	// gone.
	EvictionGrace int `json:"evictionGrace"`
	// MeanS0 is the mean number of S0s spanned by the NICs of a placed
	// multi-pod RDMA gang (every placement, resubmitted victims included).
	MeanS0 float64 `json:"meanS0"`
	// HardTierViolations counts placements of hard gangs whose pods went
	// beyond their highest-tier (more than one node, S0 or S1): what a
	// topology-blind scheduler does with a contract it cannot read.
	HardTierViolations int `json:"hardTierViolations"`
	// WrongQueueEvictions counts evicted pods of a queue that may not be
	// reclaimed from, evicted for gangs of other queues only: the gangs
	// that used the victim's node (as for FutileEvictions), the gang the
	// eviction reason names and the gangs nominated to the node, when any
	// is known (checkEviction).
	WrongQueueEvictions int `json:"wrongQueueEvictions"`
	// NonPreemptableEvictions counts evicted pods that carry
	// volcano.sh/preemptable: "false".
	NonPreemptableEvictions int `json:"nonPreemptableEvictions"`
	// UnannotatedPods counts the pods running after the first cycle that
	// were turned into pods rdmatopo did not place (reinstall).
	UnannotatedPods int `json:"unannotatedPods"`
	// PartialVictimGangs counts gangs the scheduler left running with fewer
	// pods than minMember after evicting some of them.
	PartialVictimGangs int `json:"partialVictimGangs"`
	// RefusedPods counts bound pods whose GPUs and NICs no single NUMA zone
	// of their single-NUMA-policy node could hold: a kubelet with that
	// topology policy refuses them at admission (TopologyAffinityError) and
	// the pod fails. The benchmark then kills the pod's gang whole and
	// submits it again before the next cycle, as a training job's restart
	// policy does (RefusedGangs).
	RefusedPods int `json:"refusedPods"`
	// RefusedGangs counts the gang submissions killed because a kubelet
	// refused one of their pods.
	RefusedGangs int `json:"refusedGangs"`
	// MeanGPUOccupancy is the share of the cluster's GPUs held by bound
	// pods, averaged over the cycles from the first large gang's arrival to
	// the last arrival.
	MeanGPUOccupancy float64 `json:"meanGPUOccupancy"`
	// BigGangs and BigGangsPlaced count the large gangs and those that ran
	// (placed with no pod a kubelet refuses).
	BigGangs       int `json:"bigGangs"`
	BigGangsPlaced int `json:"bigGangsPlaced"`
	// Placements counts gangs placed (resubmitted victims included).
	Placements int `json:"placements"`
	// Resubmitted counts victim gangs resubmitted after an eviction.
	Resubmitted int `json:"resubmitted"`
	// Seconds is the time spent in scheduling sessions.
	Seconds float64 `json:"seconds"`
	// PeakHeapBytes is the largest heap (HeapAlloc: live objects and
	// garbage not yet collected) sampled after a cycle.
	PeakHeapBytes uint64 `json:"peakHeapBytes"`
}

// LoadReport is the JSON output of `rdmatopo-dev bench --load high`.
type LoadReport struct {
	Load   string `json:"load"`
	Nodes  int    `json:"nodes"`
	Seed   uint64 `json:"seed"`
	Gangs  int    `json:"gangs"`
	Cycles int    `json:"cycles"`
	// SettleCycles is how many more cycles a run may take while a hard gang
	// of the trace waits (LoadTrace.SettleCycles).
	SettleCycles int `json:"settleCycles"`
	// EvictionGrace is the cycles an evicted pod terminated before it was
	// gone.
	EvictionGrace int `json:"evictionGrace"`
	// Runs holds one result per conf, keyed by ConfRDMATopo and ConfBaseline
	// (Volcano's preempt).
	Runs map[string]*LoadResult `json:"runs"`
}

// loadGang follows one submission of a trace gang through a replay; a
// victim gang resubmitted is a new loadGang of the same trace gang.
type loadGang struct {
	spec  trace.LoadGang
	name  string // PodGroup name of this submission
	trace int    // index of the trace gang
	// pods are the pod names; nodes[i] is pod i's node once bound, uids[i]
	// its UID.
	pods  []string
	uids  []string
	nodes []string
	// boundAt[i] is the cycle pod i bound (0: not bound).
	boundAt []int
	bound   int
	// placed is the cycle its last pod bound (0: not placed).
	placed int
	assign []placement.Assignment
	// evicted counts its pods the scheduler evicted; gone is set once the
	// bench deleted it (finished or killed after an eviction).
	evicted   int
	evictedAt map[int]bool
	gone      bool
	// refused is set once one of its pods was bound where a single-NUMA
	// kubelet refuses it; killed once the bench killed it (a victim, or
	// refused) to submit it again.
	refused bool
	killed  bool
}

// evictionRec is one pod the scheduler evicted.
type evictionRec struct {
	// cycle is the cycle that evicted it, freed the cycle before which it
	// was gone from its node (0 while it terminates).
	cycle, freed int
	// pod is the victim pod ("namespace/name"), node its node, victim its
	// submission.
	pod, node string
	victim    *loadGang
	// waiting are the submissions waiting (not placed, not gone) when it
	// was evicted; claimed the gangs the eviction reason names and those
	// nominated to its node (what the scheduler says it evicted for).
	waiting []*loadGang
	claimed []*loadGang
}

// terminating is an evicted pod still on its node: what it holds is freed
// when the simulator reports it gone.
type terminating struct {
	uid  string
	gpu  int64
	evic int // index into loadReplay.evicts
}

// loadReplay is the state of one high-load replay.
type loadReplay struct {
	s      *sim.Simulator
	tr     *grade.Tracker
	trace  *trace.LoadTrace
	byPG   map[string]*loadGang // PodGroup name -> submission
	byPod  map[string]*loadGang // pod name -> submission
	latest []*loadGang          // per trace gang, its latest submission
	// ran is, per trace gang, the cycle a submission of it was first placed
	// with no pod a kubelet refuses (0: never); within is set once one ran
	// within its tier.
	ran         []int
	within      []bool
	ends        map[int][]*loadGang
	resubmit    []*loadGang // victims to submit again before the next cycle
	s1Of        map[string]string
	usedGPU     int64
	res         *LoadResult
	evicts      []evictionRec
	placedGangs []*loadGang
	// dying maps "namespace/name" of an evicted pod to what it holds until
	// its grace ends (Options.EvictionGrace).
	dying map[string]terminating
	grace int
	// last is the last cycle run.
	last int
}

// ReplayLoad runs the high-load trace on a fresh simulator for conf over
// cluster (its pre-bound pods are dropped: the trace fills the cluster) and
// measures it. A victim gang is killed whole by the benchmark once the
// scheduler evicted any of its pods (a training job does not survive a lost
// worker) and submitted again before the next cycle, with its priority and
// a new name.
func ReplayLoad(conf *sim.Conf, cluster *workload.Cluster, lt *trace.LoadTrace, opts sim.Options) (*LoadResult, error) {
	if opts.EvictionGrace < 0 {
		return nil, fmt.Errorf("eviction grace must be >= 0, got %d", opts.EvictionGrace)
	}
	if opts.NodeAgent == "" {
		opts.NodeAgent = nodeagent.Default
	}
	simCluster := &workload.Cluster{Nodes: cluster.Nodes, CNRs: cluster.CNRs}
	s, err := sim.New(conf, simCluster, opts)
	if err != nil {
		return nil, err
	}
	r := &loadReplay{s: s, tr: grade.NewTracker(cluster.Nodes, cluster.CNRs), trace: lt,
		byPG: map[string]*loadGang{}, byPod: map[string]*loadGang{},
		latest: make([]*loadGang, len(lt.Gangs)), ran: make([]int, len(lt.Gangs)), within: make([]bool, len(lt.Gangs)),
		ends: map[int][]*loadGang{}, s1Of: map[string]string{}, res: &LoadResult{EvictionGrace: opts.EvictionGrace},
		dying: map[string]terminating{}, grace: opts.EvictionGrace}
	var totalGPU int64
	for _, n := range cluster.Nodes {
		r.s1Of[n.Name] = n.Labels[builders.S1Label]
		if q, ok := n.Status.Allocatable[gpuResource]; ok {
			totalGPU += q.Value()
		}
	}
	if totalGPU == 0 {
		return nil, fmt.Errorf("the cluster has no %s", gpuResource)
	}
	var session time.Duration
	var occSum float64
	next := 0
	for cycle := 1; cycle <= lt.Cycles || (cycle <= lt.Cycles+lt.SettleCycles && r.hardWaiting() > 0); cycle++ {
		r.last = cycle
		for _, g := range r.ends[cycle] {
			if err := r.remove(g); err != nil {
				return nil, err
			}
		}
		for _, g := range r.resubmit {
			if err := r.submit(g.spec, g.trace, cycle); err != nil {
				return nil, err
			}
		}
		r.resubmit = r.resubmit[:0]
		for ; next < len(lt.Gangs) && lt.Gangs[next].Arrive <= cycle; next++ {
			if err := r.submit(lt.Gangs[next], next, cycle); err != nil {
				return nil, err
			}
		}
		rep, err := s.RunCycle()
		if err != nil {
			return nil, err
		}
		session += rep.Duration
		for _, key := range rep.Terminated {
			if d, ok := r.dying[key]; ok {
				r.tr.Release(d.uid)
				r.usedGPU -= d.gpu
				r.evicts[d.evic].freed = cycle
				delete(r.dying, key)
			}
		}
		refused, err := r.recordBinds(rep, cycle)
		if err != nil {
			return nil, err
		}
		if err := r.recordEvictions(rep, cycle); err != nil {
			return nil, err
		}
		// A pod the kubelet refused fails: its gang restarts (after the
		// evictions, which may name its other pods).
		for _, g := range refused {
			if err := r.kill(g); err != nil {
				return nil, err
			}
			r.res.RefusedGangs++
		}
		if cycle >= lt.MeasureFrom && cycle <= lt.MeasureTo {
			occSum += float64(r.usedGPU) / float64(totalGPU)
		}
		r.res.PeakHeapBytes = max(r.res.PeakHeapBytes, heapAlloc())
		if cycle == lt.Cycles {
			r.res.WaitingAtTraceEnd = r.hardWaiting()
		}
		if cycle == 1 {
			if r.res.UnannotatedPods, err = r.reinstall(); err != nil {
				return nil, err
			}
		}
	}
	r.finish(occSum)
	r.res.Seconds = session.Seconds()
	return r.res, nil
}

// waiting reports whether trace gang i is hard and not running: its latest
// submission unplaced, or killed with its resubmission still to come.
func (r *loadReplay) waiting(i int) bool {
	last := r.latest[i]
	return r.trace.Gangs[i].Mode == placement.ModeHard && last != nil && (last.placed == 0 || last.killed)
}

// hardWaiting counts the trace's hard gangs not running.
func (r *loadReplay) hardWaiting() int {
	n := 0
	for i := range r.trace.Gangs {
		if r.waiting(i) {
			n++
		}
	}
	return n
}

// submit submits trace gang idx (spec) before cycle under a fresh name.
func (r *loadReplay) submit(spec trace.LoadGang, idx, cycle int) error {
	g := &loadGang{spec: spec, trace: idx, name: spec.Name}
	if r.latest[idx] != nil {
		g.name = fmt.Sprintf("%s-r%d", spec.Name, cycle)
	}
	gs := spec.GangSpec
	gs.Name = g.name
	set := trace.GangSet(gs, workload.Epoch.Add(time.Duration(cycle)*time.Minute))
	set.PriorityClasses = trace.PriorityClasses()
	placeInQueue(set, spec)
	set.PodGroups[0].Spec.PriorityClassName = spec.PriorityClass()
	prio := spec.Priority()
	for _, p := range set.Pods {
		p.Spec.PriorityClassName = spec.PriorityClass()
		p.Spec.Priority = &prio
		g.pods = append(g.pods, p.Name)
		g.uids = append(g.uids, string(p.UID))
		r.byPod[p.Name] = g
	}
	g.nodes = make([]string, len(g.pods))
	g.boundAt = make([]int, len(g.pods))
	if err := r.s.Submit(set); err != nil {
		return err
	}
	r.byPG[g.name] = g
	r.latest[idx] = g
	return nil
}

// recordBinds accounts for a cycle's binds in the tracker and the gangs,
// and returns the gangs with a pod bound where the node's kubelet refuses
// it.
func (r *loadReplay) recordBinds(rep *sim.CycleReport, cycle int) ([]*loadGang, error) {
	var refused []*loadGang
	for _, b := range rep.Binds {
		g := r.byPod[b.Pod.Name]
		if g == nil || g.gone {
			return nil, fmt.Errorf("cycle %d bound pod %s/%s of no live trace gang", cycle, b.Pod.Namespace, b.Pod.Name)
		}
		i := slices.Index(g.pods, b.Pod.Name)
		if b.Node == "" {
			return nil, fmt.Errorf("cycle %d bound pod %s/%s to no node (nodeName %q)", cycle, b.Pod.Namespace, b.Pod.Name, b.Pod.Spec.NodeName)
		}
		g.nodes[i] = b.Node
		g.boundAt[i] = cycle
		g.bound++
		sh := g.spec.Kind.Shape()
		r.usedGPU += sh.GPU
		if sh.GPU > 0 || sh.NICs > 0 {
			a, ok, err := r.tr.FromAnnotations(b.Node, b.Pod.Annotations, sh)
			if err != nil {
				return nil, fmt.Errorf("pod %s/%s: %w", b.Pod.Namespace, b.Pod.Name, err)
			}
			if !ok {
				before := r.tr.Misaligned
				if a, err = r.tr.NodeAssign(b.Node, sh); err != nil {
					return nil, fmt.Errorf("pod %s/%s: %w", b.Pod.Namespace, b.Pod.Name, err)
				}
				if r.tr.Misaligned > before {
					if !g.refused {
						refused = append(refused, g)
					}
					g.refused = true
					r.res.RefusedPods++
				}
			}
			if err := r.tr.Reserve(g.uids[i], a); err != nil {
				return nil, err
			}
			g.assign = append(g.assign, a)
		}
		if g.placed == 0 && g.bound == len(g.pods) {
			g.placed = cycle
			if !g.refused && r.ran[g.trace] == 0 {
				r.ran[g.trace] = cycle
			}
			if !g.refused && !(g.spec.Mode == placement.ModeHard && r.beyondTier(g)) {
				r.within[g.trace] = true
			}
			r.placedGangs = append(r.placedGangs, g)
			end := cycle + g.spec.Duration
			r.ends[end] = append(r.ends[end], g)
		}
	}
	return refused, nil
}

// recordEvictions accounts for a cycle's evictions: each evicted pod's
// preemptors are noted, it leaves the tracker (at once, or when its grace
// ends), and each victim gang is killed and queued for resubmission.
func (r *loadReplay) recordEvictions(rep *sim.CycleReport, cycle int) error {
	if len(rep.Evicted) == 0 {
		return nil
	}
	evicted := map[string]bool{}
	for _, key := range rep.Evicted {
		evicted[key] = true
	}
	// The eviction reasons, and the pending pods nominated to a node.
	reasons := map[string]string{}
	nominated := map[string][]*loadGang{}
	for _, ps := range r.s.Pods() {
		key := ps.Pod.Namespace + "/" + ps.Pod.Name
		if evicted[key] {
			reasons[key] = ps.Evicted
			continue
		}
		if ps.Evicted != "" || ps.Pod.Spec.NodeName != "" || ps.Pod.Status.NominatedNodeName == "" {
			continue
		}
		if g := r.byPod[ps.Pod.Name]; g != nil && !g.gone {
			node := ps.Pod.Status.NominatedNodeName
			if !slices.Contains(nominated[node], g) {
				nominated[node] = append(nominated[node], g)
			}
		}
	}
	var waiting []*loadGang
	for _, g := range r.byPG {
		if g.placed == 0 && !g.gone {
			waiting = append(waiting, g)
		}
	}
	var victims []*loadGang
	for _, key := range rep.Evicted {
		g := r.byPod[podNameOf(key)]
		if g == nil || g.gone {
			return fmt.Errorf("cycle %d evicted pod %s of no live trace gang", cycle, key)
		}
		i := slices.Index(g.pods, podNameOf(key))
		node := g.nodes[i]
		if node == "" {
			return fmt.Errorf("cycle %d evicted pod %s, which the benchmark never saw bound", cycle, key)
		}
		r.res.EvictedPods++
		g.evicted++
		if g.evictedAt == nil {
			g.evictedAt = map[int]bool{}
		}
		g.evictedAt[i] = true
		var pre []*loadGang
		if name, ok := topologypreempt.PreemptorOf(reasons[key]); ok {
			if p := r.byPG[podNameOf(name)]; p != nil {
				pre = append(pre, p)
			}
		}
		for _, p := range nominated[node] {
			if !slices.Contains(pre, p) {
				pre = append(pre, p)
			}
		}
		if g.spec.NonPreemptable {
			r.res.NonPreemptableEvictions++
		}
		rec := evictionRec{cycle: cycle, pod: key, node: node, victim: g, waiting: waiting, claimed: pre}
		if r.grace > 0 {
			r.dying[key] = terminating{uid: g.uids[i], gpu: g.spec.Kind.Shape().GPU, evic: len(r.evicts)}
		} else {
			rec.freed = cycle
		}
		r.evicts = append(r.evicts, rec)
		if !slices.Contains(victims, g) {
			victims = append(victims, g)
		}
	}
	for _, g := range victims {
		if g.evicted < g.bound {
			r.res.PartialVictimGangs++
		}
		if err := r.kill(g); err != nil {
			return err
		}
		r.res.Resubmitted++
	}
	return nil
}

// kill removes a submission to submit its trace gang again before the next
// cycle; a submission killed already is left alone.
func (r *loadReplay) kill(g *loadGang) error {
	if g.killed {
		return nil
	}
	if err := r.remove(g); err != nil {
		return err
	}
	g.killed = true
	r.resubmit = append(r.resubmit, g)
	return nil
}

// remove deletes a submission's pods (those the scheduler did not evict)
// and its PodGroup, and frees what they held.
func (r *loadReplay) remove(g *loadGang) error {
	if g.gone {
		return nil
	}
	sh := g.spec.Kind.Shape()
	for i, name := range g.pods {
		if g.evictedAt[i] {
			// The scheduler's evictions are gone already, or terminate
			// and are freed when the simulator reports them gone.
			if r.grace == 0 {
				r.tr.Release(g.uids[i])
				r.usedGPU -= sh.GPU
			}
			delete(r.byPod, name)
			continue
		}
		if g.nodes[i] != "" {
			r.tr.Release(g.uids[i])
			r.usedGPU -= sh.GPU
		}
		if err := r.s.DeletePod(workload.DefaultNamespace, name); err != nil {
			return err
		}
		delete(r.byPod, name)
	}
	// A killed victim stays in r.ends; removing it again is a no-op.
	g.gone = true
	return r.s.DeletePodGroup(workload.DefaultNamespace, g.name)
}

// finish computes the run's figures.
func (r *loadReplay) finish(occSum float64) {
	res := r.res
	res.Cycles = r.last
	if n := r.trace.MeasureTo - r.trace.MeasureFrom + 1; n > 0 {
		res.MeanGPUOccupancy = occSum / float64(n)
	}
	var waits []float64
	for i, g := range r.trace.Gangs {
		if g.Big {
			res.BigGangs++
			if ran := r.ran[i]; ran != 0 {
				res.BigGangsPlaced++
				waits = append(waits, float64(ran-g.Arrive))
			} else {
				waits = append(waits, float64(r.last+1-g.Arrive))
			}
		}
		if r.waiting(i) {
			res.StarvedGangs++
			klog.V(2).InfoS("Starved gang", "gang", g.Name, "latest", r.latest[i].name, "queue", g.Queue,
				"priority", g.PriorityClass(), "pods", g.Pods, "tier", g.HighestTier, "kind", int(g.Kind), "arrived", g.Arrive)
		}
		if g.Mode == placement.ModeHard && !r.within[i] {
			res.NeverWithinTier++
			klog.V(2).InfoS("Gang never within its tier", "gang", g.Name, "latest", r.latest[i].name, "queue", g.Queue,
				"priority", g.PriorityClass(), "pods", g.Pods, "tier", g.HighestTier, "kind", int(g.Kind), "arrived", g.Arrive, "ran", r.ran[i])
		}
	}
	res.BigGangWaitP50Cycles = percentile(waits, 0.50)
	res.BigGangWaitP95Cycles = percentile(waits, 0.95)

	var s0Sum float64
	multi := 0
	for _, g := range r.placedGangs {
		res.Placements++
		if g.spec.Mode == placement.ModeHard && r.beyondTier(g) {
			res.HardTierViolations++
		}
		if len(g.pods) < 2 || g.spec.Kind.Shape().NICs == 0 {
			continue
		}
		multi++
		s0Sum += float64(r.tr.S0Count(g.assign))
	}
	if multi > 0 {
		res.MeanS0 = s0Sum / float64(multi)
	}
	// A victim gang's pods evicted in one cycle are one eviction: a gang
	// does not survive a lost pod, so evicting the rest of it is part of
	// evicting any of it, and the eviction is useful when a node of any of
	// them was used.
	type unit struct {
		victim *loadGang
		cycle  int
	}
	used := map[unit]bool{}
	users := make([][]*loadGang, len(r.evicts))
	for i := range r.evicts {
		e := &r.evicts[i]
		if users[i] = e.users(); len(users[i]) > 0 {
			used[unit{e.victim, e.cycle}] = true
		}
	}
	for i, e := range r.evicts {
		if e.freed == 0 || e.freed+futileWindow > r.last {
			// Still terminating, or its window outlasts the run.
			res.UndecidedEvictions++
			continue
		}
		if !used[unit{e.victim, e.cycle}] {
			res.FutileEvictions++
			klog.V(2).InfoS("Futile eviction", "pod", e.pod, "node", e.node, "cycle", e.cycle, "gone", e.freed, "claimedFor", gangNames(e.claimed))
		}
		r.checkEviction(e, users[i])
	}
}

// users are the gangs waiting when the pod was evicted that bound a pod to
// its node from the evicting cycle on and completed within futileWindow
// cycles of the pod being gone.
func (e *evictionRec) users() []*loadGang {
	var out []*loadGang
	for _, g := range e.waiting {
		if g.placed == 0 || g.placed < e.cycle || g.placed > e.freed+futileWindow {
			continue
		}
		for i, n := range g.nodes {
			if n == e.node && g.boundAt[i] >= e.cycle {
				out = append(out, g)
				break
			}
		}
	}
	return out
}

// beyondTier reports whether a placed gang's pods went beyond its highest
// tier.
func (r *loadReplay) beyondTier(g *loadGang) bool {
	nodes, s1s := map[string]bool{}, map[string]bool{}
	for _, n := range g.nodes {
		nodes[n] = true
		s1s[r.s1Of[n]] = true
	}
	switch g.spec.HighestTier {
	case placement.TierNode:
		return len(nodes) > 1
	case placement.TierS0:
		return len(nodes) > 1 && r.tr.S0Count(g.assign) > 1
	case placement.TierS1:
		return len(s1s) > 1
	}
	return false
}

// gangNames are the submissions' PodGroup names.
func gangNames(gs []*loadGang) []string {
	names := make([]string, 0, len(gs))
	for _, g := range gs {
		names = append(names, g.name)
	}
	return names
}

// percentile is the nearest-rank percentile q (0..1] of xs (0 when empty).
func percentile(xs []float64, q float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	sort.Float64s(s)
	rank := int(math.Ceil(q*float64(len(s)))) - 1
	return s[min(max(rank, 0), len(s)-1)]
}

// podNameOf is the name part of "namespace/name".
func podNameOf(key string) string {
	return key[strings.LastIndex(key, "/")+1:]
}

// heapAlloc is the live heap now.
func heapAlloc() uint64 {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}
