package rdmatopology

// Rebind holds: the places of a partial gang's failed binds.
//
// A bind can fail after the session that allocated the pod closed (the API
// server refused the Binding, the kubelet or the node agent rejected the
// pod). The pod is pending again while the rest of its gang is bound and
// waits for it, and reconcile releases the NICs it was planned on. Planned
// again from the free view, the pod would compete for that room with every
// other job, and the free view may not even show the room: the KCNRs can
// still list, for their lag, the pods that held it before (the victims of
// the preemption that made it, pods that finished). The gang would stay
// partial until the lag passed, or for good once another job took the room.
//
// So each session records the pods of RDMA gangs it sent to bind, and the
// next session, finding one of them pending again while its gang has pods
// bound but fewer than minMember, keeps the pod's place for the gang as a
// hold (Hold.Rebind): the same NICs, zones and node resources, kept from
// other jobs as a preempting gang's hold is (holds.go), and allocated to
// the pod again by topology-allocate before any job's turn. The hold ends
// as every hold does (holdBroken), except that a KCNR listing a pod that is
// gone on a held NIC is the KCNR's lag, not a sign that the node gave the
// NIC away; and when the place's node no longer has the pod's resources,
// even once its releasing pods are gone, the gang plans the pod anew.

import (
	"slices"
	"sort"

	"k8s.io/klog/v2"
	"volcano.sh/volcano/pkg/scheduler/api"

	"github.com/rdmatopo/rdmatopo/core/ledger"
	"github.com/rdmatopo/rdmatopo/core/preemption"
)

// sentBind is a pod of an RDMA gang allocated in a session: where it goes,
// and the victims of the hold it was allocated from (their KCNR listings
// on its NICs are the lag of their eviction).
type sentBind struct {
	job     api.JobID
	task    preemption.HoldTask
	victims []string
}

// noteSent hands the runtime, when the session closes, the tasks of RDMA
// gangs it sent to bind: those allocated and committed (Binding), not
// those pipelined or left allocated by a statement neither committed nor
// discarded.
func (s *SessionState) noteSent() {
	s.mu.Lock()
	defer s.mu.Unlock()
	var sent []sentBind
	for uid, b := range s.allocated {
		job := s.ssn.Jobs[b.job]
		if job == nil {
			continue
		}
		if t := job.Tasks[uid]; t != nil && t.Status == api.Binding {
			sent = append(sent, b)
		}
	}
	sort.Slice(sent, func(i, j int) bool { return sent[i].task.UID < sent[j].task.UID })
	s.rt.sent = sent
}

// holdFailedBinds turns the failed binds of the last session's partial
// gangs into rebind holds. It runs when the session opens, after
// reconcile and before the holds are applied.
func (s *SessionState) holdFailedBinds() {
	sent := s.rt.sent
	s.rt.sent = nil
	failed := map[api.JobID][]preemption.HoldTask{}
	victims := map[api.JobID][]string{}
	var jobs []api.JobID
	for _, b := range sent {
		job := s.ssn.Jobs[b.job]
		if job == nil {
			continue
		}
		if t := job.Tasks[api.TaskID(b.task.UID)]; t == nil || t.Status != api.Pending || nodeOf(t) != "" {
			continue // bound, gone, or placed by someone else
		}
		if _, seen := failed[b.job]; !seen {
			jobs = append(jobs, b.job)
		}
		failed[b.job] = append(failed[b.job], b.task)
		for _, v := range b.victims {
			if !slices.Contains(victims[b.job], v) {
				victims[b.job] = append(victims[b.job], v)
			}
		}
	}
	for _, id := range jobs {
		job := s.ssn.Jobs[id]
		if ready := job.ReadyTaskNum(); ready == 0 || ready >= job.MinAvailable {
			// Nothing bound waits for the pods (the gang is planned whole
			// again), or the gang is whole without them.
			continue
		}
		if s.rt.preemption.Holds.Has(string(id)) {
			continue // the gang's pending pods are held already
		}
		h := &preemption.Hold{Job: string(id), Name: job.Namespace + "/" + job.Name, Tasks: failed[id], Victims: victims[id],
			Since: s.rt.Now(), Rebind: true}
		s.rt.preemption.Holds.Put(h.Job, h)
		names := make([]string, 0, len(h.Tasks))
		for _, t := range h.Tasks {
			names = append(names, t.Name+" on "+t.Node)
		}
		klog.InfoS("Keeping the places of a partial gang's failed binds", "job", h.Name, "pods", names,
			"bound", job.ReadyTaskNum(), "minMember", job.MinAvailable)
	}
}

// livePod reports whether a KCNR consumer ("namespace/name/uid") is a pod
// of the session that has not finished.
func (s *SessionState) livePod(consumer string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.live == nil {
		s.live = map[string]bool{}
		add := func(t *api.TaskInfo) {
			if t.Status != api.Succeeded && t.Status != api.Failed {
				s.live[ledger.Reservation{Namespace: t.Namespace, Name: t.Name, UID: string(t.UID)}.Consumer()] = true
			}
		}
		for _, n := range s.ssn.Nodes {
			for _, t := range n.Tasks {
				add(t)
			}
		}
		for _, j := range s.ssn.Jobs {
			for _, t := range j.Tasks {
				add(t)
			}
		}
	}
	return s.live[consumer]
}

// Listed returns a pod the node's KCNR lists on a NIC the hold keeps that
// is neither one of the hold's victims nor a held pod ("" when there is
// none): a rebind hold's pods wait until the node agent has dropped such a
// listing (a pod gone, which the KCNR still shows for its lag) before they
// are bound there.
func (s *SessionState) Listed(h *preemption.Hold) string {
	return h.Listed(s.fabric)
}
