// Package step names what the topology actions do with a plan, one step at
// a time, through a Volcano statement: allocate a pod, pipeline it onto
// what its victims release, evict a victim, record a preempting gang's
// hold, settle the statement, realize the holds a session applied. The
// actions hand each step to the rdma-topology plugin's SessionState.Apply, which
// takes it through the statement and does what the plugin keeps beside it
// (the planned NICs a pod is handed, the pipelined pods a hold records,
// forgetting both once the statement settles), so an action never does
// those itself.
//
// Steps name pods, jobs and nodes by UID and name, as the planner does;
// the plugin finds them in the session.
package step

import (
	"errors"

	"github.com/rdmatopo/rdmatopo/core/placement"
)

// Step is one of the steps below.
type Step interface{ step() }

// Allocate allocates the job's pod on node once the node's idle resources
// hold it and the session's predicates admit it there. Planned is the
// pod's planned NICs; nil for a pod without RDMA.
type Allocate struct {
	Job, Pod, Node string
	Planned        *placement.Assignment
}

// Pipeline pipelines the job's pod onto node, onto the resources its
// victims release, once the session's preempt predicates admit it there,
// and notes it for the gang's hold. Planned is as for Allocate.
type Pipeline struct {
	Job, Pod, Node string
	Planned        *placement.Assignment
}

// Evict evicts the job's pod (a victim) for Reason. Reserved is the NICs
// the pod holds: should the statement be discarded, the pod is allocated
// back onto them.
type Evict struct {
	Job, Pod string
	Reserved placement.Assignment
	Reason   string
}

// Hold records the hold of a preempting gang whose pods were pipelined
// onto what its victims (Victims, by name) release, if the gang is
// complete with them; Apply returns ErrIncomplete when it is not.
type Hold struct {
	Job     string
	Victims []string
}

// Settle ends the statement: committed when Commit, else discarded unless
// Keep (the job's pods stay pipelined). What the plugin was handed for the
// statement's pods is forgotten.
type Settle struct{ Commit, Keep bool }

// RealizeHolds allocates the gangs whose holds the session applied where
// their holds keep room, each in a statement of its own (no statement is
// given): only the pods of partial gangs whose binds failed when
// RebindOnly, else preempting gangs too.
type RealizeHolds struct{ RebindOnly bool }

func (Allocate) step()     {}
func (Pipeline) step()     {}
func (Evict) step()        {}
func (Hold) step()         {}
func (Settle) step()       {}
func (RealizeHolds) step() {}

// ErrIncomplete is Apply's answer to a Hold of a gang that is not complete
// with its pipelined pods.
var ErrIncomplete = errors.New("gang is not complete with its pipelined pods")
