package rdmatopology

// The actions' statement steps: applying a plan through a Statement. The
// plugin hands each planned task its NICs (the Allocate handler reserves
// them), lifts its veto on pipelining a gang the topology-preempt action
// pipelines, records the preempting gang's hold, and forgets what it was
// handed once the statement is settled; the actions never do these steps
// themselves.

import (
	"errors"
	"fmt"

	"volcano.sh/volcano/pkg/scheduler/api"
	"volcano.sh/volcano/pkg/scheduler/framework"

	"github.com/rdmatopo/rdmatopo/core/placement"
	"github.com/rdmatopo/rdmatopo/core/preemption"
	"github.com/rdmatopo/rdmatopo/core/step"
)

// Apply takes one step of applying a plan through stmt (package step):
// the planned NICs of a task allocated or pipelined are handed to the
// Allocate handler, which reserves them; an evicted victim's reserved NICs
// are handed back should stmt be discarded; a preempting gang's pipelined
// tasks are recorded for its hold; what was handed is forgotten when stmt
// settles. An Allocate's error is the node's refusal; for a planned task
// it is counted in rdmatopo_plan_refused_total by what refused. A Hold of
// a gang not complete with its pipelined tasks returns step.ErrIncomplete.
// RealizeHolds makes statements of its own (stmt is not used). On a nil
// SessionState (no rdma-topology plugin) only Settle is taken.
func (s *SessionState) Apply(stmt *framework.Statement, st step.Step) error {
	if s == nil {
		if st, ok := st.(step.Settle); ok {
			SettleStatement(stmt, st)
			return nil
		}
		return fmt.Errorf("%T: %w", st, ErrNoPlugin)
	}
	switch st := st.(type) {
	case step.Allocate:
		task, node, err := s.lookup(st.Job, st.Pod, st.Node)
		if err != nil {
			return err
		}
		err = s.allocatePlanned(stmt, task, node, st.Planned)
		if err != nil && st.Planned != nil {
			observePlanRefused(refusedBy(err))
			s.rt.planRefused.Add(1)
		}
		return err
	case step.Pipeline:
		task, node, err := s.lookup(st.Job, st.Pod, st.Node)
		if err != nil {
			return err
		}
		return s.pipeline(stmt, task, node, st.Planned)
	case step.Evict:
		victim, _, err := s.lookup(st.Job, st.Pod, "")
		if err != nil {
			return err
		}
		a := st.Reserved
		a.PodUID = st.Pod
		s.setPlanned(victim.UID, a)
		return stmt.Evict(victim, st.Reason)
	case step.Hold:
		job := s.ssn.Jobs[api.JobID(st.Job)]
		if job == nil {
			return fmt.Errorf("hold: job %s is not in the session", st.Job)
		}
		if !s.hold(job, st.Victims) {
			return step.ErrIncomplete
		}
		return nil
	case step.Settle:
		SettleStatement(stmt, st)
		s.clearPlanned()
		s.settleRooms(st.Commit || st.Keep)
		return nil
	case step.RealizeHolds:
		s.realizeHolds(st.RebindOnly)
		return nil
	}
	return fmt.Errorf("unknown step %T", st)
}

// lookup finds the job's task, and the node when one is named, in the
// session.
func (s *SessionState) lookup(jobUID, pod, nodeName string) (*api.TaskInfo, *api.NodeInfo, error) {
	job := s.ssn.Jobs[api.JobID(jobUID)]
	if job == nil {
		return nil, nil, fmt.Errorf("job %s is not in the session", jobUID)
	}
	task := job.Tasks[api.TaskID(pod)]
	if task == nil {
		return nil, nil, fmt.Errorf("job %s/%s has no pod %s", job.Namespace, job.Name, pod)
	}
	if nodeName == "" {
		return task, nil, nil
	}
	node := s.ssn.Nodes[nodeName]
	if node == nil {
		return nil, nil, fmt.Errorf("node %s of %s/%s is not in the session", nodeName, task.Namespace, task.Name)
	}
	return task, node, nil
}

// settleRooms forgets the replacement room given back to pipelined gangs
// when their statement is kept, and keeps it again when it is discarded.
func (s *SessionState) settleRooms(kept bool) {
	s.mu.Lock()
	rooms := s.pipelinedRooms
	s.pipelinedRooms = nil
	s.mu.Unlock()
	if kept {
		return
	}
	for _, job := range sortedJobIDs(rooms) {
		s.keepReplacements(job, rooms[job])
	}
}

