// Holds: what the topology-preempt action keeps for a preempting gang
// between the session that evicted its victims and the session the gang
// binds in; and what a partial gang keeps of the slots its failed binds
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
// session, or after HoldTimeout; a scheduler restart forgets every hold
// (the gang then competes by priority like any other).

package rdmatopology

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"k8s.io/klog/v2"
	"volcano.sh/volcano/pkg/scheduler/api"

	"github.com/rdmatopo/rdmatopo/framework/ledger"
	"github.com/rdmatopo/rdmatopo/framework/placement"
	"github.com/rdmatopo/rdmatopo/framework/topology"
)

// HoldTimeout is how long a preempting gang's hold lasts without the gang
// binding: long enough for evicted pods to terminate (their grace period),
// short enough that a plan that cannot be realized does not keep NICs idle.
const HoldTimeout = 5 * time.Minute

// holdUIDPrefix prefixes the holder name of a held NIC in the free view.
const holdUIDPrefix = "hold/"

// HeldTask is one task of a preempting gang and where it goes.
type HeldTask struct {
	UID api.TaskID
	// Name is "namespace/name", for messages.
	Name string
	Node string
	// RDMA is true for a task requesting RDMA; Assignment is then its
	// planned NICs.
	RDMA       bool
	Assignment placement.Assignment
	// Resreq is what the task needs on Node (its InitResreq).
	Resreq *api.Resource
}

// Hold is what a preempting gang keeps while its victims terminate.
type Hold struct {
	Job api.JobID
	// Name is the job's "namespace/name".
	Name  string
	Tasks []HeldTask
	// Victims are the evicted pods, "namespace/name".
	Victims []string
	// Since is when the victims were evicted (the runtime's clock).
	Since time.Time
	// Rebind marks the hold of a partial gang's failed binds (rebind.go):
	// the gang's other pods are bound, it evicted nobody for Tasks, and
	// Tasks go back to the slots their binds failed on.
	Rebind bool
}

// sessionHolds is a session's view of the holds: those applied to its
// free view, and the jobs the action lets pipeline.
type sessionHolds struct {
	mu         sync.Mutex
	applied    map[api.JobID]*Hold
	pipelineOK map[api.JobID]bool
	// taken are the holds taken off the free view in this session, for
	// their gang's tasks to be allocated (TakeHold).
	taken map[api.JobID]*Hold
}

// newSessionHolds returns a session's view before any hold is applied.
func newSessionHolds() *sessionHolds {
	return &sessionHolds{applied: map[api.JobID]*Hold{}, pipelineOK: map[api.JobID]bool{}, taken: map[api.JobID]*Hold{}}
}

// applyHolds checks every hold of the runtime against the session and
// applies those that still stand to the free view. It runs when the
// session opens, after reconcile.
func (s *Session) applyHolds() {
	st := s.holds
	now := s.rt.Now()
	s.rt.holds.retain(func(_ api.JobID, h *Hold) bool {
		if why := s.holdBroken(h, now); why != "" {
			klog.InfoS("Dropped NIC hold of a preempting gang", "job", h.Name, "reason", why, "victims", len(h.Victims))
			return false
		}
		for _, t := range h.Tasks {
			if t.RDMA {
				s.State.Apply(holdUIDPrefix+string(t.UID), t.Assignment)
			}
		}
		st.mu.Lock()
		st.applied[h.Job] = h
		st.mu.Unlock()
		klog.V(3).InfoS("Holding NICs for a preempting gang", "job", h.Name, "tasks", len(h.Tasks), "since", h.Since)
		return true
	})
}

// holdBroken says why a hold no longer stands ("" when it does).
func (s *Session) holdBroken(h *Hold, now time.Time) string {
	job := s.ssn.Jobs[h.Job]
	if job == nil {
		return "job is gone"
	}
	if now.Sub(h.Since) > HoldTimeout {
		return fmt.Sprintf("gang did not bind within %s", HoldTimeout)
	}
	for _, t := range h.Tasks {
		task := job.Tasks[t.UID]
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
			if holder, held := s.State.HolderOf(t.Node, nic); held {
				return fmt.Sprintf("NIC %s on %s is held by pod %s", nic, t.Node, holder)
			}
			if c := listedFor(s.Fabric, t.Node, nic, h); c != "" && (!h.Rebind || s.livePod(c)) {
				// A rebind hold waits out the listing of a pod that is gone
				// (Listed); a live pod listed there has the NIC.
				return fmt.Sprintf("NIC %s on %s is listed by the node's KCNR for %s", nic, t.Node, c)
			}
		}
	}
	return ""
}

// listedFor returns a KCNR consumer the node lists on nic that is neither
// one of the hold's victims (whose listing outlives them by the KCNR's lag)
// nor one of the held pods; "" when there is none. A node agent that lists
// another consumer there has given the NIC away, or not yet taken it back
// from a pod gone since the preemption was planned: either way the held
// plan no longer matches the node.
func listedFor(f *topology.Fabric, node string, nic topology.NICID, h *Hold) string {
	n, ok := f.Node(node)
	if !ok {
		return ""
	}
	for _, z := range n.Zones {
		for _, x := range z.NICs {
			if x.ID != nic {
				continue
			}
			for _, c := range x.Consumers {
				if !holdOwns(h, c) {
					return c
				}
			}
		}
	}
	return ""
}

