package gangfit

import (
	"volcano.sh/volcano/pkg/scheduler/api"

	"github.com/rdmatopo/rdmatopo/core/placement"
)

// GangMet reports whether the job has its minMember, and each task role
// its minimum, placed: what Volcano's gang plugin calls ready
// (JobInfo.CheckTaskReady and JobInfo.IsReady).
func GangMet(job *api.JobInfo) bool {
	return job.CheckTaskReady() && job.IsReady()
}

// fewerPods chooses which pods of an elastic gang to plan when not all of
// its pending RDMA pods fit (placement.Gang.Fewer): g.Need of them, in
// rank order, such that the job is ready by Volcano's own checks
// (JobInfo.CheckTaskReady: each task role's minAvailable, the
// PodGroup's minTaskMember; JobInfo.IsReady: minMember) once they and the
// job's other pending tasks are allocated. The first g.Need pods by rank
// are kept when they pass; otherwise each role short of its minimum first
// takes its pods in rank order, and the rest of g.Need follows in rank
// order. nil when the first g.Need pods pass, when every pod is needed, or
// when no choice passes (the planner then plans the first g.Need, as
// without task minima).
func fewerPods(job *api.JobInfo, rdma []*api.TaskInfo, g placement.Gang) []placement.Pod {
	if g.Need <= 0 || g.Need >= len(g.Pods) || len(job.TaskMinAvailable) == 0 {
		return nil
	}
	tasks := make(map[string]*api.TaskInfo, len(rdma))
	for _, t := range rdma {
		tasks[string(t.UID)] = t
	}
	if readyWith(job, tasks, g.Pods[:g.Need]) {
		return nil
	}
	// What each role still lacks once the job's tasks that already count
	// (and its other pending tasks, allocated beside the gang) are in.
	short := make(map[string]int32, len(job.TaskMinAvailable))
	for role, n := range job.TaskMinAvailable {
		short[role] = n
	}
	for _, t := range job.Tasks {
		if _, mine := tasks[string(t.UID)]; mine {
			continue
		}
		if api.AllocatedStatus(t.Status) || t.Status == api.Succeeded || t.Status == api.Pending {
			short[t.TaskRole]--
		}
	}
	chosen := make([]bool, len(g.Pods))
	left := g.Need
	for i, p := range g.Pods {
		if t := tasks[p.UID]; t != nil && short[t.TaskRole] > 0 && left > 0 {
			chosen[i] = true
			short[t.TaskRole]--
			left--
		}
	}
	for i := range g.Pods {
		if !chosen[i] && left > 0 {
			chosen[i] = true
			left--
		}
	}
	var out []placement.Pod
	for i, p := range g.Pods {
		if chosen[i] {
			out = append(out, p)
		}
	}
	if !readyWith(job, tasks, out) {
		return nil
	}
	return out
}

// readyWith reports whether Volcano would call the job ready (the gang
// plugin's JobReady: CheckTaskReady and IsReady) with the pods allocated,
// and the job's pending tasks other than its RDMA ones (tasks) too. It
// asks a copy of the job.
func readyWith(job *api.JobInfo, tasks map[string]*api.TaskInfo, pods []placement.Pod) bool {
	c := job.Clone()
	alloc := make(map[api.TaskID]bool, len(pods))
	for _, p := range pods {
		alloc[api.TaskID(p.UID)] = true
	}
	var now []*api.TaskInfo
	for uid, t := range c.Tasks {
		if _, mine := tasks[string(uid)]; (mine && alloc[uid]) || (!mine && t.Status == api.Pending) {
			now = append(now, t)
		}
	}
	for _, t := range now {
		if err := c.UpdateTaskStatus(t, api.Allocated); err != nil {
			return false
		}
	}
	return c.CheckTaskReady() && c.IsReady()
}
