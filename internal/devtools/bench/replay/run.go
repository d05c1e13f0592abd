package replay

import (
	"fmt"
	"reflect"
	"runtime"
	"runtime/metrics"
	"sort"
	"time"

	"github.com/kubewharf/katalyst-api/pkg/apis/node/v1alpha1"
	corev1 "k8s.io/api/core/v1"

	"github.com/rdmatopo/rdmatopo/core/ledger"
	"github.com/rdmatopo/rdmatopo/core/placement"
	"github.com/rdmatopo/rdmatopo/core/preemption"
	"github.com/rdmatopo/rdmatopo/core/topology"
	"github.com/rdmatopo/rdmatopo/internal/devtools/bench/grade"
	"github.com/rdmatopo/rdmatopo/internal/devtools/bench/oracle"
	"github.com/rdmatopo/rdmatopo/internal/devtools/bench/trace"
	"github.com/rdmatopo/rdmatopo/internal/sim"
	"github.com/rdmatopo/rdmatopo/internal/sim/nodeagent"
	"github.com/rdmatopo/rdmatopo/internal/workload"
)

// RunResult is what one replay of a trace measured. JSON names are the
// benchmark's output contract.
type RunResult struct {
	// PlanRefused is how many planned nodes were refused when a plan was
	// applied (the report shows it with the run's details).
	PlanRefused int `json:"-"`
	// Placed is the number of gangs whose every pod was bound.
	Placed int `json:"placed"`
	// Pods is the number of trace pods bound.
	Pods int `json:"pods"`
	// MeanS0 is the mean number of S0s spanned by a placed multi-pod RDMA
	// gang's NICs.
	MeanS0 float64 `json:"meanS0"`
	// AtOptimumFrac is the share of those gangs that spanned the fewest S0s
	// possible when they were placed (by the oracle, MinLeaves) or sit on
	// one node; gangs the oracle could not decide (OracleUnknown) are left
	// out.
	AtOptimumFrac float64 `json:"atOptimumFrac"`
	// AtS1OptimumFrac is the share of those gangs at the optimum of both
	// rungs: the fewest S0s and, among placements on that many, the
	// fewest S1s (the oracle's S1s), or on one node; gangs whose leaves or
	// S1s the oracle could not decide are left out.
	AtS1OptimumFrac float64 `json:"atS1OptimumFrac"`
	// Fragmentation is the share of S0s partly used, averaged over cycles.
	Fragmentation float64 `json:"fragmentation"`
	// Seconds is the time spent in scheduling sessions (no setup, no
	// write-back, no metric work).
	Seconds float64 `json:"seconds"`
	// SecondsPerPod is Seconds / Pods.
	SecondsPerPod float64 `json:"secondsPerPod"`
	// PeakHeapBytes is the largest heap sampled after a cycle: the Go
	// runtime's HeapAlloc, live objects and garbage not yet collected
	// (with the default GOGC a heap grows to about twice what is live
	// before it is collected).
	PeakHeapBytes uint64 `json:"peakHeapBytes"`
	// RealizedMeanS0 is MeanS0 over the same gangs with the NICs the node
	// agent gave their pods (what the KCNRs list) instead of the planned
	// ones.
	RealizedMeanS0 float64 `json:"realizedMeanS0"`
	// RealizedAtOptimumFrac is AtOptimumFrac with the NICs the node agent
	// gave, graded by the same oracle on the state the gang saw: what the
	// node agent had given every pod bound before it.
	RealizedAtOptimumFrac float64 `json:"realizedAtOptimumFrac"`
	// NICMismatches counts bound trace pods the node agent gave other NICs
	// than their rdmatopo.io/nics annotation named (pods without the
	// annotation are not counted).
	NICMismatches int `json:"nicMismatches"`
	// MeanRingCrossings is the mean, over the gangs MeanS0 averages, of
	// the leaf changes along the ring over the gang's ranks (pod i of a
	// trace gang is rank i): each is a ring all-reduce hop through S1.
	MeanRingCrossings float64 `json:"meanRingCrossings"`
	// RingAtMinimumFrac is the share of those gangs whose ring crosses no
	// more leaf boundaries than a ring over the same pods' leaves must (0
	// on one leaf, else one per leaf): the rank order given the leaves,
	// whatever the number of leaves.
	RingAtMinimumFrac float64 `json:"ringAtMinimumFrac"`
	// AllReduceSlowdownP50 and AllReduceSlowdownP95 are the median and 95th
	// percentile, over those gangs, of the modelled time of a ring
	// all-reduce over the gang's ranks as placed, divided by its time on
	// the gang's floor placement (AllReduceModel; 1 is the floor).
	AllReduceSlowdownP50 float64 `json:"allreduceSlowdownP50"`
	AllReduceSlowdownP95 float64 `json:"allreduceSlowdownP95"`

	// Details not in the runs' JSON contract (shown in the table and in the
	// report's "details").
	// FloorS0 is the mean, over the gangs MeanS0 averages, of the fewest
	// S0s each gang could span on an empty fabric: no scheduler's MeanS0
	// on the same gangs can be lower.
	FloorS0 float64 `json:"-"`
	// RDMAGangs is the number of gangs MeanS0 averages over.
	RDMAGangs int `json:"-"`
	// AllReduceFaster counts those gangs whose modelled all-reduce beat
	// their floor (a slowdown below 1: the floor is the fewest leaves, and
	// more leaves in a better cabling can be faster).
	AllReduceFaster int `json:"-"`
	// Misaligned counts bound pods no NUMA zone could hold alone.
	Misaligned int `json:"-"`
	// OracleUnknown counts the gangs MeanS0 averages over whose optimum the
	// oracle could not decide (search limit, mixed shapes) and that do not
	// sit on one node; AtOptimumFrac leaves them out.
	OracleUnknown int `json:"-"`
	// OracleInfeasible counts those gangs for which the oracle found no
	// NUMA-aligned placement at all on the state they saw (the baseline's
	// misaligned gangs); they are at the optimum only on one node.
	OracleInfeasible int `json:"-"`
	// OffOptimum lists the decided gangs that are not at the optimum, in
	// trace order.
	OffOptimum []GangMiss `json:"-"`
	// OffS1Optimum lists the gangs on the fewest S0s but more S1s than
	// the fewest, in trace order.
	OffS1Optimum []GangMiss `json:"-"`
	// S1OracleUnknown counts the gangs left out of AtS1OptimumFrac.
	S1OracleUnknown int `json:"-"`
	// HardTierWider counts the hard gangs held to one S1 that fewer leaves
	// over several S1s would hold: they are graded against the fewest
	// leaves within one S1 (grade.Tracker.OptimumWithinTier).
	HardTierWider int `json:"-"`
	// ClaimWider lists the gangs that rooms claimed by older waiting hard
	// gangs kept off fewer leaves (or as many in fewer S1s), in trace
	// order, each with the optimum those rooms would have given: they are
	// graded against the optimum outside the rooms (keptOff).
	ClaimWider []GangMiss `json:"-"`
	// OneNode counts those gangs that sit on one node (at the optimum
	// whatever the oracle says).
	OneNode int `json:"-"`
	// BelowOptimum counts gangs that spanned fewer S0s than the oracle's
	// minimum (possible only when a gang bound over several cycles and the
	// state changed in between); they count as at the optimum.
	BelowOptimum int `json:"-"`
	// PeakLiveHeapBytes is the largest live heap sampled after a cycle:
	// what the last completed collection found reachable
	// (/gc/heap/live:bytes), the scheduler's and the harness's together.
	PeakLiveHeapBytes uint64 `json:"-"`
	// CPUSeconds is the process CPU time (user + system, every goroutine
	// and the garbage collector) over the same sessions as Seconds: what
	// the sessions cost when other processes share the CPUs.
	CPUSeconds float64 `json:"-"`
	// Cycles run.
	Cycles int `json:"-"`
	// NodeAgent is the simulated node agent of the run.
	NodeAgent nodeagent.Mode `json:"-"`
	// RealizedOracleUnknown, RealizedOracleInfeasible, RealizedBelowOptimum
	// and RealizedOneNode are OracleUnknown, OracleInfeasible, BelowOptimum
	// and OneNode for the realized grading.
	RealizedOracleUnknown    int `json:"-"`
	RealizedOracleInfeasible int `json:"-"`
	RealizedBelowOptimum     int `json:"-"`
	RealizedOneNode          int `json:"-"`
}

