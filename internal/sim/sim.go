// Package sim runs the real Volcano scheduler, session after session, on
// Volcano's mock scheduler cache: the actions and plugins of a
// volcano-scheduler.conf, a recording binder instead of an API server, and
// a small store of objects standing in for the API server (binds, pod
// status and PodGroup status are written back between cycles, as the
// informers would deliver them).
//
// It is the engine of `rdmatopo simulate`, the harness of the actions'
// scenario tests, and a library for benchmarks and soak tests: a bind hook
// can fail binds, a per-cycle callback observes each cycle, and nodes,
// KCNRs, pods and PodGroups can be added or removed between cycles.
//
// Volcano keeps process-wide state (registries, scheduler options, the
// enabled-action map, the rdma-topology runtime). Each cycle sets it as
// vc-scheduler does (see install), so what runs here is what runs in
// production, whatever another simulator or test set before. Cycles of
// different Simulators are therefore serialised by a package lock, and a
// Simulator itself is not safe for concurrent use.
package sim

import (
	"fmt"
	"sync"
	"time"

	"github.com/kubewharf/katalyst-api/pkg/apis/node/v1alpha1"
	"github.com/spf13/pflag"
	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	schedulingv1beta1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"
	"volcano.sh/volcano/cmd/scheduler/app/options"
	"volcano.sh/volcano/pkg/scheduler/cache"
	volcanoconf "volcano.sh/volcano/pkg/scheduler/conf"

	"github.com/rdmatopo/rdmatopo/core/topology"
	"github.com/rdmatopo/rdmatopo/internal/sim/nodeagent"
	"github.com/rdmatopo/rdmatopo/internal/workload"
	"github.com/rdmatopo/rdmatopo/plugins/rdmatopology"
	"github.com/rdmatopo/rdmatopo/registry"
)

// Options tune a Simulator. The zero value is ready to use.
type Options struct {
	// SchedulerName is the scheduler the pods must name; default "volcano".
	SchedulerName string
	// BindHook, when set, decides whether each bind succeeds.
	BindHook BindHook
	// OnCycle, when set, is called after every cycle with its report.
	OnCycle func(*CycleReport)
	// NodesToFindPercent is Volcano's percentage-nodes-to-find: how many of
	// the feasible nodes the predicate step collects per pod. 0 means 100:
	// every node, which keeps simulations reproducible (Volcano's own
	// default is adaptive, and which nodes its parallel workers find first
	// varies). Negative selects Volcano's adaptive default.
	NodesToFindPercent int32
	// NodeAgent, when set, plays katalyst's node agent right after every
	// bind: it chooses the pod's zones and NICs and its node's KCNR lists
	// them at once (see ConfirmPod). Empty: binds reach the KCNRs only
	// through ConfirmPod, at a lag the caller chooses.
	NodeAgent nodeagent.Mode
	// Period is how far the simulated clock advances from one cycle to the
	// next (vc-scheduler's schedule period); 0 means DefaultPeriod. The
	// rdma-topology runtime measures max-wait deadlines on this clock.
	Period time.Duration
	// Start is the simulated time of the first cycle; zero means the wall
	// clock at New, truncated to the second.
	Start time.Time
	// EvictionGrace is how many cycles an evicted pod stays on its node,
	// terminating (deletionTimestamp set, its resources Releasing), before
	// it is gone; 0 removes it in the cycle that evicted it.
	EvictionGrace int
}

// CycleReport says what one scheduling cycle did.
type CycleReport struct {
	// Cycle is 1-based.
	Cycle int
	// Duration covers the session only: OpenSession, every action's
	// Execute and CloseSession (not the simulator's write-back).
	Duration time.Duration
	// CPU is the process's user and system CPU time over the same span:
	// every goroutine's, the garbage collector's included. Unlike
	// Duration it does not grow while other processes hold the CPUs.
	CPU time.Duration
	// Binds lists the successful binds, in the order Volcano issued them.
	Binds []BindRecord
	// FailedBinds lists the binds the hook failed; their pods are pending
	// again.
	FailedBinds []BindRecord
	// Evicted lists the pods ("namespace/name") the cycle evicted; they are
	// deleted, at once or after Options.EvictionGrace cycles.
	Evicted []string
	// Patches lists the annotation patches the scheduler sent during the
	// session (when it adopts what a KCNR lists), in the order sent, as
	// they were merged into the pods after it; patches of pods gone
	// meanwhile are left out.
	Patches []PodPatch
	// Terminated lists the evicted pods whose grace ended before this cycle
	// ran: they are gone from their nodes since (with EvictionGrace 0 they
	// are in Evicted only).
	Terminated []string
}

// Progress reports whether the cycle changed the cluster.
func (r *CycleReport) Progress() bool { return len(r.Binds) > 0 || len(r.Evicted) > 0 }

