package preemption

import (
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/rdmatopo/rdmatopo/core/placement"
	"github.com/rdmatopo/rdmatopo/core/topology"
)

// Timeout is how long a preempting gang's hold lasts without the gang
// binding: long enough for evicted pods to terminate (their grace period),
// short enough that a plan that cannot be realized does not keep NICs idle.
const Timeout = 5 * time.Minute

// Resources is what a task needs on its node: milli-CPUs, memory in bytes
// and scalar resources (GPUs, NICs, ...) by name, as the scheduler counts
// a pod's requests.
type Resources struct {
	MilliCPU float64
	Memory   float64
	Scalars  map[string]float64
}

// HoldTask is one task a hold keeps resources for, and where it goes.
type HoldTask struct {
	// UID is the task's pod UID.
	UID string
	// Name is "namespace/name", for messages.
	Name string
	Node string
	// RDMA is true for a task requesting RDMA; Assignment is then its
	// planned NICs.
	RDMA       bool
	Assignment placement.Assignment
	// Resreq is what the task needs on Node.
	Resreq Resources
	// HostPorts are the container ports the task's pod binds on the host
	// (HostPortsOf): the hold keeps them on Node as it keeps Resreq.
	HostPorts []v1.ContainerPort
}

// Hold is what a gang keeps while it waits to be allocated: a preempting
// gang while its victims terminate, or the failed binds of a partial gang.
type Hold struct {
	// Job is the job's UID; Name its "namespace/name".
	Job   string
	Name  string
	Tasks []HoldTask
	// Victims are the evicted pods, "namespace/name".
	Victims []string
	// Since is when the victims were evicted (the runtime's clock).
	Since time.Time
	// Rebind marks the hold of a partial gang's failed binds: the gang's
	// other pods are bound, it evicted nobody for Tasks, and Tasks go back
	// to the slots their binds failed on.
	Rebind bool
}

// Owns reports whether a KCNR consumer ("namespace/name/uid") is one of the
// hold's victims or the pods it keeps resources for.
func (h *Hold) Owns(consumer string) bool {
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

// ListedOther returns a KCNR consumer the node lists on nic that the hold
// does not own (Owns); "" when there is none, or when nic has several
// units and the KCNR shows one free (other pods share it). A node agent that lists
// another consumer there has given the NIC away, or not yet taken it back
// from a pod gone since the hold was made: either way the held plan no
// longer matches the node.
func (h *Hold) ListedOther(f *topology.Fabric, node string, nic topology.NICID) string {
	n, ok := f.Node(node)
	if !ok {
		return ""
	}
	for _, z := range n.Zones {
		for _, x := range z.NICs {
			if x.ID != nic || x.Units > 1 && x.FreeUnits > 0 {
				continue
			}
			for _, c := range x.Consumers {
				if !h.Owns(c) {
					return c
				}
			}
		}
	}
	return ""
}

// View is one session's view of the holds: those applied to its planner
// state, those taken off it for their gang to be allocated, and the jobs
// allowed to pipeline. It is safe for concurrent use (the session's
// predicates read it on many goroutines).
type View struct {
	st         *placement.State
	mu         sync.Mutex
	applied    map[string]*Hold
	taken      map[string]*Hold
	pipelineOK map[string]bool
}

// NewView returns the view of a session whose planner state is st, before
// any hold is applied.
func NewView(st *placement.State) *View {
	return &View{st: st, applied: map[string]*Hold{}, taken: map[string]*Hold{}, pipelineOK: map[string]bool{}}
}

// Apply keeps the hold's NICs (and the GPUs and CPUs of its RDMA tasks) in
// the planner state, for no other gang to be planned onto them.
func (v *View) Apply(h *Hold) {
	for _, t := range h.Tasks {
		if t.RDMA {
			v.st.AddHold(t.UID, t.Assignment)
		}
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	v.applied[h.Job] = h
}

// Take removes the job's hold from the planner state, so its NICs can be
// allocated to the gang's tasks, and returns it (nil when none is applied).
func (v *View) Take(job string) *Hold {
	v.mu.Lock()
	h := v.applied[job]
	delete(v.applied, job)
	if h != nil {
		v.taken[job] = h
	}
	v.mu.Unlock()
	if h == nil {
		return nil
	}
	for _, t := range h.Tasks {
		if t.RDMA {
			v.st.RemoveHold(t.UID, t.Assignment)
		}
	}
	return h
}

// Taken returns the job's hold taken off the planner state in this
// session, if any.
func (v *View) Taken(job string) (*Hold, bool) {
	v.mu.Lock()
	defer v.mu.Unlock()
	h, ok := v.taken[job]
	return h, ok
}

// Applied returns the holds applied, by job name.
func (v *View) Applied() []*Hold {
	v.mu.Lock()
	defer v.mu.Unlock()
	out := make([]*Hold, 0, len(v.applied))
	for _, h := range v.applied {
		out = append(out, h)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// KeptOn returns the tasks the applied holds of jobs other than job keep on
// node, and the first of those holds' jobs by name ("" when none).
func (v *View) KeptOn(job, node string) ([]HoldTask, string) {
	v.mu.Lock()
	defer v.mu.Unlock()
	var out []HoldTask
	first := ""
	for _, h := range v.applied {
		if h.Job == job {
			continue
		}
		for _, t := range h.Tasks {
			if t.Node != node {
				continue
			}
			out = append(out, t)
			if first == "" || h.Name < first {
				first = h.Name
			}
		}
	}
	return out, first
}

// AllowPipeline lets (ok) or stops letting the job's tasks be pipelined.
func (v *View) AllowPipeline(job string, ok bool) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if ok {
		v.pipelineOK[job] = true
	} else {
		delete(v.pipelineOK, job)
	}
}

// PipelineAllowed reports whether AllowPipeline lets the job pipeline.
func (v *View) PipelineAllowed(job string) bool {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.pipelineOK[job]
}

// Listed returns a consumer the nodes' KCNRs list on a NIC the hold keeps
// that the hold does not own ("" when there is none): a rebind hold's pods
// wait until the node agent has dropped such a listing (a pod gone, which
// the KCNR still shows for its lag) before they are bound there.
func (h *Hold) Listed(f *topology.Fabric) string {
	for _, t := range h.Tasks {
		if !t.RDMA {
			continue
		}
		for _, nic := range t.Assignment.NICs() {
			if c := h.ListedOther(f, t.Node, nic); c != "" {
				return c
			}
		}
	}
	return ""
}
