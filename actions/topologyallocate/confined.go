package topologyallocate

import (
	"sort"

	"k8s.io/klog/v2"
	"volcano.sh/volcano/pkg/scheduler/api"
	"volcano.sh/volcano/pkg/scheduler/framework"
	"volcano.sh/volcano/pkg/scheduler/util"

	"github.com/rdmatopo/rdmatopo/actions/internal/plugin"
	"github.com/rdmatopo/rdmatopo/core/placement"
	"github.com/rdmatopo/rdmatopo/core/step"
	"github.com/rdmatopo/rdmatopo/plugins/rdmatopology"
)

// allocateConfined gives its turn to a job whose pods request no RDMA NICs
// under a hard contract (plugin.Topology.Confine): its pending tasks
// are allocated as allocate does, but only on the nodes of one domain of
// the contract's tier, domain by domain until one makes the job ready.
// Only domains holding every node the job already has pods on are tried
// (its replacements and pods beyond minMember stay with it), those with
// too little idle room for the pods it still needs are skipped, and the
// fullest are tried first (allocate's binpack, by domain). A job no domain
// makes ready waits, the reason on its PodGroup; nothing is placed wider.
func (r *run) allocateConfined(queue *api.QueueInfo, job *api.JobInfo, tasks *util.PriorityQueue, c *rdmatopology.Confinement) {
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
	cands := r.confinedCandidates(job, pending, c, held)
	var blocks *rankBlocks
	if c.Segment != nil {
		var err error
		if blocks, err = r.rankBlocks(job, c.Segment.Size); err != nil {
			klog.InfoS("Job not placed: invalid rank", "job", job.UID, "err", err)
			r.topo.Report(job, nil, &placement.Failure{Code: placement.ReasonInvalidContract, Message: err.Error()})
			return
		}
	}
	var tried []string
	for _, cd := range cands {
		if r.tryDomain(queue, job, pending, c, blocks, cd) {
			return
		}
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

// confinedDomain is a domain a confined job may be tried in: its session
// nodes and their idle resources.
type confinedDomain struct {
	domain rdmatopology.Domain
	nodes  []*api.NodeInfo
	idle   *api.Resource
}

// confinedCandidates returns the domains that hold every node the job has
// pods on (held) and idle room for the pods it still needs, the fullest
// first.
func (r *run) confinedCandidates(job *api.JobInfo, pending []*api.TaskInfo, c *rdmatopology.Confinement, held map[string]bool) []confinedDomain {
	need := api.EmptyResource()
	for i, t := range pending {
		if i > 0 && int32(i) >= job.MinAvailable-int32(job.ReadyTaskNum()) {
			break
		}
		need.Add(t.InitResreq)
	}
	var cands []confinedDomain
	for _, d := range c.Domains {
		cd := confinedDomain{domain: d, idle: api.EmptyResource()}
		covered := 0
		for _, name := range d.Nodes {
			n, ok := r.ssn.Nodes[name]
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
	return cands
}

// tryDomain allocates the job's pending tasks on the domain's nodes (block
// by block when the contract has segments) and commits them if that makes
// the job ready; otherwise it takes them back and reports false.
func (r *run) tryDomain(queue *api.QueueInfo, job *api.JobInfo, pending []*api.TaskInfo, c *rdmatopology.Confinement, blocks *rankBlocks, cd confinedDomain) bool {
	ssn := r.ssn
	var stmts []*framework.Statement
	var segments []string
	clearFitErrors(job, pending)
	if blocks == nil {
		stmt := framework.NewStatement(ssn)
		for _, t := range pending {
			if !r.allocateTask(queue, job, stmt, t, cd.nodes) {
				break
			}
		}
		stmts = append(stmts, stmt)
	} else {
		stmts, segments = r.allocateBlocks(queue, job, c.Segment, blocks, cd.nodes)
	}
	if ssn.JobReady(job) {
		for _, stmt := range stmts {
			plugin.Settle(r.topo, stmt, step.Settle{Commit: true})
		}
		r.commits++
		r.fit.Changed(pending)
		r.topo.ConfinedPlaced(job, c, cd.domain, segments)
		klog.V(3).InfoS("Placed confined job", "job", job.UID, "tier", c.Tier, "domain", cd.domain.Name)
		return true
	}
	for i := len(stmts) - 1; i >= 0; i-- {
		plugin.Settle(r.topo, stmts[i], step.Settle{})
	}
	r.fit.Changed(pending)
	return false
}

// rankBlocks are a job's tasks in blocks of consecutive ranks: the
// pending ones to place, by block in rank order, and the nodes each
// block's placed tasks are on.
type rankBlocks struct {
	// order lists the blocks with pending tasks, ascending.
	order   []int
	pending map[int][]*api.TaskInfo
	placed  map[int]map[string]bool
}

// rankBlocks numbers every task of the job by rank (dense: the n-th
// lowest rank is n) and groups them into blocks of size.
func (r *run) rankBlocks(job *api.JobInfo, size int) (*rankBlocks, error) {
	tasks := make([]*api.TaskInfo, 0, len(job.Tasks))
	for _, t := range job.Tasks {
		if t.Status == api.Pending || (t.NodeName != "" && api.AllocatedStatus(t.Status)) {
			tasks = append(tasks, t)
		}
	}
	sort.Slice(tasks, func(i, j int) bool { return tasks[i].Name < tasks[j].Name })
	ranks, err := r.topo.Ranks(tasks)
	if err != nil {
		return nil, err
	}
	idx := make([]int, len(tasks))
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool { return ranks[idx[a]] < ranks[idx[b]] })
	out := &rankBlocks{pending: map[int][]*api.TaskInfo{}, placed: map[int]map[string]bool{}}
	for pos, i := range idx {
		t, b := tasks[i], pos/size
		if t.Status != api.Pending {
			if out.placed[b] == nil {
				out.placed[b] = map[string]bool{}
			}
			out.placed[b][t.NodeName] = true
			continue
		}
		if len(out.pending[b]) == 0 {
			out.order = append(out.order, b)
		}
		out.pending[b] = append(out.pending[b], t)
	}
	return out, nil
}

// allocateBlocks allocates the job's pending tasks block by block, each
// block whole within one segment domain (among nodes) that holds the
// nodes its placed tasks are on, one statement per block; a block no
// domain holds whole ends the walk (its tries discarded). It returns the
// statements of the blocks placed, in order, and their domains' names.
func (r *run) allocateBlocks(queue *api.QueueInfo, job *api.JobInfo, seg *rdmatopology.SegmentConfinement, blocks *rankBlocks, nodes []*api.NodeInfo) ([]*framework.Statement, []string) {
	ssn := r.ssn
	within := make(map[string]*api.NodeInfo, len(nodes))
	for _, n := range nodes {
		within[n.Name] = n
	}
	var stmts []*framework.Statement
	var names []string
	for _, b := range blocks.order {
		tasks := blocks.pending[b]
		need := api.EmptyResource()
		for _, t := range tasks {
			need.Add(t.InitResreq)
		}
		placed := false
		for _, d := range seg.Domains {
			var dn []*api.NodeInfo
			idle := api.EmptyResource()
			covered := 0
			for _, name := range d.Nodes {
				if n, ok := within[name]; ok {
					dn = append(dn, n)
					idle.Add(n.Idle)
					if blocks.placed[b][name] {
						covered++
					}
				}
			}
			if len(dn) == 0 || covered < len(blocks.placed[b]) || !need.LessEqual(idle, api.Zero) {
				continue
			}
			stmt := framework.NewStatement(ssn)
			all := true
			clearFitErrors(job, tasks)
			for _, t := range tasks {
				r.allocateTask(queue, job, stmt, t, dn)
				if t.Status != api.Allocated {
					all = false
					break
				}
			}
			if all {
				stmts, names = append(stmts, stmt), append(names, d.Name)
				placed = true
				break
			}
			plugin.Settle(r.topo, stmt, step.Settle{})
		}
		if !placed {
			break
		}
	}
	return stmts, names
}

// clearFitErrors forgets why tasks were not placed in another domain, so
// allocateTask tries them again here (it skips a task with fit errors).
func clearFitErrors(job *api.JobInfo, tasks []*api.TaskInfo) {
	for _, t := range tasks {
		delete(job.NodesFitErrors, t.UID)
	}
}
