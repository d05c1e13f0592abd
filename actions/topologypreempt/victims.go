package topologypreempt

import (
	"sort"
	"strings"

	"volcano.sh/volcano/pkg/scheduler/api"
	"volcano.sh/volcano/pkg/scheduler/conf"

	"github.com/rdmatopo/rdmatopo/framework/ledger"
	"github.com/rdmatopo/rdmatopo/framework/topology"
)

// gangPluginName is Volcano's gang plugin, whose preemptable veto is left
// out (see preemptable).
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
// may evict: strictly lower priority than the gang, allowed by the
// session's preemptable vetoes (without the gang plugin's), not being
// placed in this session.
func (r *run) candidates(job *api.JobInfo, preemptor *api.TaskInfo) map[api.JobID]*victimJob {
	fabric := r.topo.Fabric
	var all []*api.TaskInfo
	byJob := map[api.JobID]*victimJob{}
	for _, vj := range r.ssn.Jobs {
		if vj.UID == job.UID || len(vj.TaskStatusIndex[api.Binding])+len(vj.TaskStatusIndex[api.Allocated])+len(vj.TaskStatusIndex[api.Pipelined]) > 0 {
			continue
		}
		c := &victimJob{job: vj, wholeOK: true, podOK: map[api.TaskID]bool{},
			slack: max(0, int(vj.ReadyTaskNum())-int(vj.MinAvailable))}
		for _, t := range vj.Tasks {
			if t.Status != api.Running && t.Status != api.Bound {
				continue
			}
			v := &victim{task: t, job: vj, prio: max(vj.Priority, t.Priority), start: startOf(t)}
			if res, ok := r.topo.Reservation(t.UID); ok && res.Node == t.NodeName {
				v.res, v.hasRes = res, true
				v.leaves = fabric.NICLeaves(res.Node, res.NICs())
			}
			c.bound = append(c.bound, v)
			if v.prio < job.Priority {
				all = append(all, t)
			} else {
				c.wholeOK = false
			}
		}
		if len(c.bound) == 0 {
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
	allowed := map[api.TaskID]bool{}
	if len(all) > 0 {
		for _, t := range r.preemptable(preemptor, all) {
			allowed[t.UID] = true
		}
	}
	for id, c := range byJob {
		some := false
		for _, v := range c.bound {
			if allowed[v.task.UID] {
				c.podOK[v.task.UID] = true
				some = true
			} else {
				c.wholeOK = false
			}
		}
		if !some {
			delete(byJob, id)
		}
	}
	return byJob
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

// preemptable asks the session's preemptable functions which victims the
// preemptor may evict, with the gang plugin's veto left out.
//
// The gang plugin refuses every victim that takes its job to minAvailable
// or below, so through it no whole gang is ever freed. This action evicts
// a job whole exactly when it would fall below minMember, which is what
// that veto protects against (a partial gang left running), so the veto
// does not apply; the others (priority, conformance, any further plugin
// enabled for preemption) still do. The session answers through its tiers,
// so the gang plugin is disabled for preemption in a copy of the tiers for
// the call, rather than calling the other plugins' checks by hand, which
// would skip plugins this package does not know of.
func (r *run) preemptable(preemptor *api.TaskInfo, tasks []*api.TaskInfo) []*api.TaskInfo {
	saved := r.ssn.Tiers
	tiers := make([]conf.Tier, len(saved))
	off := false
	for i, tier := range saved {
		tiers[i].Plugins = append([]conf.PluginOption(nil), tier.Plugins...)
		for j := range tiers[i].Plugins {
			if tiers[i].Plugins[j].Name == gangPluginName {
				tiers[i].Plugins[j].EnabledPreemptable = &off
			}
		}
	}
	r.ssn.Tiers = tiers
	defer func() { r.ssn.Tiers = saved }()
	return r.ssn.Preemptable(preemptor, tasks)
}

// unit is what is evicted together: one pod beyond its job's minMember, or
// a whole job.
type unit struct {
	job     api.JobID
	whole   bool
	victims []*victim
}

// cost orders sets of evictions: fewer pods, then a lower sum of
// priorities, then younger pods (a larger sum of start times), then names.
type cost struct {
	pods  int
	prio  int64
	start int64
	names string
}

func (a cost) less(b cost) bool {
	if a.pods != b.pods {
		return a.pods < b.pods
	}
	if a.prio != b.prio {
		return a.prio < b.prio
	}
	if a.start != b.start {
		return a.start > b.start
	}
	return a.names < b.names
}

// costOf is the cost of evicting the union of units' victims.
func costOf(units []*unit) cost {
	var c cost
	var names []string
	for _, v := range union(units) {
		c.pods++
		c.prio += int64(v.prio)
		c.start += v.start
		names = append(names, v.name())
	}
	sort.Strings(names)
	c.names = strings.Join(names, ",")
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
	sort.SliceStable(out, func(i, j int) bool { return costOf(out[i : i+1]).less(costOf(out[j : j+1])) })
	return out
}
