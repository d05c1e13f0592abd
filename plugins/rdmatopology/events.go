package rdmatopology

// The Allocate / Deallocate event handlers (Volcano's EventHandler): NIC
// reservation for each task the session allocates, the annotations that bind
// with it, and their release when a statement is discarded; the planned
// assignments the actions hand to the handler; the one path by which a
// session's reservations change.

import (
	"github.com/kubewharf/katalyst-api/pkg/consts"
	"k8s.io/klog/v2"
	"volcano.sh/volcano/pkg/scheduler/api"

	"github.com/rdmatopo/rdmatopo/core/ledger"
	"github.com/rdmatopo/rdmatopo/core/placement"
	"github.com/rdmatopo/rdmatopo/core/preemption"
	"github.com/rdmatopo/rdmatopo/core/topology"
)

// allocate reserves the task's NICs in the ledger (the planned ones, or the
// best fit on its node) and writes the rdmatopo.io/* annotations that go
// with the bind. A task that cannot get NICs marks its job not ready, so the
// statement is discarded.
func (s *SessionState) allocate(task *api.TaskInfo) {
	if !s.wantsRDMA(task) {
		stripAnnotations(task)
		s.noteAllocated(task, nil)
		return
	}
	s.mu.Lock()
	a, planned := s.planned[task.UID]
	s.mu.Unlock()
	if !planned || a.Node != task.NodeName {
		var allowed map[topology.S0ID]bool
		ok := true
		if job := s.ssn.Jobs[task.Job]; job != nil {
			allowed, ok = s.tierLimit(job, task.NodeName)
		}
		if ok {
			a, ok = s.state.Fit(task.NodeName, s.Shape(task), allowed)
		}
		if !ok {
			s.markBroken(task, "no NICs fit on node "+task.NodeName)
			return
		}
	}
	a.PodUID = string(task.UID)
	r := ledger.Reservation{UID: string(task.UID), Namespace: task.Namespace, Name: task.Name,
		Job: string(task.Job), Node: task.NodeName, Zones: a.Zones, Containers: a.Containers}
	if err := s.reserve(r); err != nil {
		s.markBroken(task, err.Error())
		return
	}
	s.annotate(task, a)
	s.noteAllocated(task, &a)
	klog.V(4).InfoS("Reserved NICs", "pod", klog.KRef(task.Namespace, task.Name), "node", task.NodeName, "nics", a.NICs())
}

// deallocate releases what allocate reserved (a discarded statement, an
// evicted task).
func (s *SessionState) deallocate(task *api.TaskInfo) {
	s.mu.Lock()
	delete(s.broken, task.Job)
	s.mu.Unlock()
	s.forgetAllocated(task)
	s.release(string(task.UID), task.Job)
	stripAnnotations(task)
}

func (s *SessionState) markBroken(task *api.TaskInfo, why string) {
	klog.ErrorS(nil, "RDMA task allocated without NICs; its gang will be discarded", "pod", klog.KRef(task.Namespace, task.Name), "reason", why)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.broken[task.Job] = why
}

// AnnotationNUMABindResult is katalyst's pod annotation naming the NUMA
// zone(s) a pod is bound to. The scheduler writes the planned zones there
// (the same ids as ledger.AnnotationNUMA, comma-separated) so that the node
// agent prefers them; docs/node-contract.md says what the node must run for
// that.
const AnnotationNUMABindResult = consts.PodAnnotationNUMABindResultKey

// schedulerKeys are the pod annotations only the scheduler writes.
var schedulerKeys = []string{ledger.AnnotationNICs, ledger.AnnotationNUMA, ledger.AnnotationS0, ledger.AnnotationContainers, AnnotationNUMABindResult}

