// Package plugin is the seam between the topology actions and the
// rdma-topology plugin: Topology lists every call an action makes on the
// plugin's state in a session, and For is the one place that state is
// fetched. The actions hold a Topology, never the plugin's concrete type,
// so what they may ask of the plugin is this list and nothing else.
package plugin

import (
	"time"

	"k8s.io/klog/v2"
	"volcano.sh/volcano/pkg/scheduler/api"
	"volcano.sh/volcano/pkg/scheduler/framework"

	"github.com/rdmatopo/rdmatopo/core/ledger"
	"github.com/rdmatopo/rdmatopo/core/placement"
	"github.com/rdmatopo/rdmatopo/core/preemption"
	"github.com/rdmatopo/rdmatopo/core/step"
	"github.com/rdmatopo/rdmatopo/plugins/rdmatopology"
)

// Topology is the rdma-topology plugin's state in one session, as the
// actions use it.
type Topology interface {
	// Gang is the job's pods that request RDMA NICs and, for an RDMA
	// gang, the contract it is planned with now and, when pending is
	// given, the planner's request for those tasks; the error is an
	// invalid contract or rank (placement.ErrInvalidContract).
	Gang(job *api.JobInfo, pending ...*api.TaskInfo) (placement.Job, error)
	// RDMAOf is Gang without the contract: which of the job's pods
	// request RDMA NICs.
	RDMAOf(job *api.JobInfo) placement.Job
	// Ranks is the rank of each task's pod as the planner reads ranks.
	Ranks(tasks []*api.TaskInfo) ([]int, error)
	// Plan plans the gang on the session's free view, evicted's NICs
	// counted free, or says why it cannot be placed.
	Plan(g placement.Gang, evicted []ledger.Reservation) (*placement.Plan, *placement.Failure)
	// Apply takes one step of a plan through stmt (step.Step).
	Apply(stmt *framework.Statement, st step.Step) error
	// Report records a job's turn: where it was placed (plan), or why
	// not (f), on its PodGroup and as the job's fit error.
	Report(job *api.JobInfo, plan *placement.Plan, f *placement.Failure)

	// Confine is the domains a job none of whose pods request RDMA NICs
	// must stay within; nil when its contract limits nothing.
	Confine(job *api.JobInfo) (*rdmatopology.Confinement, error)
	// ConfinedPlaced records the domain (and segments) a confined job was
	// placed in.
	ConfinedPlaced(job *api.JobInfo, c *rdmatopology.Confinement, d rdmatopology.Domain, segments []string)

	// Preemption is the session's holds and claims (preemption.Access).
	Preemption() *preemption.Access
	// RoomKeptOn is the GPUs and CPUs node keeps for the lost pods of
	// gangs other than job (nil: none), and the first of those gangs.
	RoomKeptOn(job api.JobID, node string) (*api.Resource, string)
	// WithoutNICCheck runs fn with the plugin's own predicates (NIC fit,
	// tier limits, holds) skipped for task, so that what the other
	// plugins admit is known apart from what the planner decides.
	WithoutNICCheck(task *api.TaskInfo, fn func())
	// Now is the session's clock.
	Now() time.Time
}

// For returns the plugin's state in ssn, or nil and why there is none
// (rdmatopology.ErrNoPlugin, rdmatopology.ErrInvalidArgs).
func For(rt *rdmatopology.Runtime, ssn *framework.Session) (Topology, error) {
	s, err := rt.ForSession(ssn)
	if s == nil {
		return nil, err
	}
	return s, nil
}

// Settle ends a statement an action applied a plan through (step.Settle),
// through topo, or on its own when the session has no rdma-topology plugin
// (topo nil).
func Settle(topo Topology, stmt *framework.Statement, st step.Settle) {
	if topo == nil {
		rdmatopology.SettleStatement(stmt, st)
		return
	}
	if err := topo.Apply(stmt, st); err != nil {
		klog.ErrorS(err, "Cannot settle statement")
	}
}
