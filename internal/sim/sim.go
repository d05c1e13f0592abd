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
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/kubewharf/katalyst-api/pkg/apis/node/v1alpha1"
	"github.com/spf13/pflag"
	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"
	schedulingscheme "volcano.sh/apis/pkg/apis/scheduling/scheme"
	schedulingv1beta1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"
	"volcano.sh/volcano/cmd/scheduler/app/options"
	"volcano.sh/volcano/pkg/scheduler/api"
	"volcano.sh/volcano/pkg/scheduler/cache"
	volcanoconf "volcano.sh/volcano/pkg/scheduler/conf"
	"volcano.sh/volcano/pkg/scheduler/framework"

	"github.com/rdmatopo/rdmatopo/framework/topology"
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

// Submit adds a workload: its Queues, PriorityClasses, PodGroups and
// pending Pods. Names must not clash with objects already present.
func (s *Simulator) Submit(set *workload.Set) error {
	for _, q := range set.Queues {
		if s.queues[q.Name] != nil {
			continue
		}
		s.queues[q.Name] = q.DeepCopy()
		s.cache.AddQueueV1beta1(q.DeepCopy())
	}
	for _, pc := range set.PriorityClasses {
		s.AddPriorityClass(pc)
	}
	for key, tasks := range set.VolcanoJobTasks {
		ns, name, _ := strings.Cut(key, "/")
		s.runtime.SetVolcanoJobTasks(ns, name, tasks)
	}
	for _, pg := range set.PodGroups {
		if err := s.AddPodGroup(pg); err != nil {
			return err
		}
		if n := set.Native[pg.Namespace+"/"+pg.Name]; n != nil {
			s.runtime.SetPodGroupTopology(pg.Namespace, pg.Name, pg.UID, n)
		}
	}
	for _, p := range set.Pods {
		// A running pod (spec.nodeName set) holds its node like a cluster
		// pod and is reported with the workload.
		if err := s.addPod(p, true); err != nil {
			return err
		}
	}
	return nil
}

// AddPriorityClass adds a PriorityClass (ignored if one of the name exists).
func (s *Simulator) AddPriorityClass(pc *schedulingv1.PriorityClass) {
	if s.classes[pc.Name] == nil {
		s.classes[pc.Name] = pc.DeepCopy()
		s.cache.AddPriorityClass(pc.DeepCopy())
	}
}

// AddPodGroup adds a PodGroup.
func (s *Simulator) AddPodGroup(pg *schedulingv1beta1.PodGroup) error {
	key := pg.Namespace + "/" + pg.Name
	if _, ok := s.podGroups[key]; ok {
		return fmt.Errorf("PodGroup %s already exists", key)
	}
	obj := pg.DeepCopy()
	obj.ResourceVersion = s.nextRV()
	s.podGroups[key] = obj
	s.pgOrder = append(s.pgOrder, key)
	s.cache.AddPodGroupV1beta1(obj.DeepCopy())
	return nil
}

// DeletePodGroup removes a PodGroup (its pods stay until deleted).
func (s *Simulator) DeletePodGroup(namespace, name string) error {
	key := namespace + "/" + name
	pg, ok := s.podGroups[key]
	if !ok {
		return fmt.Errorf("PodGroup %s does not exist", key)
	}
	delete(s.podGroups, key)
	s.pgOrder = removeKey(s.pgOrder, key)
	s.cache.DeletePodGroupV1beta1(pg)
	return nil
}

// AddPod adds a pod: pending (spec.nodeName empty) pods are submitted for
// scheduling, bound ones occupy their node.
func (s *Simulator) AddPod(p *corev1.Pod) error {
	return s.addPod(p, p.Spec.NodeName == "")
}

// addPod stores a pod; workload pods are reported (pending ones, and
// running ones submitted with the workload).
func (s *Simulator) addPod(p *corev1.Pod, workload bool) error {
	pending := p.Spec.NodeName == ""
	key := p.Namespace + "/" + p.Name
	if e, ok := s.pods[key]; ok && !e.deleted {
		return fmt.Errorf("pod %s already exists", key)
	}
	obj := s.podLists.copyPod(p)
	obj.ResourceVersion = s.nextRV()
	if !pending && obj.Status.Phase == "" {
		obj.Status.Phase = corev1.PodRunning
	}
	if pending && obj.Status.Phase == "" {
		obj.Status.Phase = corev1.PodPending
	}
	if _, ok := s.pods[key]; !ok {
		// New, or back under the name of a pod deleted earlier: it arrives
		// now (the older position is stale).
		s.arrival[key] = len(s.podOrder)
		s.podOrder = append(s.podOrder, key)
	}
	s.pods[key] = &podEntry{pod: obj, workload: workload}
	if !pending {
		m := s.arrivedBound[obj.Spec.NodeName]
		if m == nil {
			m = map[string]bool{}
			s.arrivedBound[obj.Spec.NodeName] = m
		}
		m[key] = true
	}
	s.cache.AddPod(s.podLists.copyPod(obj))
	return nil
}