// PodState is a pod as the simulated API server holds it.
type PodState struct {
	// Pod is a copy of the current object.
	Pod *corev1.Pod
	// Workload is true for pods submitted for scheduling (false for pods
	// that were bound when the simulation started).
	Workload bool
	// BoundCycle is the cycle that bound the pod (0: not bound by the
	// simulator).
	BoundCycle int
	// Evicted is the eviction reason of a pod the scheduler evicted (the
	// pod is then gone from the cluster).
	Evicted string
}

// podEntry is the store's record of a pod.
type podEntry struct {
	pod        *corev1.Pod
	workload   bool
	boundCycle int
	// evicted is the reason the scheduler evicted the pod; deleted is then
	// true: the pod is gone from the cluster, remembered for the report.
	// (Pods deleted through DeletePod are forgotten.)
	evicted string
	deleted bool
	// goneAt is the cycle before which an evicted pod that is terminating
	// is removed (0: not terminating).
	goneAt int
}

// Simulator drives Volcano sessions over a simulated cluster.
type Simulator struct {
	conf    *Conf
	opts    Options
	tiers   []volcanoconf.Tier
	cache   *cache.SchedulerCache
	runtime *rdmatopology.Runtime
	// refusedBefore is the planned nodes refused under the runtimes a
	// restart replaced (PlanRefused).
	refusedBefore int64
	// installed is rdmatopo's plugin builder and actions over runtime,
	// built once per runtime (so the actions carry what they keep from one
	// cycle to the next) and installed before every cycle.
	installed *registry.Set
	binder    *recordingBinder
	evictor   *recordingEvictor
	status    *statusRecorder
	events    *eventRecorder

	// serverOpts are vc-scheduler's options as its flags default them,
	// installed as Volcano's options.ServerOpts for every cycle.
	serverOpts *options.ServerOption

	// The simulated API server: objects by key, and keys in arrival order.
	nodes     map[string]*corev1.Node
	nodeOrder []string
	cnrs      map[string]*v1alpha1.CustomNodeResource
	cnrOrder  []string
	// cnrLists makes the stored KCNRs share their equal resource lists:
	// every node of a shape has the same zone lists, every pod of a shape
	// the same allocation requests, and a decoded list costs several
	// hundred bytes. Stored KCNRs are never modified (a change stores a
	// modified deep copy), so sharing is safe.
	cnrLists *topology.CNRTrimmer
	// podLists makes the stored pods and the cache's copies share their
	// equal resource lists (lists.go).
	podLists podLists
	pods     map[string]*podEntry
	podOrder []string
	// arrival is the index in podOrder of each pod's latest arrival;
	// stale counts podOrder entries made stale by deletions since the
	// last compaction.
	arrival   map[string]int
	stale     int
	podGroups map[string]*schedulingv1beta1.PodGroup
	pgOrder   []string
	// hyper indexes the cluster's HyperNodes, the S1s under s1Source:
	// hypernode.
	hyper   *topology.HyperNodeIndex
	queues  map[string]*schedulingv1beta1.Queue
	classes map[string]*schedulingv1.PriorityClass
	// terminating holds the keys of evicted pods still on their nodes
	// (Options.EvictionGrace), for endTerminations.
	terminating map[string]bool
	// arrivedBound maps a node to the keys of the pods that arrived bound
	// to it (cluster pods, running workload pods): until its KCNR lists
	// them they hold what their annotations name, and the node agent
	// hands none of it out (heldOn). Entries of pods gone, moved or listed
	// are dropped when next read.
	arrivedBound map[string]map[string]bool

	cycle int
	rv    int64
	// clock is the simulated time (clock.go).
	clock simClock

	// patchMu guards patches: the annotation patches the scheduler sent
	// during the current session, applied after it.
	patchMu sync.Mutex
	patches []PodPatch
}

// PodPatch is one merge patch of a pod's annotations.
type PodPatch struct {
	// Pod is "namespace/name".
	Pod string
	// Annotations are the keys and values the patch sets.
	Annotations map[string]string
}

// cycleMu serialises sessions of all simulators (Volcano's global state is
// shared).
var cycleMu sync.Mutex

// defaultServerOptions returns vc-scheduler's options as its command line
// leaves them without flags: NewServerOption, then the defaults AddFlags
// sets (on a flag set of its own: the process's flags are not touched).
// The percentage of nodes to find is the caller's (Options.NodesToFindPercent).
func defaultServerOptions(nodesToFindPercent int32) *options.ServerOption {
	s := options.NewServerOption()
	s.AddFlags(pflag.NewFlagSet("rdmatopo-sim", pflag.ContinueOnError))
	switch {
	case nodesToFindPercent == 0:
		s.PercentageOfNodesToFind = 100
	case nodesToFindPercent > 0:
		s.PercentageOfNodesToFind = nodesToFindPercent
	}
	return s
}

