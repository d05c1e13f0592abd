package rdmatopology

// Holds: what the topology-preempt action keeps for a preempting gang
// between the session that evicted its victims and the session the gang
// binds in; and what a partial gang keeps of the places its failed binds
// leave, until topology-allocate places the pods there again (rebind
// holds, rebind.go).
//
// Volcano forgets pipelined tasks when a session closes, and reconcile
// releases the NICs of pods that are pending again. A hold outlives both:
// it lives in the Runtime, and every session applies it to the free view
// (State) when it opens, so no other gang is planned onto the NICs, and the
// predicate refuses other pods the GPUs and CPUs it keeps on its nodes. The
// action realizes a hold (allocates the gang where it was planned) once its
// nodes have the idle resources, or drops it. A hold is dropped when the
// gang's job is gone, when one of its pods was placed otherwise, when a
// NIC it keeps is held by another pod, when a node it uses left the
// session, or after preemption.Timeout; a scheduler restart forgets every
// hold (the gang then competes by priority like any other). The holds
// themselves, and each session's view of them, are package
// core/preemption's; this file checks them against the session.

import (
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
	"volcano.sh/volcano/pkg/scheduler/api"

	"github.com/rdmatopo/rdmatopo/core/ledger"
	"github.com/rdmatopo/rdmatopo/core/placement"
	"github.com/rdmatopo/rdmatopo/core/preemption"
)

// applyHolds checks every hold of the runtime against the session and
// applies those that still stand to the free view. It runs when the
// session opens, after reconcile.
func (s *SessionState) applyHolds() {
	now := s.rt.Now()
	s.rt.preemption.Holds.Retain(func(_ string, h *preemption.Hold) bool {
		if why := s.holdBroken(h, now); why != "" {
			klog.InfoS("Dropped NIC hold of a preempting gang", "job", h.Name, "reason", why, "victims", len(h.Victims))
			return false
		}
		s.holds.Apply(h)
		klog.V(3).InfoS("Holding NICs for a preempting gang", "job", h.Name, "tasks", len(h.Tasks), "since", h.Since)
		return true
	})
}

// holdBroken says why a hold no longer stands ("" when it does).
func (s *SessionState) holdBroken(h *preemption.Hold, now time.Time) string {
	job := s.ssn.Jobs[api.JobID(h.Job)]
	if job == nil {
		return "job is gone"
	}
	if now.Sub(h.Since) > preemption.Timeout {
		return fmt.Sprintf("gang did not bind within %s", preemption.Timeout)
	}
	for _, t := range h.Tasks {
		task := job.Tasks[api.TaskID(t.UID)]
		if task == nil {
			return "pod " + t.Name + " is gone"
		}
		if task.Status != api.Pending {
			return "pod " + t.Name + " was placed otherwise"
		}
		if _, ok := s.ssn.Nodes[t.Node]; !ok {
			return "node " + t.Node + " left the session"
		}
		if !t.RDMA {
			continue
		}
		for _, nic := range t.Assignment.NICs() {
			if why := s.nicFailed(t.Node, nic, now); why != "" {
				return why
			}
			if holder, taken := s.state.Taken(t.Node, nic, ""); taken {
				return fmt.Sprintf("NIC %s on %s is held by pod %s (no unit left)", nic, t.Node, holder)
			}
			if c := h.ListedOther(s.fabric, t.Node, nic); c != "" && (!h.Rebind || s.livePod(c)) {
				// A rebind hold waits out the listing of a pod that is gone
				// (Listed); a live pod listed there has the NIC.
				return fmt.Sprintf("NIC %s on %s is listed by the node's KCNR for %s", nic, t.Node, c)
			}
		}
	}
	return ""
}

// appliedHolds returns the holds applied in this session, by job name.
func (s *SessionState) appliedHolds() []*preemption.Hold {
	return s.holds.Applied()
}

// takeHold removes the job's hold from the free view, so its NICs can be
// allocated to the gang's tasks, and returns it. The hold stays recorded
// until dropHold.
func (s *SessionState) takeHold(job api.JobID) *preemption.Hold {
	return s.holds.Take(string(job))
}