// CompletePod marks a bound pod Succeeded, as its kubelet reports a pod
// whose containers all exited 0: it stays in the store, frees its node in
// Volcano's accounting, and its allocations leave its node's KCNR, as
// katalyst reports once the pod has terminated.
func (s *Simulator) CompletePod(namespace, name string) error {
	key := namespace + "/" + name
	e, ok := s.pods[key]
	if !ok || e.deleted || e.pod.Spec.NodeName == "" {
		return fmt.Errorf("pod %s is not bound", key)
	}
	old := e.pod
	next := s.podLists.copyPod(old)
	next.Status.Phase = corev1.PodSucceeded
	next.ResourceVersion = s.nextRV()
	s.cache.UpdatePod(old, s.podLists.copyPod(next))
	e.pod = next
	s.releaseFromCNR(next)
	return nil
}

// DeletePod removes a pod (a finished or deleted pod frees its node). Its
// allocations leave its node's KCNR too, as katalyst reports once the pod
// is gone.
func (s *Simulator) DeletePod(namespace, name string) error {
	key := namespace + "/" + name
	e, ok := s.pods[key]
	if !ok || e.deleted {
		return fmt.Errorf("pod %s does not exist", key)
	}
	s.cache.DeletePod(e.pod)
	s.releaseFromCNR(e.pod)
	s.forget(key)
	return nil
}

// forget drops a deleted pod from the store, compacting the arrival order
// once it is mostly stale (long soak runs delete many pods).
func (s *Simulator) forget(key string) {
	delete(s.pods, key)
	s.stale++
	if s.stale*2 <= len(s.podOrder) {
		return
	}
	kept := s.podOrder[:0]
	for i, k := range s.podOrder {
		if _, ok := s.pods[k]; ok && s.arrival[k] == i {
			s.arrival[k] = len(kept)
			kept = append(kept, k)
		}
	}
	for k := range s.arrival {
		if _, ok := s.pods[k]; !ok {
			delete(s.arrival, k)
		}
	}
	s.podOrder, s.stale = kept, 0
}

// UpsertNode adds or replaces a Node (in the scheduler cache and in the
// rdma-topology fabric).
func (s *Simulator) UpsertNode(n *corev1.Node) {
	obj := n.DeepCopy()
	obj.ResourceVersion = s.nextRV()
	if _, ok := s.nodes[obj.Name]; !ok {
		s.nodeOrder = append(s.nodeOrder, obj.Name)
	}
	s.nodes[obj.Name] = obj
	// The store, Volcano's cache and the fabric share the object, as
	// vc-scheduler's informers hand their cache one object per update:
	// none of them modifies it, and an update replaces it.
	_ = s.cache.AddOrUpdateNode(obj) // never fails
	s.runtime.Fabric.UpsertNode(obj)
}

// DeleteNode removes a Node; pods bound to it stay until deleted.
func (s *Simulator) DeleteNode(name string) error {
	if _, ok := s.nodes[name]; !ok {
		return fmt.Errorf("node %s does not exist", name)
	}
	delete(s.nodes, name)
	s.nodeOrder = removeKey(s.nodeOrder, name)
	s.runtime.Fabric.DeleteNode(name)
	return s.cache.RemoveNode(name)
}

// UpsertCNR adds or replaces a KCNR in the rdma-topology fabric.
func (s *Simulator) UpsertCNR(cnr *v1alpha1.CustomNodeResource) {
	s.putCNR(cnr.DeepCopy())
}

// putCNR stores a KCNR the simulator owns (a copy no caller holds) with a
// new resourceVersion, its resource lists shared with the equal lists of
// the KCNRs stored before (cnrLists), and hands it to the fabric.
func (s *Simulator) putCNR(obj *v1alpha1.CustomNodeResource) {
	obj.ResourceVersion = s.nextRV()
	s.cnrLists.ShareLists(obj)
	if _, ok := s.cnrs[obj.Name]; !ok {
		s.cnrOrder = append(s.cnrOrder, obj.Name)
	}
	s.cnrs[obj.Name] = obj
	s.runtime.Fabric.UpsertCNR(obj)
}

