package topologypreempt

import (
	"sort"
	"strings"

	schedulingv1beta1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"
	"volcano.sh/volcano/pkg/scheduler/api"

	"github.com/rdmatopo/rdmatopo/core/ledger"
	"github.com/rdmatopo/rdmatopo/core/preemption"
	"github.com/rdmatopo/rdmatopo/core/topology"
)

// gangPluginName is Volcano's gang plugin, whose preemptable and
// reclaimable vetoes are left out (see policy.allowed).
const gangPluginName = "gang"

// victim is a running pod that may be evicted.
type victim struct {
	task *api.TaskInfo
	job  *api.JobInfo
	// res is the pod's NIC reservation (hasRes false for a pod without
	// RDMA, evicted only with its whole job).
	res    ledger.Reservation
	hasRes bool
	// leaves are the leaves of the pod's NICs.
	leaves []topology.S0ID
	// prio is the pod's priority: the higher of its job's and its own.
	prio int32
	// start is when the pod started (Unix seconds; creation when unknown).
	start int64
}

func (v *victim) name() string { return v.task.Namespace + "/" + v.task.Name }

// victimJob is a job with pods that may be evicted.
type victimJob struct {
	job *api.JobInfo
	// bound are the job's running pods, youngest first.
	bound []*victim
	// wholeOK is true when every bound pod may be evicted (the job can be
	// evicted whole).
	wholeOK bool
	// slack is how many pods the job can lose and keep minMember.
	slack int
	// podOK marks the bound pods that may be evicted.
	podOK map[api.TaskID]bool
}

// candidates returns, by job UID, the jobs whose running pods the gang
// may evict: in the queues the policy allows, of a priority it allows
// (strictly lower for preempt), preemptable (the pod's and its PodGroup's
// volcano.sh/preemptable), allowed by the session's vetoes (policy.allowed),
// not being placed in this session. A job with a pod that may not go is
// never evicted whole.
func (r *run) candidates(job *api.JobInfo, preemptor *api.TaskInfo) map[api.JobID]*victimJob {
	byJob := map[api.JobID]*victimJob{}
	ids := make([]string, 0, len(r.ssn.Jobs))
	for id := range r.ssn.Jobs {
		ids = append(ids, string(id))
	}
	sort.Strings(ids)
	for _, id := range ids {
		vj := r.ssn.Jobs[api.JobID(id)]
		if vj.UID == job.UID || len(vj.TaskStatusIndex[api.Binding])+len(vj.TaskStatusIndex[api.Allocated])+len(vj.TaskStatusIndex[api.Pipelined]) > 0 {
			continue
		}
		if !r.policy.queueAllows(r.ssn, job, vj) {
			continue
		}
		if !jobPreemptable(vj) {
			continue
		}
		// The job's pods the policy asks the vetoes about; a job with none
		// gives no victims, and its pods are not read further.
		var asked []*api.TaskInfo
		for _, t := range vj.Tasks {
			// TaskInfo.Preemptable is Volcano's reading of the pod's
			// volcano.sh/preemptable (annotation, else label).
			if bound(t) && t.Preemptable && r.policy.priorityAllows(max(vj.Priority, t.Priority), job.Priority) {
				asked = append(asked, t)
			}
		}
		if len(asked) == 0 {
			continue
		}
		c := &victimJob{job: vj, wholeOK: true, podOK: map[api.TaskID]bool{},
			slack: max(0, int(vj.ReadyTaskNum())-int(vj.MinAvailable))}
		for _, t := range vj.Tasks {
			if !bound(t) {
				continue
			}
			v := &victim{task: t, job: vj, prio: max(vj.Priority, t.Priority), start: startOf(t)}
			if rp, ok := r.reservationOf(t.UID); ok && rp.Res.Node == t.NodeName {
				v.res, v.hasRes = rp.Res, true
				v.leaves = rp.Leaves
			}
			c.bound = append(c.bound, v)
		}
		// Asked per job: a cumulative veto (proportion's) judges each job
		// on its own here, and every chosen set again as a whole
		// (searcher.allowed).
		allowed := map[api.TaskID]bool{}
		for _, t := range r.policy.allowed(r.ssn, preemptor, asked) {
			allowed[t.UID] = true
		}
		for _, v := range c.bound {
			if allowed[v.task.UID] {
				c.podOK[v.task.UID] = true
			} else {
				c.wholeOK = false
			}
		}
		if len(c.podOK) == 0 {
			continue
		}
		sort.Slice(c.bound, func(i, j int) bool {
			if c.bound[i].start != c.bound[j].start {
				return c.bound[i].start > c.bound[j].start
			}
			return c.bound[i].name() < c.bound[j].name()
		})
		byJob[vj.UID] = c
	}
	return byJob
}