// New builds a simulator over cluster (nodes, KCNRs and bound pods). The
// conf's actions and plugins run every cycle; the rdma-topology plugin gets
// a runtime fed with the cluster's nodes and KCNRs.
func New(c *Conf, cluster *workload.Cluster, opts Options) (*Simulator, error) {
	if c == nil {
		return nil, fmt.Errorf("sim.New: nil conf")
	}
	if cluster == nil {
		cluster = &workload.Cluster{}
	}
	if opts.SchedulerName == "" {
		opts.SchedulerName = workload.DefaultSchedulerName
	}
	s := &Simulator{
		conf:      c,
		opts:      opts,
		tiers:     withTieBreak(c.Tiers),
		binder:    &recordingBinder{hook: opts.BindHook},
		evictor:   &recordingEvictor{},
		status:    &statusRecorder{},
		events:    &eventRecorder{},
		nodes:     map[string]*corev1.Node{},
		cnrs:      map[string]*v1alpha1.CustomNodeResource{},
		cnrLists:  topology.NewCNRTrimmer(),
		pods:      map[string]*podEntry{},
		arrival:   map[string]int{},
		podGroups: map[string]*schedulingv1beta1.PodGroup{},
		queues:    map[string]*schedulingv1beta1.Queue{},
		classes:   map[string]*schedulingv1.PriorityClass{},

		terminating: map[string]bool{},

		arrivedBound: map[string]map[string]bool{},
	}
	s.serverOpts = defaultServerOptions(opts.NodesToFindPercent)
	cycleMu.Lock()
	s.cache = s.newCache()
	cycleMu.Unlock()
	s.initClock()
	s.runtime = s.newRuntime()
	for _, n := range cluster.Nodes {
		s.UpsertNode(n)
	}
	for _, cnr := range cluster.CNRs {
		s.UpsertCNR(cnr)
	}
	s.hyper = cluster.HyperNodeIndex(c.Topology)
	s.runtime.Fabric.SetHyperNodes(s.hyper)
	for _, p := range cluster.Pods {
		if p.Spec.NodeName == "" {
			return nil, fmt.Errorf("cluster pod %s/%s is not bound", p.Namespace, p.Name)
		}
		if err := s.addPod(p, false); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// newCache returns an empty Volcano mock scheduler cache wired to the
// simulator's binder, evictor and recorders. The cache reads the scheduler
// options when it is built: the caller holds cycleMu.
func (s *Simulator) newCache() *cache.SchedulerCache {
	options.ServerOpts = s.serverOpts
	return cache.NewCustomMockSchedulerCache(s.opts.SchedulerName, s.binder, s.evictor, s.status, nil, nil, s.events)
}

// nextRV returns a fresh resourceVersion.
func (s *Simulator) nextRV() string {
	s.rv++
	return fmt.Sprint(s.rv)
}

// Cycle returns the number of cycles run so far.
func (s *Simulator) Cycle() int { return s.cycle }

// Conf returns the simulator's scheduler conf.
func (s *Simulator) Conf() *Conf { return s.conf }

// Pods returns the pods in arrival order, with their state: those present
// and those the scheduler evicted (deleted pods are forgotten).
func (s *Simulator) Pods() []PodState {
	out := make([]PodState, 0, len(s.pods))
	for i, key := range s.podOrder {
		e, ok := s.pods[key]
		if !ok || s.arrival[key] != i {
			continue
		}
		out = append(out, PodState{Pod: e.pod.DeepCopy(), Workload: e.workload, BoundCycle: e.boundCycle, Evicted: e.evicted})
	}
	return out
}

// PodGroups returns the PodGroups in arrival order, as last written.
func (s *Simulator) PodGroups() []*schedulingv1beta1.PodGroup {
	out := make([]*schedulingv1beta1.PodGroup, 0, len(s.pgOrder))
	for _, key := range s.pgOrder {
		out = append(out, s.podGroups[key].DeepCopy())
	}
	return out
}

// Nodes returns the nodes in arrival order.
func (s *Simulator) Nodes() []*corev1.Node {
	out := make([]*corev1.Node, 0, len(s.nodeOrder))
	for _, name := range s.nodeOrder {
		out = append(out, s.nodes[name].DeepCopy())
	}
	return out
}

// CNRs returns the KCNRs in arrival order.
func (s *Simulator) CNRs() []*v1alpha1.CustomNodeResource {
	out := make([]*v1alpha1.CustomNodeResource, 0, len(s.cnrOrder))
	for _, name := range s.cnrOrder {
		out = append(out, s.cnrs[name].DeepCopy())
	}
	return out
}

// CNR returns a copy of the KCNR of one node, as CNRs lists it.
func (s *Simulator) CNR(name string) (*v1alpha1.CustomNodeResource, bool) {
	c, ok := s.cnrs[name]
	if !ok {
		return nil, false
	}
	return c.DeepCopy(), true
}

// Events returns every event emitted so far, in order.
func (s *Simulator) Events() []Event { return s.events.all() }

// Fabric builds the RDMA fabric of the current nodes and KCNRs, with the
// conf's topology configuration.
func (s *Simulator) Fabric() *topology.Fabric {
	return topology.BuildWithHyperNodes(s.conf.Topology, s.hyper, s.Nodes(), s.CNRs())
}