// DeleteCNR removes a KCNR from the fabric.
func (s *Simulator) DeleteCNR(name string) error {
	if _, ok := s.cnrs[name]; !ok {
		return fmt.Errorf("CustomNodeResource %s does not exist", name)
	}
	delete(s.cnrs, name)
	s.cnrOrder = removeKey(s.cnrOrder, name)
	s.runtime.Fabric.DeleteCNR(name)
	return nil
}

// removeKey deletes one key from an order slice.
func removeKey(keys []string, key string) []string {
	for i, k := range keys {
		if k == key {
			return append(keys[:i:i], keys[i+1:]...)
		}
	}
	return keys
}

// Run runs cycles until one binds and evicts nothing while no max-wait
// deadline is pending (PendingDeadline), or maxCycles cycles ran
// (maxCycles <= 0: no limit). It returns the reports of every cycle, the
// last one included; running out of cycles while still binding is an
// error, while only waiting for a deadline is not (PendingDeadline then
// still reports it).
func (s *Simulator) Run(maxCycles int) ([]*CycleReport, error) {
	var reports []*CycleReport
	for i := 0; maxCycles <= 0 || i < maxCycles; i++ {
		rep, err := s.RunCycle()
		if err != nil {
			return reports, err
		}
		reports = append(reports, rep)
		if !rep.Progress() {
			if _, waiting := s.PendingDeadline(); !waiting || i+1 == maxCycles {
				return reports, nil
			}
		}
	}
	return reports, fmt.Errorf("still binding after %d cycles", maxCycles)
}

// RunCycle runs one scheduling cycle: a session with every action of the
// conf, then the write-back of binds, evictions and status. A panic inside
// Volcano or a plugin is returned as an error.
func (s *Simulator) RunCycle() (rep *CycleReport, err error) {
	cycleMu.Lock()
	defer cycleMu.Unlock()
	s.cycle++
	s.tick()
	s.events.setCycle(s.cycle)
	s.install()
	rep = &CycleReport{Cycle: s.cycle}
	s.endTerminations(rep)
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("scheduling cycle %d panicked: %v", s.cycle, r)
		}
	}()
	start, startCPU := time.Now(), processCPU()
	ssn := framework.OpenSession(s.cache, s.tiers, s.conf.Configurations)
	for _, a := range s.actions() {
		a.Execute(ssn)
	}
	framework.CloseSession(ssn)
	rep.Duration = time.Since(start)
	rep.CPU = processCPU() - startCPU

	s.applyBinds(rep)
	// Evictions first: a pod update (a patch, the node agent's report)
	// makes the cache rebuild the task from the pod, which would forget that
	// the task is Releasing.
	s.applyEvictions(rep)
	s.applyPatches(rep)
	s.confirmBinds(rep)
	s.applyStatus()
	s.trackWaits()
	if s.opts.OnCycle != nil {
		s.opts.OnCycle(rep)
	}
	return rep, nil
}

// install sets the process-wide state a session reads as vc-scheduler
// sets it (caller holds cycleMu):
//   - Volcano's conf.EnabledActionMap: the names of the conf's actions,
//     made afresh before every session as Volcano's Scheduler.runOnce
//     does; allocate and topology-allocate leave pending jobs to enqueue
//     when it is on;
//   - Volcano's options.ServerOpts: the options vc-scheduler's main
//     registers (NewServerOption, AddFlags, RegisterOptions) with the
//     flags' defaults, but for Options.NodesToFindPercent; options a test
//     or another simulator installed do not leak into this one;
//   - rdmatopo's plugin builder and actions, registered over this
//     simulator's runtime (one registry.Set per runtime), as vc-scheduler's
//     main registers them over its own; Volcano's actions and plugins are
//     registered by their imports.
func (s *Simulator) install() {
	enabled := make(map[string]bool, len(s.conf.Actions))
	for _, a := range s.conf.Actions {
		enabled[a.Name()] = true
	}
	volcanoconf.EnabledActionMap = enabled
	options.ServerOpts = s.serverOpts
	if s.installed == nil {
		s.installed = registry.New(s.runtime)
	}
	s.installed.Install()
}

// actions returns the conf's actions as registered now: rdmatopo's over
// this simulator's runtime (install), Volcano's as they are.
func (s *Simulator) actions() []framework.Action {
	out := make([]framework.Action, 0, len(s.conf.Actions))
	for _, a := range s.conf.Actions {
		if cur, ok := framework.GetAction(a.Name()); ok {
			a = cur
		}
		out = append(out, a)
	}
	return out
}