// GangMiss is a placed gang that spanned more S0s than the oracle's
// minimum (or that the oracle found no aligned placement for).
type GangMiss struct {
	Gang string        `json:"gang"`
	Pods int           `json:"pods"`
	Kind trace.PodKind `json:"kind"`
	// Arrive and Placed are the cycles it arrived and was placed.
	Arrive int `json:"arrive"`
	Placed int `json:"placed"`
	// S0 is how many S0s it spanned, S1 in how many S1s, Nodes how many
	// nodes it used.
	S0    int `json:"s0"`
	S1    int `json:"s1"`
	Nodes int `json:"nodes"`
	// Optimum is the oracle's answer at its first bind.
	Optimum oracle.OracleResult `json:"optimum"`
}

// gangState follows one gang through a replay.
type gangState struct {
	spec   trace.GangSpec
	uids   []string
	bound  int
	assign []placement.Assignment
	// ranks[i] is the rank (trace pod index) of the pod of assign[i].
	ranks []int
	// optimum is the oracle's answer at the gang's first bind; computed is
	// false until then (and for gangs without NICs).
	optimum  oracle.OracleResult
	computed bool
	// wider is true when the gang's hard tier made its optimum wider than
	// the oracle's answer without it (grade.Tracker.OptimumWithinTier).
	wider bool
	// claimWider is true when rooms older waiting gangs claimed made its
	// optimum wider (keptOff); optimum is then the one outside them and
	// unclaimed the one with them.
	claimWider bool
	unclaimed  oracle.OracleResult
	// index is the gang's place in the trace: an earlier gang was created
	// earlier.
	index int
	// real holds what the node agent gave each bound pod (RDMA and GPU
	// pods), realOptimum the oracle's answer on the realized state at the
	// gang's first bind.
	real        []placement.Assignment
	realOptimum oracle.OracleResult
	placed      int // cycle the last pod bound; 0 while not placed
	done        bool
}

