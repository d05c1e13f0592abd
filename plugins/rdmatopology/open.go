package rdmatopology

// Session open (Volcano's OnSessionOpen): the fabric synced, the ledger
// reconciled with the session's pods (released, restored, adopted) and the
// free view built.

import (
	"sort"

	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
	"volcano.sh/volcano/pkg/scheduler/api"
	"volcano.sh/volcano/pkg/scheduler/framework"

	"github.com/rdmatopo/rdmatopo/core/ledger"
	"github.com/rdmatopo/rdmatopo/core/placement"
	"github.com/rdmatopo/rdmatopo/core/preemption"
	"github.com/rdmatopo/rdmatopo/core/topology"
)

// openSession builds the session state: the runtime (started on first use),
// nodes synced into the fabric, the ledger reconciled with the session's
// pods, and the free view.
func openSession(rt *Runtime, ssn *framework.Session, args *Args) *SessionState {
	rt.ensure(ssn, args)
	rt.syncNodes(ssn)
	f := rt.Fabric.Snapshot()
	now := rt.Now()
	rt.faults.observe(now, f, args, rt.recorder)
	s := newSession(rt, ssn, args, f)
	s.uncountable = s.findUncountable()
	// The ledger counts each NIC's units as this session's fabric shows.
	rt.Ledger.UseFabric(f)
	s.reconcile()
	rt.Ledger.Each(s.indexLocked)
	s.noteLost(s.released)
	s.state = placement.NewState(f, rt.Ledger)
	s.holds = preemption.NewView(s.state)
	LimitNodes(s.state, ssn.Nodes, v1.ResourceName(args.GPUResource), v1.ResourceName(args.RDMAResource))
	// Flapping NICs in their cool-down are listed and free, but not used.
	rt.faults.keepOut(now, s.state)
	// What the last session computed about nodes nothing changed on since
	// (their views, their leaves' statistics) holds in this one.
	views, leaves := s.state.Inherit(rt.lastState)
	klog.V(5).InfoS("Planner state carried over from the last session", "nodeViews", views, "leafStatistics", leaves)
	rt.lastState = s.state
	return s
}

// newSession returns the plugin's state in ssn over the fabric snapshot f,
// before the ledger is reconciled and indexed (State is nil until then).
func newSession(rt *Runtime, ssn *framework.Session, args *Args, f *topology.Fabric) *SessionState {
	return &SessionState{
		ssn: ssn, args: args, rt: rt, fabric: f,
		planned:   map[api.TaskID]placement.Assignment{},
		pipelined: map[api.JobID][]preemption.HoldTask{},
		broken:    map[api.JobID]string{},
		failures:  map[api.JobID]*placement.Failure{},
		held:      map[api.JobID]*placement.Occupancy{},
		byJob:     map[api.JobID]map[string]ledger.Reservation{},

		replaceHeld: map[api.JobID][]heldRoom{},
	}
}