// dropHold forgets the job's hold (bound, or abandoned), releasing what it
// keeps in this session's free view.
func (s *SessionState) dropHold(job api.JobID, why string) {
	if h := s.takeHold(job); h != nil {
		klog.V(3).InfoS("Released NIC hold of a preempting gang", "job", h.Name, "reason", why)
	}
	s.rt.preemption.Holds.Remove(string(job))
}

// ErrReasonReplacementRoom is the predicate's reason on a node whose free
// resources are kept for the replacement of a pod another running gang
// lost; the gang's name follows.
const ErrReasonReplacementRoom = "resources on the node are kept for the replacement of a lost pod of running gang "

// RoomKeptOn returns the GPUs and CPUs that the room kept for the lost
// pods of gangs other than job keeps on node (nil when none does) and the
// first of those gangs by name: what a pod of job may not take there,
// beside the node's idle resources (the free view keeps it zone by zone,
// but not against what pods without RDMA took since the session opened).
func (s *SessionState) RoomKeptOn(job api.JobID, node string) (*api.Resource, string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var kept *api.Resource
	var first string
	for other, rooms := range s.replaceHeld {
		if other == job {
			continue
		}
		for _, r := range rooms {
			if r.a.Node != node {
				continue
			}
			if kept == nil {
				kept = api.EmptyResource()
			}
			for _, z := range r.a.Zones {
				kept.MilliCPU += float64(z.CPUMilli)
				if z.GPU > 0 {
					kept.AddScalar(v1.ResourceName(s.args.GPUResource), float64(z.GPU*1000))
				}
			}
			name := string(other)
			if j := s.ssn.Jobs[other]; j != nil {
				name = j.Namespace + "/" + j.Name
			}
			if first == "" || name < first {
				first = name
			}
		}
	}
	return kept, first
}

// keptOn returns what the holds of gangs other than task's job keep on
// node (nil when none does), the first of those gangs by name, and whether
// the task's host ports are free beside the host ports they keep there
// (preemption.HostPortsFree): what a pod of the job may not take there,
// beside the node's future idle resources.
func (s *SessionState) keptOn(task *api.TaskInfo, node string) (*api.Resource, string, bool) {
	tasks, first := s.holds.KeptOn(string(task.Job), node)
	if len(tasks) == 0 {
		return nil, "", true
	}
	kept := api.EmptyResource()
	for _, t := range tasks {
		kept.Add(resourceOf(t.Resreq))
	}
	return kept, first, preemption.HostPortsFree(task.Pod, tasks)
}

// holdTaskOf is the hold's entry of a task going to node (a the NICs
// planned for it when it requests RDMA).
func holdTaskOf(task *api.TaskInfo, node string, a *placement.Assignment) preemption.HoldTask {
	t := preemption.HoldTask{UID: string(task.UID), Name: task.Namespace + "/" + task.Name, Node: node, Resreq: resourcesOf(task.InitResreq),
		HostPorts: preemption.HostPortsOf(task.Pod)}
	if a != nil {
		t.RDMA, t.Assignment = true, *a
	}
	return t
}

// resourcesOf is a Volcano resource request as a hold keeps it.
func resourcesOf(r *api.Resource) preemption.Resources {
	out := preemption.Resources{MilliCPU: r.MilliCPU, Memory: r.Memory}
	if len(r.ScalarResources) > 0 {
		out.Scalars = make(map[string]float64, len(r.ScalarResources))
		for name, v := range r.ScalarResources {
			out.Scalars[string(name)] = v
		}
	}
	return out
}

// resourceOf is what a hold keeps as a Volcano resource.
func resourceOf(r preemption.Resources) *api.Resource {
	out := &api.Resource{MilliCPU: r.MilliCPU, Memory: r.Memory}
	if len(r.Scalars) > 0 {
		out.ScalarResources = make(map[v1.ResourceName]float64, len(r.Scalars))
		for name, v := range r.Scalars {
			out.ScalarResources[v1.ResourceName(name)] = v
		}
	}
	return out
}

// reservation returns the ledger's reservation of a pod, if any.
func (s *SessionState) reservation(uid api.TaskID) (ledger.Reservation, bool) {
	return s.rt.Ledger.Get(string(uid))
}

// Now is the runtime's current time (the simulator's clock in simulate).
func (s *SessionState) Now() time.Time {
	return s.rt.Now()
}