// SimOptions returns the simulator options of a benchmarked session with
// Volcano's percentage-nodes-to-find set to percent. 0 keeps Volcano's
// default, adaptive share (a pod's predicates stop once 50% - nodes/125 of
// the nodes, at least 5% and 100 nodes, were found feasible), as a
// scheduler deployed with default flags runs; 100 checks every node.
func SimOptions(percent int32) sim.Options {
	if percent == 0 {
		return sim.Options{NodesToFindPercent: -1}
	}
	return sim.Options{NodesToFindPercent: percent}
}

// realized follows what the node agent gives the pods of a replay, apart
// from what the scheduler planned.
type realized struct {
	agent nodeagent.Mode
	cfg   topology.Config
	// tr holds what the agent gave every bound pod.
	tr *grade.Tracker
	// cnrs are the cluster's KCNRs by node, without the trace's pods: the
	// agent's view for pods no simulated KCNR lists (the baseline's). They
	// are trimmed to what the agent reads (topology.CNRTrimmer: the zone
	// tree and the RDMA properties, equal resource lists shared), so the
	// generated cluster's full KCNRs, which the simulator has copies of,
	// are not kept alive for the whole replay.
	cnrs map[string]*v1alpha1.CustomNodeResource
	// diverged is set once the agent gave a pod other than its planned
	// assignment; until then tr equals the planned tracker.
	diverged bool
}

