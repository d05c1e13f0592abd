package topologyallocate

import (
	"sort"

	"k8s.io/klog/v2"
	"volcano.sh/volcano/pkg/scheduler/api"
	"volcano.sh/volcano/pkg/scheduler/framework"
	"volcano.sh/volcano/pkg/scheduler/util"

	"github.com/rdmatopo/rdmatopo/actions/internal/gangfit"
	"github.com/rdmatopo/rdmatopo/framework/step"
	"github.com/rdmatopo/rdmatopo/plugins/rdmatopology"
)

// nodeNames lists the session's nodes, made once per run.
func (r *run) nodeNames() []string {
	if r.names == nil {
		r.names = make([]string, 0, len(r.ssn.NodeList))
		for _, n := range r.ssn.NodeList {
			r.names = append(r.names, n.Name)
		}
	}
	return r.names
}

// allocateConfined gives its turn to a job whose pods request no RDMA NICs
// under a hard contract (rdmatopology.Session.Confine): its pending tasks
// are allocated as allocate does, but only on the nodes of one domain of
// the contract's tier, domain by domain until one makes the job ready.
// Only domains holding every node the job already has pods on are tried
// (its replacements and pods beyond minMember stay with it), those with
// too little idle room for the pods it still needs are skipped, and the
// fullest are tried first (allocate's binpack, by domain). A job no domain
// makes ready waits, the reason on its PodGroup; nothing is placed wider.
func (r *run) allocateConfined(queue *api.QueueInfo, job *api.JobInfo, tasks *util.PriorityQueue, c *rdmatopology.Confinement) {
	ssn := r.ssn
	var pending []*api.TaskInfo
	for !tasks.Empty() {
		pending = append(pending, tasks.Pop().(*api.TaskInfo))
	}
	held := map[string]bool{}
	for _, t := range job.Tasks {
		if t.NodeName != "" && api.AllocatedStatus(t.Status) {
			held[t.NodeName] = true
		}
	}
	need := api.EmptyResource()
	for i, t := range pending {
		if i > 0 && int32(i) >= job.MinAvailable-int32(job.ReadyTaskNum()) {
			break
		}
		need.Add(t.InitResreq)
	}
	type candidate struct {
		domain rdmatopology.Domain
		nodes  []*api.NodeInfo
		idle   *api.Resource
	}
	var cands []candidate
	for _, d := range c.Domains {
		cd := candidate{domain: d, idle: api.EmptyResource()}
		covered := 0
		for _, name := range d.Nodes {
			n, ok := ssn.Nodes[name]
			if !ok {
				continue
			}
			if held[name] {
				covered++
			}
			cd.nodes = append(cd.nodes, n)
			cd.idle.Add(n.Idle)
		}
		if covered < len(held) || len(cd.nodes) == 0 || !need.LessEqual(cd.idle, api.Zero) {
			continue
		}
		cands = append(cands, cd)
	}
	sort.SliceStable(cands, func(i, j int) bool { return cands[i].idle.MilliCPU < cands[j].idle.MilliCPU })
	var tried []string
	for _, cd := range cands {
		stmt := framework.NewStatement(ssn)
		for _, t := range pending {
			if !r.allocateTask(queue, job, stmt, t, cd.nodes) {
				break
			}
		}
		ready := ssn.JobReady(job)
		gangfit.Settle(r.topo, stmt, step.Settle{Commit: ready})
		if ready {
			r.commits++
			r.fit.Changed(pending)
			r.topo.ConfinedPlaced(job, c.Tier, cd.domain)
			klog.V(3).InfoS("Placed confined job", "job", job.UID, "tier", c.Tier, "domain", cd.domain.Name)
			return
		}
		r.fit.Changed(pending)
		tried = append(tried, cd.domain.Name)
	}
	if job.ReadyTaskNum() >= job.MinAvailable && len(tried) == 0 && len(cands) == 0 && len(held) > 0 {
		// A running job whose domain has no room for more pods.
		return
	}
	f := rdmatopology.ConfinedFailure(c, int(job.MinAvailable), tried)
	klog.V(3).InfoS("No domain holds confined job", "job", job.UID, "reason", f.Message)
	r.topo.Report(job, nil, f)
	for _, t := range pending {
		if _, ok := job.NodesFitErrors[t.UID]; !ok {
			setFitError(job, t, rdmatopology.PluginName+": "+f.Message)
		}
	}
}