// reconcile brings the long-lived ledger in line with the session's pods:
// reservations of pods that are gone, finished, back to pending (a failed
// bind) or on another node are released; bound pods that carry the
// scheduler's annotations but have no reservation (after a restart) get one
// back from them; bound RDMA pods without those annotations get the one
// their node's KCNR lists (so every running pod the KCNRs list is in the
// ledger, however it was placed); reservations the KCNRs list are
// confirmed, and where a KCNR lists a pod on other NICs than reserved, its
// NICs are adopted (truth.go).
func (s *SessionState) reconcile() {
	// Pods of the session's jobs, plus every pod on a node (pods of other
	// schedulers or without a group are only there).
	tasks := map[string]*api.TaskInfo{}
	for _, node := range s.ssn.Nodes {
		for _, t := range node.Tasks {
			tasks[string(t.UID)] = t
		}
	}
	for _, job := range s.ssn.Jobs {
		for _, t := range job.Tasks {
			tasks[string(t.UID)] = t
		}
	}
	l := s.rt.Ledger
	// kept holds the reservations that stay: the pods below without one
	// may need theirs restored.
	kept := make(map[string]bool, len(tasks))
	l.Each(func(r ledger.Reservation) {
		t, ok := tasks[r.UID]
		var why string
		switch {
		case !ok:
			why = "pod is gone"
		case nodeOf(t) != "" && nodeOf(t) != r.Node:
			why = "pod is not on the reserved node"
		case t.Status == api.Pending || t.Status == api.Pipelined:
			why = "pod is pending again (bind failed)"
		case t.Status == api.Succeeded || t.Status == api.Failed:
			why = "pod finished"
		case t.Pod != nil && t.Pod.DeletionTimestamp != nil:
			why = "pod is being deleted"
		}
		if why == "" {
			kept[r.UID] = true
			return
		}
		l.Release(r.UID)
		// A pod that Succeeded finished its work: its gang is owed no
		// replacement. One gone, Failed or being deleted may come back.
		if !ok || t.Status == api.Failed || (t.Pod != nil && t.Pod.DeletionTimestamp != nil) {
			s.released = append(s.released, r)
		}
		klog.V(3).InfoS("Released NIC reservation", "pod", r.Namespace+"/"+r.Name, "node", r.Node, "nics", r.NICs(), "reason", why)
	})
	var missing, unannotated []*api.TaskInfo
	for uid, t := range tasks {
		if kept[uid] || t.Pod == nil || nodeOf(t) == "" {
			continue
		}
		if !api.AllocatedStatus(t.Status) || t.Status == api.Allocated {
			continue
		}
		// A Binding adds annotations but cannot remove them: a pod that
		// requests no RDMA may still carry a key a user forged. Only RDMA
		// pods' annotations are ours.
		if !s.wantsRDMA(t) {
			continue
		}
		if _, ok := t.Pod.Annotations[ledger.AnnotationNICs]; ok {
			missing = append(missing, t)
		} else {
			unannotated = append(unannotated, t)
		}
	}
	s.restore(tasks, missing)
	s.restoreListed(unannotated)
	s.adopt(tasks)
	s.rt.truth.forget(tasks, s.ssn.Jobs)
}

// restore gives bound pods that carry the scheduler's annotations but have
// no reservation (after a restart) their reservation back from the
// annotations (ledger.Rebuild). tasks are the session's pods by UID.
func (s *SessionState) restore(tasks map[string]*api.TaskInfo, bound []*api.TaskInfo) {
	if len(bound) == 0 {
		return
	}
	missing := make([]*v1.Pod, 0, len(bound))
	for _, t := range bound {
		missing = append(missing, t.Pod)
	}
	sort.Slice(missing, func(i, j int) bool { return missing[i].UID < missing[j].UID })
	rebuilt, errs := ledger.Rebuild(s.args.TopologyConfig(), missing, s.fabric)
	s.rt.reportRebuildErrors(errs)
	for _, r := range rebuilt.All() {
		if job, ok := tasks[r.UID]; ok {
			r.Job = string(job.Job)
		}
		s.reserveRestored(r, "pod annotations")
	}
}

// restoreListed enters bound RDMA pods that carry no rdmatopo.io
// annotations (placed before rdmatopo ran, by another scheduler, or
// stripped) into the ledger as their nodes' KCNRs list them
// (ledger.Listed), so they are victims, room blockers and held capacity
// like the pods rdmatopo placed. A pod no KCNR lists yet holds nothing the
// ledger could name: the KCNR's free figures and the session's idle
// resources still count it.
func (s *SessionState) restoreListed(bound []*api.TaskInfo) {
	sort.Slice(bound, func(i, j int) bool { return bound[i].UID < bound[j].UID })
	for _, t := range bound {
		r, ok := ledger.Listed(s.args.TopologyConfig(), t.Pod, s.fabric)
		if !ok || r.Node != nodeOf(t) {
			continue
		}
		r.Job = string(t.Job)
		s.reserveRestored(r, "the node's CustomNodeResource")
	}
}

// reserveRestored reserves a bound pod's restored reservation. A NIC
// another pod already holds stays with it; the pod keeps every other NIC,
// so none is handed out twice.
func (s *SessionState) reserveRestored(r ledger.Reservation, from string) {
	contested, err := s.rt.Ledger.ReserveUncontested(r)
	switch {
	case err != nil:
		klog.ErrorS(err, "Cannot restore NIC reservation of a bound pod", "pod", r.Namespace+"/"+r.Name, "from", from)
	case len(contested) > 0:
		klog.ErrorS(nil, "Restored NIC reservation without NICs another pod holds", "pod", r.Namespace+"/"+r.Name, "node", r.Node,
			"contested", contested, "from", from)
	default:
		klog.V(3).InfoS("Restored NIC reservation", "pod", r.Namespace+"/"+r.Name, "node", r.Node, "nics", r.NICs(), "from", from)
	}
}