// bound reports a running pod: one a victim may be.
func bound(t *api.TaskInfo) bool { return t.Status == api.Running || t.Status == api.Bound }

// jobPreemptable reports whether a job's PodGroup lets its pods be
// victims: not when its volcano.sh/preemptable annotation (else label)
// says false, as Volcano's JobInfo.Preemptable reads it. Volcano reads a
// PodGroup that names neither as not preemptable too, which would make
// every job immune, so only a PodGroup that names the key counts.
func jobPreemptable(job *api.JobInfo) bool {
	pg := job.PodGroup
	if pg == nil {
		return true
	}
	_, ann := pg.Annotations[schedulingv1beta1.PodPreemptable]
	_, label := pg.Labels[schedulingv1beta1.PodPreemptable]
	return !(ann || label) || job.Preemptable
}

// startOf is when a pod started, in Unix seconds (its creation when it has
// no start time).
func startOf(t *api.TaskInfo) int64 {
	if t.Pod == nil {
		return 0
	}
	if t.Pod.Status.StartTime != nil {
		return t.Pod.Status.StartTime.Unix()
	}
	return t.Pod.CreationTimestamp.Unix()
}

// unit is what is evicted together: one pod beyond its job's minMember, or
// a whole job.
type unit struct {
	job     api.JobID
	whole   bool
	victims []*victim
}

// cost orders sets of evictions (preemption.Cost).
type cost = preemption.Cost

// costOf is the cost of evicting the union of units' victims.
func costOf(units []*unit) cost {
	var c cost
	var names []string
	for _, v := range union(units) {
		c.Pods++
		c.Prio += int64(v.prio)
		c.Start += v.start
		names = append(names, v.name())
	}
	sort.Strings(names)
	c.Names = strings.Join(names, ",")
	return c
}

// union lists the victims of units once each, in order.
func union(units []*unit) []*victim {
	seen := map[api.TaskID]bool{}
	var out []*victim
	for _, u := range units {
		for _, v := range u.victims {
			if !seen[v.task.UID] {
				seen[v.task.UID] = true
				out = append(out, v)
			}
		}
	}
	return out
}

// unitsIn builds the units of a scope: the candidates holding NICs there
// (in), grouped per job into single pods while the job keeps minMember,
// and the job whole.
func unitsIn(jobs map[api.JobID]*victimJob, in func(*victim) bool) []*unit {
	ids := make([]string, 0, len(jobs))
	for id := range jobs {
		ids = append(ids, string(id))
	}
	sort.Strings(ids)
	var out []*unit
	for _, id := range ids {
		c := jobs[api.JobID(id)]
		var inScope []*victim
		for _, v := range c.bound {
			if v.hasRes && in(v) {
				inScope = append(inScope, v)
			}
		}
		if len(inScope) == 0 {
			continue
		}
		singles := 0
		for _, v := range inScope {
			if singles == c.slack {
				break
			}
			if c.podOK[v.task.UID] {
				out = append(out, &unit{job: c.job.UID, victims: []*victim{v}})
				singles++
			}
		}
		if c.wholeOK && singles < len(inScope) {
			out = append(out, &unit{job: c.job.UID, whole: true, victims: c.bound})
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return costOf(out[i : i+1]).Less(costOf(out[j : j+1])) })
	return out
}
