package topologypreempt

import (
	"github.com/prometheus/client_golang/prometheus"
	"volcano.sh/volcano/pkg/scheduler/api"
	"volcano.sh/volcano/pkg/scheduler/conf"
	"volcano.sh/volcano/pkg/scheduler/framework"

	"github.com/rdmatopo/rdmatopo/plugins/rdmatopology/schedmetrics"
)

// ReclaimActionName is the name of topology-reclaim in
// volcano-scheduler.conf (registered by actions/topologyreclaim, which runs
// this package's search with the reclaim policy).
const ReclaimActionName = "topology-reclaim"

// Event reasons of topology-reclaim, the counterparts of ReasonPreempting
// and ReasonPreempted.
const (
	// ReasonReclaiming is the Event on the reclaiming gang's PodGroup.
	ReasonReclaiming = "TopologyReclaiming"
	// ReasonReclaimed is the Event on each victim's PodGroup.
	ReasonReclaimed = "TopologyReclaimed"
)

// policy is what tells topology-preempt and topology-reclaim apart; the
// search, the futility rule, holds and Events are the same code.
//
// As Volcano's preempt does, topology-preempt takes victims in the
// preemptor's queue only, of strictly lower priority, through the
// session's preemptable vetoes. As Volcano's reclaim does, topology-reclaim
// takes victims in other queues only, from queues that are reclaimable
// (spec.reclaimable not false), whatever their priority, through the
// session's reclaimable vetoes (proportion's: only from a queue above its
// deserved share), for a gang whose own queue is not overused and may
// take the gang's tasks (Overused, Allocatable and Preemptive of the
// session).
type policy struct {
	// action is the action's name (in eviction reasons and logs).
	action string
	// otherQueues selects reclaim: victims in other, reclaimable queues.
	otherQueues bool
	// acting and victim are the Event reasons on the gang's PodGroup and
	// on each victim's.
	acting, victim string
	// verb says what happened to a victim, in its eviction reason.
	verb string
	// gangs and pods count the gangs that evicted and the pods evicted.
	gangs, pods prometheus.Counter
}

// The two policies, each with its counters on the scheduler's Prometheus
// endpoint (schedmetrics).
var (
	preemptPolicy = &policy{action: ActionName, acting: ReasonPreempting, victim: ReasonPreempted, verb: "preempted",
		gangs: schedmetrics.Counter("preemptions_total", "RDMA gangs for which topology-preempt evicted lower-priority pods."),
		pods:  schedmetrics.Counter("evicted_pods_total", "Pods evicted by topology-preempt to place higher-priority RDMA gangs.")}
	reclaimPolicy = &policy{action: ReclaimActionName, otherQueues: true, acting: ReasonReclaiming, victim: ReasonReclaimed,
		verb:  "reclaimed",
		gangs: schedmetrics.Counter("reclaims_total", "RDMA gangs for which topology-reclaim evicted pods of other queues."),
		pods:  schedmetrics.Counter("reclaimed_pods_total", "Pods of other queues evicted by topology-reclaim to place RDMA gangs.")}
)

// queueAllows reports whether the policy may take victims of job vj for
// the gang job: the same queue for preempt; another, reclaimable queue for
// reclaim (QueueInfo.Reclaimable, as Volcano's reclaim reads it).
func (p *policy) queueAllows(ssn *framework.Session, job, vj *api.JobInfo) bool {
	if !p.otherQueues {
		return vj.Queue == job.Queue
	}
	if vj.Queue == job.Queue {
		return false
	}
	q, ok := ssn.Queues[vj.Queue]
	return ok && q.Reclaimable()
}

// priorityAllows reports whether a victim of priority prio may go for a
// gang of priority gang: strictly lower for preempt; any for reclaim,
// which takes back a queue's share rather than ranking jobs (the session's
// reclaimable vetoes still apply).
func (p *policy) priorityAllows(prio, gang int32) bool {
	return p.otherQueues || prio < gang
}

// gangMayAct reports whether the gang's queue may take resources from
// others: always for preempt (its victims are its queue's own); for
// reclaim, as Volcano's reclaim requires, the queue is not overused and
// its vetoes let it take the gang's first task (Allocatable, Preemptive).
func (p *policy) gangMayAct(ssn *framework.Session, job *api.JobInfo, first *api.TaskInfo) bool {
	if !p.otherQueues {
		return true
	}
	q, ok := ssn.Queues[job.Queue]
	return ok && !ssn.Overused(q) && ssn.Allocatable(q, first) && ssn.Preemptive(q, first)
}

// allowed asks the session's vetoes which of tasks the preemptor may
// evict: ssn.Preemptable for preempt, ssn.Reclaimable for reclaim, with
// every enabled plugin of every tier consulted and the gang plugin's veto
// left out.
//
// The gang plugin refuses every victim that takes its job to minAvailable
// or below, so through it no whole gang is ever freed. These actions evict
// a job whole exactly when it would fall below minMember, which is what
// that veto protects against (a partial gang left running), so it does not
// apply; every other plugin enabled for the call does (priority,
// conformance, drf, proportion, tdm, pdb, extenders: whichever the conf
// enables). Volcano lets the first tier whose plugins return victims
// decide, so with the gang plugin out, a first tier's conformance would
// answer for reclaim and proportion, in a later tier, would never be
// asked; the session is therefore asked through one tier holding every
// plugin, so each enabled veto intersects (stricter than Volcano's tier
// order, never looser). The session answers through its own plugin
// functions; only the tiers are swapped for the call, so plugins this
// package does not know of still veto.
func (p *policy) allowed(ssn *framework.Session, preemptor *api.TaskInfo, tasks []*api.TaskInfo) []*api.TaskInfo {
	if len(tasks) == 0 {
		return nil
	}
	saved := ssn.Tiers
	var flat conf.Tier
	off := false
	for _, tier := range saved {
		for _, opt := range tier.Plugins {
			if opt.Name == gangPluginName {
				opt.EnabledPreemptable, opt.EnabledReclaimable = &off, &off
			}
			flat.Plugins = append(flat.Plugins, opt)
		}
	}
	ssn.Tiers = []conf.Tier{flat}
	defer func() { ssn.Tiers = saved }()
	if p.otherQueues {
		return ssn.Reclaimable(preemptor, tasks)
	}
	return ssn.Preemptable(preemptor, tasks)
}

// allowsAll reports whether the session's vetoes let the preemptor evict
// every one of tasks together (proportion's veto is cumulative: each
// victim counts against its queue's share).
func (p *policy) allowsAll(ssn *framework.Session, preemptor *api.TaskInfo, tasks []*api.TaskInfo) bool {
	return len(p.allowed(ssn, preemptor, tasks)) == len(tasks)
}