// Replay runs the trace on a fresh simulator (opts) for conf over cluster and
// measures it. Cycles run even when nothing is pending, so both confs run
// the same number of sessions.
//
// The simulated node agent is opts.NodeAgent (nodeagent.Default when
// empty): it confirms every bind at once, and the KCNRs the simulator gets
// list the cluster's pre-bound pods, so the agent sees their zones taken.
func Replay(conf *sim.Conf, cluster *workload.Cluster, tc *trace.Trace, opts sim.Options) (*RunResult, error) {
	return ReplayModel(conf, cluster, tc, opts, grade.DefaultAllReduceModel())
}

// ReplayModel is Replay grading the gangs' all-reduce with model.
func ReplayModel(conf *sim.Conf, cluster *workload.Cluster, tc *trace.Trace, opts sim.Options, model grade.AllReduceModel) (*RunResult, error) {
	if err := model.Validate(); err != nil {
		return nil, err
	}
	if opts.NodeAgent == "" {
		opts.NodeAgent = nodeagent.Default
	}
	tr := grade.NewTracker(cluster.Nodes, cluster.CNRs)
	rz := &realized{agent: opts.NodeAgent, cfg: conf.Topology, tr: tr.Empty(),
		cnrs: map[string]*v1alpha1.CustomNodeResource{}}
	trim := topology.NewCNRTrimmer()
	for _, c := range cluster.CNRs {
		rz.cnrs[c.Name] = trim.Trim(c)
	}
	for _, p := range cluster.Pods {
		sh := shapeOf(p)
		a, ok, err := tr.FromAnnotations(p.Spec.NodeName, p.Annotations, sh)
		if err != nil {
			return nil, fmt.Errorf("pre-bound pod %s/%s: %w", p.Namespace, p.Name, err)
		}
		if ok {
			if err := tr.Reserve(string(p.UID), a); err != nil {
				return nil, err
			}
			if err := rz.tr.Reserve(string(p.UID), a); err != nil {
				return nil, err
			}
		}
	}
	simCluster := &workload.Cluster{Nodes: cluster.Nodes, CNRs: listRunning(conf.Topology, cluster.CNRs, cluster.Pods), Pods: cluster.Pods}
	s, err := sim.New(conf, simCluster, opts)
	if err != nil {
		return nil, err
	}

	gangs := make([]*gangState, len(tc.Gangs))
	byName := map[string]*gangState{}
	for i, g := range tc.Gangs {
		gangs[i] = &gangState{spec: g, index: i}
		byName[workload.DefaultNamespace+"/"+g.Name] = gangs[i]
	}
	// ends maps a cycle to the gangs deleted before it runs.
	ends := map[int][]*gangState{}
	res := &RunResult{Cycles: tc.Cycles, NodeAgent: opts.NodeAgent}
	var session, sessionCPU time.Duration
	var fragSum float64
	var ms runtime.MemStats
	live := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	next := 0
	for cycle := 1; cycle <= tc.Cycles; cycle++ {
		for _, g := range ends[cycle] {
			if err := finish(s, tr, rz.tr, g); err != nil {
				return nil, err
			}
		}
		for ; next < len(gangs) && gangs[next].spec.Arrive <= cycle; next++ {
			g := gangs[next]
			set := trace.GangSet(g.spec, workload.Epoch.Add(time.Duration(next)*time.Second))
			for _, p := range set.Pods {
				g.uids = append(g.uids, string(p.UID))
			}
			if err := s.Submit(set); err != nil {
				return nil, err
			}
		}
		// The claims this cycle's topology-allocate keeps gangs off.
		claims := s.Claims()
		if err := checkClaims(tr.Fabric(), claims, byName); err != nil {
			return nil, fmt.Errorf("cycle %d: %w", cycle, err)
		}
		rep, err := s.RunCycle()
		if err != nil {
			return nil, err
		}
		session += rep.Duration
		sessionCPU += rep.CPU
		if err := record(s, tr, rz, byName, rep, cycle, ends, claims, res); err != nil {
			return nil, err
		}
		fragSum += tr.Fragmentation()
		runtime.ReadMemStats(&ms)
		res.PeakHeapBytes = max(res.PeakHeapBytes, ms.HeapAlloc)
		if metrics.Read(live); live[0].Value.Kind() == metrics.KindUint64 {
			res.PeakLiveHeapBytes = max(res.PeakLiveHeapBytes, live[0].Value.Uint64())
		}
	}

	// The empty fabric the floors are graded on.
	empty := tr.Empty()
	var s0Sum, floorSum, realSum, ringSum float64
	floors := map[string]grade.GangFloor{}
	var slowdowns []float64
	var planGrades, realGrades, s1Grades grade.Tally
	ringAt := 0
	for _, g := range gangs {
		if g.placed == 0 {
			continue
		}
		res.Placed++
		if g.spec.Pods < 2 || !g.spec.RDMA() {
			continue
		}
		n := tr.S0Count(g.assign)
		res.RDMAGangs++
		s0Sum += float64(n)
		crossings, minimum := grade.RingLeaves(tr.Fabric(), inRankOrder(g))
		ringSum += float64(crossings)
		if crossings <= minimum {
			ringAt++
		}
		key := grade.FloorKey(g.spec)
		floor, ok := floors[key]
		if !ok {
			var err error
			if floor, err = grade.FloorOf(empty, g.spec); err != nil {
				return nil, err
			}
			floors[key] = floor
		}
		floorSum += float64(floor.Leaves)
		if ft := model.FloorSeconds(floor.Ring); ft > 0 {
			sd := model.PlacedSeconds(tr.Fabric(), inRankOrder(g)) / ft
			slowdowns = append(slowdowns, sd)
			if sd < 1 {
				res.AllReduceFaster++
			}
		}
		var opt *oracle.OracleResult
		if g.computed {
			opt = &g.optimum
			if g.wider {
				res.HardTierWider++
			}
			if g.claimWider {
				miss := missOf(g, n, tr.S1Count(g.assign))
				miss.Optimum = g.unclaimed
				res.ClaimWider = append(res.ClaimWider, miss)
			}
		}
		if gr := planGrades.Add(grade.GradeGang(n, grade.OneNode(g.assign), opt)); gr == grade.GradeInfeasible || gr == grade.GradeOff {
			res.OffOptimum = append(res.OffOptimum, missOf(g, n, tr.S1Count(g.assign)))
		}
		if gr := s1Grades.Add(grade.GradeGangS1(n, tr.S1Count(g.assign), grade.OneNode(g.assign), opt)); gr == grade.GradeOff {
			res.OffS1Optimum = append(res.OffS1Optimum, missOf(g, n, tr.S1Count(g.assign)))
		}

		rn := rz.tr.S0Count(g.real)
		realSum += float64(rn)
		var ropt *oracle.OracleResult
		if g.computed {
			ropt = &g.realOptimum
		}
		realGrades.Add(grade.GradeGang(rn, grade.OneNode(g.real), ropt))
	}
	res.OneNode, res.BelowOptimum, res.OracleUnknown, res.OracleInfeasible = planGrades.OneNode, planGrades.Below, planGrades.Unknown, planGrades.Infeasible
	res.RealizedOneNode, res.RealizedBelowOptimum, res.RealizedOracleUnknown, res.RealizedOracleInfeasible = realGrades.OneNode, realGrades.Below, realGrades.Unknown, realGrades.Infeasible
	res.AtOptimumFrac = planGrades.AtFrac(res.RDMAGangs)
	res.PlanRefused = int(s.PlanRefused())
	res.AtS1OptimumFrac = s1Grades.AtFrac(res.RDMAGangs)
	res.S1OracleUnknown = s1Grades.Unknown
	res.RealizedAtOptimumFrac = realGrades.AtFrac(res.RDMAGangs)
	if res.RDMAGangs > 0 {
		res.MeanS0 = s0Sum / float64(res.RDMAGangs)
		res.FloorS0 = floorSum / float64(res.RDMAGangs)
		res.RealizedMeanS0 = realSum / float64(res.RDMAGangs)
		res.MeanRingCrossings = ringSum / float64(res.RDMAGangs)
		res.RingAtMinimumFrac = float64(ringAt) / float64(res.RDMAGangs)
	}
	res.AllReduceSlowdownP50 = grade.Quantile(slowdowns, 0.50)
	res.AllReduceSlowdownP95 = grade.Quantile(slowdowns, 0.95)
	res.Fragmentation = fragSum / float64(max(tc.Cycles, 1))
	res.Seconds = session.Seconds()
	res.CPUSeconds = sessionCPU.Seconds()
	if res.Pods > 0 {
		res.SecondsPerPod = res.Seconds / float64(res.Pods)
	}
	res.Misaligned = tr.Misaligned
	return res, nil
}

