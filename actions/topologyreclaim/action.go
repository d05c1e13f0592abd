// Package topologyreclaim registers topology-reclaim, the replacement for
// Volcano's reclaim. It runs topology-preempt's search (cheapest whole-gang
// victim sets, no futile evictions, freed NICs held for the gang) with
// victims taken from other queues only: from reclaimable queues
// (spec.reclaimable not false), for a gang whose queue is not overused, as
// far as the session's reclaimable vetoes allow (proportion's: only from a
// queue above its deserved share). See actions/topologypreempt, policy.go.
package topologyreclaim

import (
	"github.com/rdmatopo/rdmatopo/actions/topologypreempt"
	"github.com/rdmatopo/rdmatopo/plugins/rdmatopology"
)

// ActionName is the name of the action in volcano-scheduler.conf.
const ActionName = topologypreempt.ReclaimActionName

// New returns the action, which finds the rdma-topology plugin's state in
// each session through rt.
func New(rt *rdmatopology.Runtime) *topologypreempt.Action { return topologypreempt.NewReclaim(rt) }