// holdOwns reports whether a KCNR consumer ("namespace/name/uid") is one of
// the hold's victims or held pods.
func holdOwns(h *Hold, consumer string) bool {
	i := strings.LastIndex(consumer, "/")
	if i < 0 {
		return false
	}
	pod := consumer[:i]
	if slices.Contains(h.Victims, pod) {
		return true
	}
	for _, t := range h.Tasks {
		if t.Name == pod {
			return true
		}
	}
	return false
}

// Hold records h in the runtime, to be applied from the next session on
// (in this one, the gang's pipelined tasks hold the NICs). A hold already
// recorded for the job is replaced.
func (s *Session) Hold(h *Hold) {
	s.rt.holds.put(h.Job, h)
}

// Holds returns the holds applied in this session, by job name.
func (s *Session) Holds() []*Hold {
	st := s.holds
	st.mu.Lock()
	defer st.mu.Unlock()
	out := make([]*Hold, 0, len(st.applied))
	for _, h := range st.applied {
		out = append(out, h)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// HasHold reports whether the runtime holds resources for the job (applied
// in this session or recorded in it).
func (s *Session) HasHold(job api.JobID) bool {
	return s.rt.holds.has(job)
}

// TakeHold removes the job's hold from the free view, so its NICs can be
// allocated to the gang's tasks, and returns it. The hold stays recorded
// until DropHold.
func (s *Session) TakeHold(job api.JobID) *Hold {
	st := s.holds
	st.mu.Lock()
	h := st.applied[job]
	delete(st.applied, job)
	if h != nil {
		st.taken[job] = h
	}
	st.mu.Unlock()
	if h == nil {
		return nil
	}
	for _, t := range h.Tasks {
		if t.RDMA {
			s.State.Unapply(holdUIDPrefix+string(t.UID), t.Assignment)
		}
	}
	return h
}

// DropHold forgets the job's hold (bound, or abandoned), releasing what it
// keeps in this session's free view.
func (s *Session) DropHold(job api.JobID, why string) {
	if h := s.TakeHold(job); h != nil {
		klog.V(3).InfoS("Released NIC hold of a preempting gang", "job", h.Name, "reason", why)
	}
	s.rt.holds.remove(job)
}

// AllowPipeline lets (ok) or stops letting the job's tasks be pipelined:
// the plugin otherwise vetoes pipelining an RDMA gang, which must be whole.
// The topology-preempt action allows it for the gang it pipelines onto the
// resources its victims release.
func (s *Session) AllowPipeline(job api.JobID, ok bool) {
	st := s.holds
	st.mu.Lock()
	defer st.mu.Unlock()
	if ok {
		st.pipelineOK[job] = true
	} else {
		delete(st.pipelineOK, job)
	}
}

func (s *Session) pipelineAllowed(job api.JobID) bool {
	st := s.holds
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.pipelineOK[job]
}

// holdPredicate refuses a task of another job on a node where an applied
// hold keeps resources the task would need: what the node will have free
// once its releasing pods are gone, less what the holds keep there.
func (s *Session) holdPredicate(task *api.TaskInfo, node *api.NodeInfo) error {
	kept, holder := s.HeldOn(task.Job, node.Name)
	if kept == nil || task.InitResreq == nil {
		return nil
	}
	need := task.InitResreq.Clone().Add(kept)
	if need.LessEqual(node.FutureIdle(), api.Zero) {
		return nil
	}
	return s.fitError(task, node, "resources on the node are held for preempting gang "+holder)
}

// HeldOn returns what the holds of gangs other than job keep on node (nil
// when none does) and the first of those gangs by name: what a pod of job
// may not take there, beside the node's future idle resources.
func (s *Session) HeldOn(job api.JobID, node string) (*api.Resource, string) {
	st := s.holds
	st.mu.Lock()
	defer st.mu.Unlock()
	var kept *api.Resource
	first := ""
	for _, h := range st.applied {
		if h.Job == job {
			continue
		}
		for _, t := range h.Tasks {
			if t.Node != node || t.Resreq == nil {
				continue
			}
			if kept == nil {
				kept = api.EmptyResource()
			}
			kept.Add(t.Resreq)
			if first == "" || h.Name < first {
				first = h.Name
			}
		}
	}
	return kept, first
}

// predicateWithHolds is the plugin's predicate: holds first, then NIC fit.
func (s *Session) predicateWithHolds(task *api.TaskInfo, node *api.NodeInfo) error {
	if err := s.holdPredicate(task, node); err != nil {
		return err
	}
	return s.predicate(task, node)
}

// Reservation returns the ledger's reservation of a pod, if any.
func (s *Session) Reservation(uid api.TaskID) (ledger.Reservation, bool) {
	return s.rt.Ledger.Get(string(uid))
}

// Reservations returns every reservation in the ledger, sorted by pod UID.
func (s *Session) Reservations() []ledger.Reservation {
	return s.rt.Ledger.All()
}

// Now is the runtime's current time (the simulator's clock in simulate).
func (s *Session) Now() time.Time {
	return s.rt.Now()
}