// record accounts for a cycle's binds: each gang's pods get their NICs in
// the tracker (from the rdmatopo annotations, else as the tracker's model
// of the node agent would pick them), after the gang's optimum was computed
// on the state before them; and in the realized tracker the NICs the node
// agent gave them (what the simulated KCNRs list; for pods without NIC
// annotations, which no KCNR lists, what nodeagent.Allot gives). Gangs are
// handled in the order Volcano bound them.
func record(s *sim.Simulator, tr *grade.Tracker, rz *realized, byName map[string]*gangState, rep *sim.CycleReport, cycle int,
	ends map[int][]*gangState, claims []preemption.Claim, res *RunResult) error {
	// The KCNRs of the nodes the cycle bound annotated pods to, as the node
	// agent left them.
	listed := map[string]*v1alpha1.CustomNodeResource{}
	for _, b := range rep.Binds {
		if b.Pod.Annotations[ledger.AnnotationNICs] == "" {
			continue
		}
		if _, ok := listed[b.Node]; !ok {
			if c, ok := s.CNR(b.Node); ok {
				listed[b.Node] = c
			}
		}
	}
	var order []*gangState
	binds := map[*gangState][]sim.BindRecord{}
	for _, b := range rep.Binds {
		g := byName[b.Pod.Namespace+"/"+b.Pod.Annotations[workloadGroupKey]]
		if g == nil {
			return fmt.Errorf("cycle %d bound pod %s/%s of no trace gang", cycle, b.Pod.Namespace, b.Pod.Name)
		}
		if _, seen := binds[g]; !seen {
			order = append(order, g)
		}
		binds[g] = append(binds[g], b)
	}
	for _, g := range order {
		if g.spec.RDMA() && g.bound == 0 {
			k := keptOffBy(claims, byName, g)
			g.optimum, g.wider = tr.OptimumWithinTier(g.spec)
			if !k.empty() {
				if off := tr.OptimumWithinTierOff(g.spec, k.leaves, k.nodes); grade.Wider(off, g.optimum) {
					g.unclaimed, g.optimum, g.claimWider = g.optimum, off, true
				}
			}
			g.computed = true
			g.realOptimum = g.optimum
			if rz.diverged {
				g.realOptimum, _ = rz.tr.OptimumWithinTier(g.spec)
				if !k.empty() {
					if off := rz.tr.OptimumWithinTierOff(g.spec, k.leaves, k.nodes); grade.Wider(off, g.realOptimum) {
						g.realOptimum = off
					}
				}
			}
		}
		for _, b := range binds[g] {
			g.bound++
			res.Pods++
			uid := string(b.Pod.UID)
			if q, ok := b.Pod.Spec.Containers[0].Resources.Requests[corev1.ResourceMemory]; ok {
				tr.UseMemory(uid, b.Node, q.Value())
				rz.tr.UseMemory(uid, b.Node, q.Value())
			}
			sh := shapeOf(b.Pod)
			if sh.GPU == 0 && sh.NICs == 0 {
				continue
			}
			a, ok, err := tr.FromAnnotations(b.Node, b.Pod.Annotations, sh)
			if err != nil {
				return fmt.Errorf("pod %s/%s: %w", b.Pod.Namespace, b.Pod.Name, err)
			}
			if !ok {
				if a, err = tr.NodeAssign(b.Node, sh); err != nil {
					return fmt.Errorf("pod %s/%s: %w", b.Pod.Namespace, b.Pod.Name, err)
				}
			}
			if err := tr.Reserve(string(b.Pod.UID), a); err != nil {
				return err
			}
			g.assign = append(g.assign, a)
			g.ranks = append(g.ranks, rankOf(g, string(b.Pod.UID)))

			var r placement.Assignment
			if ok {
				var listedOK bool
				r, listedOK = listedAssignment(rz.cfg, b.Node, listed[b.Node], nodeagent.Consumer(b.Pod))
				if !listedOK {
					return fmt.Errorf("pod %s/%s: node %s's KCNR lists no NIC for it after the node agent ran", b.Pod.Namespace, b.Pod.Name, b.Node)
				}
				if !sameNICs(r.NICs(), a.NICs()) {
					res.NICMismatches++
				}
			} else if r, err = agentAssign(rz.tr, rz.agent, rz.cfg, rz.cnrs[b.Node], b.Pod, b.Node, sh); err != nil {
				return fmt.Errorf("pod %s/%s: node agent: %w", b.Pod.Namespace, b.Pod.Name, err)
			}
			if err := rz.tr.Reserve(string(b.Pod.UID), r); err != nil {
				return err
			}
			if !reflect.DeepEqual(r, a) {
				rz.diverged = true
			}
			g.real = append(g.real, r)
		}
		if g.placed == 0 && g.bound >= g.spec.Pods {
			g.placed = cycle
			end := cycle + g.spec.Duration
			ends[end] = append(ends[end], g)
		}
	}
	return nil
}