// newRuntime returns a fresh rdma-topology runtime on the simulated clock,
// whose pod patches the simulator applies after the cycle; the simulator
// feeds its fabric.
func (s *Simulator) newRuntime(opts ...rdmatopology.Option) *rdmatopology.Runtime {
	return rdmatopology.NewRuntime(s.conf.Topology, append([]rdmatopology.Option{rdmatopology.WithClock(s.Now),
		rdmatopology.WithPodPatcher(s.queuePatch), rdmatopology.WithRecorder(s.events)}, opts...)...)
}

// applyBinds hands the cycle's bind requests to the cache's binder (as
// Volcano's bind worker would), then writes each outcome back: a bound pod
// gets its node, the annotations it carried at bind time (the API server
// merges a Binding's annotations into the pod) and phase Running; a pod
// whose bind failed is re-added as pending, as a resync from the API
// server would.
func (s *Simulator) applyBinds(rep *CycleReport) {
	var tasks []*api.TaskInfo
	for drained := false; !drained; {
		select {
		case t := <-s.cache.BindFlowChannel:
			tasks = append(tasks, t)
		default:
			drained = true
		}
	}
	if len(tasks) > 0 {
		s.cache.Bind(tasks)
	}
	for _, rec := range s.binder.take() {
		key := rec.Pod.Namespace + "/" + rec.Pod.Name
		e, ok := s.pods[key]
		if !ok || e.deleted {
			continue
		}
		old := e.pod
		if rec.Err != nil {
			rep.FailedBinds = append(rep.FailedBinds, rec)
			s.cache.DeletePod(old)
			s.cache.AddPod(s.podLists.copyPod(old))
			continue
		}
		bound := s.podLists.copyPod(old)
		for k, v := range rec.Pod.Annotations {
			if bound.Annotations == nil {
				bound.Annotations = map[string]string{}
			}
			bound.Annotations[k] = v
		}
		bound.Spec.NodeName = rec.Node
		bound.Status.Phase = corev1.PodRunning
		bound.Status.Conditions = []corev1.PodCondition{{
			Type: corev1.PodScheduled, Status: corev1.ConditionTrue,
		}}
		bound.ResourceVersion = s.nextRV()
		s.cache.UpdatePod(old, s.podLists.copyPod(bound))
		e.pod, e.boundCycle = bound, s.cycle
		rep.Binds = append(rep.Binds, rec)
	}
}

// applyEvictions deletes the pods the cycle evicted: the tasks the cache
// now holds as Releasing whose pods are not already terminating. With
// Options.EvictionGrace they terminate first: the pod keeps its node with a
// deletionTimestamp (the cache holds its resources as releasing) and is
// removed by endTerminations.
func (s *Simulator) applyEvictions(rep *CycleReport) {
	var keys []string
	s.cache.Mutex.Lock()
	for _, job := range s.cache.Jobs {
		for _, t := range job.Tasks {
			if t.Status == api.Releasing && t.Pod.DeletionTimestamp == nil {
				keys = append(keys, t.Namespace+"/"+t.Name)
			}
		}
	}
	s.cache.Mutex.Unlock()
	sort.Strings(keys)
	for _, key := range keys {
		e, ok := s.pods[key]
		if !ok || e.deleted || e.goneAt > 0 {
			continue
		}
		e.evicted = s.evictionReason(key)
		rep.Evicted = append(rep.Evicted, key)
		if s.opts.EvictionGrace > 0 {
			old := e.pod
			next := s.podLists.copyPod(old)
			now := metav1.NewTime(s.Now())
			next.DeletionTimestamp = &now
			next.ResourceVersion = s.nextRV()
			s.cache.UpdatePod(old, s.podLists.copyPod(next))
			e.pod = next
			e.goneAt = s.cycle + 1 + s.opts.EvictionGrace
			s.terminating[key] = true
			continue
		}
		e.deleted = true
		s.cache.DeletePod(e.pod)
		s.releaseFromCNR(e.pod)
	}
}

// endTerminations removes the evicted pods whose grace has ended, before
// the cycle's session, and reports them.
func (s *Simulator) endTerminations(rep *CycleReport) {
	var keys []string
	for key := range s.terminating {
		e, ok := s.pods[key]
		switch {
		case !ok || e.deleted || e.goneAt == 0:
			// Deleted meanwhile (DeletePod), or a new pod under the name.
			delete(s.terminating, key)
		case e.goneAt <= s.cycle:
			keys = append(keys, key)
		}
	}
	sort.Strings(keys)
	for _, key := range keys {
		delete(s.terminating, key)
		e := s.pods[key]
		e.deleted = true
		s.cache.DeletePod(e.pod)
		s.releaseFromCNR(e.pod)
		rep.Terminated = append(rep.Terminated, key)
	}
}