// SettleStatement commits or discards stmt as st says, with nothing of the
// plugin's to forget: what Apply does with a step.Settle besides.
func SettleStatement(stmt *framework.Statement, st step.Settle) {
	switch {
	case st.Commit:
		stmt.Commit()
	case !st.Keep:
		stmt.Discard()
	}
}

// allocatePlanned allocates task on node in stmt once the node's idle
// resources hold it and the session's predicates admit it there, a being
// its planned NICs (nil for a task without RDMA). Every error it returns
// is the node's refusal.
func (s *SessionState) allocatePlanned(stmt *framework.Statement, task *api.TaskInfo, node *api.NodeInfo, a *placement.Assignment) error {
	if !task.InitResreq.LessEqual(node.Idle, api.Zero) {
		return fmt.Errorf("node %s has too few idle resources for %s/%s: %w", node.Name, task.Namespace, task.Name, errIdle)
	}
	if a != nil {
		s.setPlanned(task.UID, *a)
	}
	if err := s.ssn.PredicateForAllocateAction(task, node); err != nil {
		return fmt.Errorf("predicates refuse %s/%s on %s: %w", task.Namespace, task.Name, node.Name, err)
	}
	if err := stmt.Allocate(task, node); err != nil {
		return fmt.Errorf("allocate %s/%s on %s: %w", task.Namespace, task.Name, node.Name, err)
	}
	return nil
}

// refusedBy names what refused a planned node, for
// rdmatopo_plan_refused_total: the plugin of the first failing predicate
// status (Kubernetes' plugin names through Volcano's predicates plugin),
// IdleResources, or Allocate (the statement refused the task).
func refusedBy(err error) string {
	var fe *api.FitError
	if errors.As(err, &fe) {
		for _, st := range fe.Status {
			if st != nil && st.Code != api.Success && st.Plugin != "" {
				return st.Plugin
			}
		}
		return "predicates"
	}
	if errors.Is(err, errIdle) {
		return "IdleResources"
	}
	return "Allocate"
}

// pipeline pipelines a preempting gang's task onto node in stmt (onto the
// resources its victims release) once the session's preempt predicates
// admit it there, a being its planned NICs (nil for a task without RDMA),
// and notes it for the gang's hold.
func (s *SessionState) pipeline(stmt *framework.Statement, task *api.TaskInfo, node *api.NodeInfo, a *placement.Assignment) error {
	// The room kept for the gang's lost pods is the gang's: its plan (made
	// with that room free, Plan) may put its pods there.
	if rooms := s.releaseReplacements(task.Job); len(rooms) > 0 {
		s.mu.Lock()
		if s.pipelinedRooms == nil {
			s.pipelinedRooms = map[api.JobID][]heldRoom{}
		}
		s.pipelinedRooms[task.Job] = append(s.pipelinedRooms[task.Job], rooms...)
		s.mu.Unlock()
	}
	if a != nil {
		s.setPlanned(task.UID, *a)
	}
	if err := s.ssn.PredicateForPreemptAction(task, node); err != nil {
		return fmt.Errorf("predicates refuse %s/%s on %s: %w", task.Namespace, task.Name, node.Name, err)
	}
	if err := stmt.Pipeline(task, node.Name, true); err != nil {
		return fmt.Errorf("pipeline %s/%s on %s: %w", task.Namespace, task.Name, node.Name, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.pipelined[task.Job] = append(s.pipelined[task.Job], holdTaskOf(task, node.Name, a))
	return nil
}

// hold records the hold of a preempting gang whose tasks were pipelined
// onto the resources of the victims it evicts, if the gang is complete
// with them (the session's JobPipelined, asked with the plugin's veto on
// pipelining an RDMA gang lifted for this gang), and reports whether it
// is. The hold is applied from the next session on (in this one, the
// pipelined tasks hold the NICs); one already recorded for the job is
// replaced.
func (s *SessionState) hold(job *api.JobInfo, victims []string) bool {
	if !s.jobPipelined(job) {
		return false
	}
	s.mu.Lock()
	tasks := s.pipelined[job.UID]
	s.mu.Unlock()
	h := &preemption.Hold{Job: string(job.UID), Name: job.Namespace + "/" + job.Name, Tasks: tasks, Victims: victims, Since: s.rt.Now()}
	s.rt.preemption.Holds.Put(h.Job, h)
	return true
}

// jobPipelined reports whether the job is complete once its pipelined
// tasks count (the session's JobPipelined), the plugin's veto on
// pipelining an RDMA gang, which must be whole, lifted for it.
func (s *SessionState) jobPipelined(job *api.JobInfo) bool {
	s.holds.AllowPipeline(string(job.UID), true)
	defer s.holds.AllowPipeline(string(job.UID), false)
	return s.ssn.JobPipelined(job)
}