// missOf describes gang g, which spanned s0 S0s in s1 S1s, off the
// optimum.
func missOf(g *gangState, s0, s1 int) GangMiss {
	nodes := map[string]bool{}
	for _, a := range g.assign {
		nodes[a.Node] = true
	}
	return GangMiss{Gang: g.spec.Name, Pods: g.spec.Pods, Kind: g.spec.Kind, Arrive: g.spec.Arrive,
		Placed: g.placed, S0: s0, S1: s1, Nodes: len(nodes), Optimum: g.optimum}
}

// rankOf is the rank of a gang's pod: its index in the trace gang.
func rankOf(g *gangState, uid string) int {
	for i, u := range g.uids {
		if u == uid {
			return i
		}
	}
	return len(g.uids)
}

// inRankOrder returns the gang's assignments sorted by rank.
func inRankOrder(g *gangState) []placement.Assignment {
	idx := make([]int, len(g.assign))
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool { return g.ranks[idx[a]] < g.ranks[idx[b]] })
	out := make([]placement.Assignment, len(idx))
	for i, j := range idx {
		out[i] = g.assign[j]
	}
	return out
}

// finish deletes a finished gang: its pods, then its PodGroup.
func finish(s *sim.Simulator, tr, real *grade.Tracker, g *gangState) error {
	for i, uid := range g.uids {
		if err := s.DeletePod(workload.DefaultNamespace, trace.PodName(g.spec.Name, i)); err != nil {
			return err
		}
		tr.Release(uid)
		real.Release(uid)
	}
	g.done = true
	return s.DeletePodGroup(workload.DefaultNamespace, g.spec.Name)
}

// workloadGroupKey is the pod annotation naming its PodGroup.
const workloadGroupKey = "scheduling.k8s.io/group-name"

// shapeOf reads a pod's GPU and NIC requests as a placement shape.
func shapeOf(p *corev1.Pod) placement.Shape {
	var sh placement.Shape
	for _, c := range p.Spec.Containers {
		if q, ok := c.Resources.Requests[gpuResource]; ok {
			sh.GPU += q.Value()
		}
		if q, ok := c.Resources.Requests[rdmaResource]; ok {
			sh.NICs += q.Value()
		}
	}
	return sh
}