// evictionReason waits briefly for Volcano's evict goroutine to report the
// reason of an eviction (it always runs; the wait is bounded).
func (s *Simulator) evictionReason(key string) string {
	deadline := time.Now().Add(2 * time.Second)
	for {
		s.evictor.mu.Lock()
		reason, ok := s.evictor.reasons[key]
		s.evictor.mu.Unlock()
		if ok {
			return reason
		}
		if time.Now().After(deadline) {
			return "evicted"
		}
		time.Sleep(time.Millisecond)
	}
}

// applyStatus writes the PodGroup status (and annotations) the session
// produced back into the store and the cache, with a new resourceVersion
// (the cache ignores updates that keep it), and keeps the pod conditions
// Volcano wrote on pending pods.
func (s *Simulator) applyStatus() {
	pgs, pods := s.status.take()
	ids := make([]string, 0, len(pgs))
	for id := range pgs {
		ids = append(ids, string(id))
	}
	sort.Strings(ids)
	for _, id := range ids {
		old, ok := s.podGroups[id]
		if !ok {
			continue
		}
		next := &schedulingv1beta1.PodGroup{}
		if err := schedulingscheme.Scheme.Convert(&pgs[api.JobID(id)].PodGroup, next, nil); err != nil {
			continue // cannot happen for a PodGroup Volcano itself converted
		}
		next.TypeMeta = old.TypeMeta
		next.ResourceVersion = s.nextRV()
		s.cache.UpdatePodGroupV1beta1(old, next.DeepCopy())
		s.podGroups[id] = next
	}
	for key, p := range pods {
		e, ok := s.pods[key]
		if !ok || e.deleted || e.pod.Spec.NodeName != "" {
			continue
		}
		cur := s.podLists.copyPod(e.pod)
		cur.Status.Conditions = p.Status.Conditions
		cur.Status.NominatedNodeName = p.Status.NominatedNodeName
		e.pod = cur
	}
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

// queuePatch is the rdma-topology PodPatcher of the simulator: the
// scheduler patches a pod's annotations when it adopts what a KCNR lists;
// the patch reaches the simulated API server after the session, as an
// informer would deliver it.
func (s *Simulator) queuePatch(_ context.Context, namespace, name string, annotations map[string]string) error {
	key := namespace + "/" + name
	s.patchMu.Lock()
	defer s.patchMu.Unlock()
	if e, ok := s.pods[key]; !ok || e.deleted {
		return fmt.Errorf("pod %s does not exist", key)
	}
	cp := make(map[string]string, len(annotations))
	for k, v := range annotations {
		cp[k] = v
	}
	s.patches = append(s.patches, PodPatch{Pod: key, Annotations: cp})
	return nil
}

// applyPatches merges the session's annotation patches into the pods (a
// pod deleted meanwhile is skipped) and reports them.
func (s *Simulator) applyPatches(rep *CycleReport) {
	s.patchMu.Lock()
	patches := s.patches
	s.patches = nil
	s.patchMu.Unlock()
	for _, pt := range patches {
		e, ok := s.pods[pt.Pod]
		if !ok || e.deleted {
			continue
		}
		rep.Patches = append(rep.Patches, pt)
		old := e.pod
		next := s.podLists.copyPod(old)
		if next.Annotations == nil {
			next.Annotations = map[string]string{}
		}
		for k, v := range pt.Annotations {
			next.Annotations[k] = v
		}
		next.ResourceVersion = s.nextRV()
		s.cache.UpdatePod(old, s.podLists.copyPod(next))
		e.pod = next
	}
}

// confirmBinds runs the node agent on the cycle's binds when
// Options.NodeAgent is set: each bound pod's node KCNR lists what the
// agent chose for it before the next session.
func (s *Simulator) confirmBinds(rep *CycleReport) {
	if s.opts.NodeAgent == "" {
		return
	}
	for _, b := range rep.Binds {
		if _, err := s.ConfirmPod(b.Pod.Namespace, b.Pod.Name); err != nil {
			klog.ErrorS(err, "Node agent cannot report the pod", "pod", klog.KRef(b.Pod.Namespace, b.Pod.Name), "node", b.Node)
		}
	}
}