// annotate replaces the task's pod with a copy carrying the scheduler's
// annotations for assignment a; the binder sends them with the Binding.
// katalyst's numa_bind_result gets the same NUMA ids as rdmatopo.io/numa,
// replacing whatever the pod carried: katalyst reads one value per pod, for
// every container, so a pod whose containers are in different zones gets
// all of them (docs/node-contract.md). rdmatopo.io/containers is written
// only for such a pod; a value the pod carried is dropped.
func (s *SessionState) annotate(task *api.TaskInfo, a placement.Assignment) {
	pod := task.Pod.DeepCopy()
	if pod.Annotations == nil {
		pod.Annotations = map[string]string{}
	}
	delete(pod.Annotations, ledger.AnnotationContainers)
	ann := ledger.Reservation{Node: a.Node, Zones: a.Zones, Containers: a.Containers}.Annotations(s.fabric)
	for k, v := range ann {
		pod.Annotations[k] = v
	}
	pod.Annotations[AnnotationNUMABindResult] = ann[ledger.AnnotationNUMA]
	task.Pod = pod
}

// stripAnnotations removes scheduler-only keys a user set on a pending pod:
// they never grant anything and must not reach the Binding.
func stripAnnotations(task *api.TaskInfo) {
	if task.Pod == nil {
		return
	}
	found := false
	for _, k := range schedulerKeys {
		if _, ok := task.Pod.Annotations[k]; ok {
			found = true
		}
	}
	if !found {
		return
	}
	pod := task.Pod.DeepCopy()
	for _, k := range schedulerKeys {
		delete(pod.Annotations, k)
	}
	task.Pod = pod
}

// The one mutation path of NIC reservations in a session.
//
// The ledger is the record; the session keeps two views derived from it:
// the free view (State) the planner and predicates read, and the by-job
// index (byJob, with the held cache) the planner's Held and the PodGroup
// placement read. Both views are built from the ledger when the session
// opens, after reconcile has released, restored and adopted reservations
// there (so adoption needs no mirror of its own); within the session every
// change goes through reserve and release, which update the ledger and both
// views together.

// reserve records r in the ledger and mirrors it into the session's views.
// On error (a NIC held, a malformed reservation) nothing changes.
func (s *SessionState) reserve(r ledger.Reservation) error {
	if err := s.rt.Ledger.Reserve(r); err != nil {
		return err
	}
	s.state.Apply(r.UID, placement.AssignmentOf(r))
	s.mu.Lock()
	s.indexLocked(r)
	s.mu.Unlock()
	return nil
}

// release drops the pod's reservation from the ledger and the session's
// views, and returns it.
func (s *SessionState) release(uid string, job api.JobID) (ledger.Reservation, bool) {
	s.mu.Lock()
	delete(s.byJob[job], uid)
	delete(s.held, job)
	s.mu.Unlock()
	r, held := s.rt.Ledger.Release(uid)
	if held {
		s.state.Unapply(r.UID, placement.AssignmentOf(r))
		if id := api.JobID(r.Job); id != job {
			s.mu.Lock()
			delete(s.byJob[id], uid)
			delete(s.held, id)
			s.mu.Unlock()
		}
	}
	return r, held
}

// noteAllocated records a task of an RDMA gang allocated in this session
// (a the NICs it reserved, for a task requesting RDMA).
func (s *SessionState) noteAllocated(task *api.TaskInfo, a *placement.Assignment) {
	job := s.ssn.Jobs[task.Job]
	if job == nil || !s.isRDMAJob(job) || task.InitResreq == nil {
		return
	}
	t := holdTaskOf(task, task.NodeName, a)
	var victims []string
	if h, ok := s.holds.Taken(string(task.Job)); ok {
		victims = h.Victims
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.allocated == nil {
		s.allocated = map[api.TaskID]sentBind{}
	}
	s.allocated[task.UID] = sentBind{job: task.Job, task: t, victims: victims}
}

// forgetAllocated drops a task deallocated in this session.
func (s *SessionState) forgetAllocated(task *api.TaskInfo) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.allocated, task.UID)
}

// setPlanned hands the Allocate handler the assignment chosen for a task.
func (s *SessionState) setPlanned(uid api.TaskID, a placement.Assignment) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.planned[uid] = a
}

// clearPlanned forgets planned assignments and pipelined tasks (after a
// commit or discard).
func (s *SessionState) clearPlanned() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.planned = map[api.TaskID]placement.Assignment{}
	s.pipelined = map[api.JobID][]preemption.HoldTask{}
}
