// Package registry registers rdmatopo's plugin and actions with Volcano.
//
// Volcano v1.10 keeps plugin builders and actions in process-wide maps
// (framework.RegisterPluginBuilder, framework.RegisterAction): the scheduler
// looks actions up by name when it loads a conf and plugin builders when it
// opens a session, and gives neither a context of their own. Install is the
// one place rdmatopo writes into those maps. It hands the rdma-topology
// plugin builder and the topology-allocate, topology-preempt and
// topology-reclaim actions the Runtime they share, so the state that
// outlives sessions (fabric, ledger, holds, claims) is injected rather than
// found in a package variable. The last Install wins: the scheduler binary
// installs one Runtime at start-up; the simulator installs its own Set
// before each cycle.
package registry

import (
	"volcano.sh/volcano/pkg/scheduler/framework"

	"github.com/rdmatopo/rdmatopo/actions/topologyallocate"
	"github.com/rdmatopo/rdmatopo/actions/topologypreempt"
	"github.com/rdmatopo/rdmatopo/actions/topologyreclaim"
	"github.com/rdmatopo/rdmatopo/plugins/rdmatopology"
)

// Set is rdmatopo's plugin builder and actions over one Runtime, built
// once. The actions keep what they carry from one session to the next (the
// node sets the predicates admit, gangfit.Carry) for as long as the Set
// lives, so whoever installs before every session installs one Set again.
type Set struct {
	builder framework.PluginBuilder
	actions []framework.Action
}

// New builds the rdma-topology plugin builder and the three actions over
// rt.
func New(rt *rdmatopology.Runtime) *Set {
	return &Set{builder: rdmatopology.Builder(rt), actions: []framework.Action{
		topologyallocate.New(rt), topologypreempt.New(rt), topologyreclaim.New(rt),
	}}
}

// Install registers the set's plugin builder and actions, replacing what
// an earlier Install registered.
func (s *Set) Install() {
	framework.RegisterPluginBuilder(rdmatopology.PluginName, s.builder)
	for _, a := range s.actions {
		framework.RegisterAction(a)
	}
}

// Install registers the rdma-topology plugin builder and the three actions,
// all over rt, replacing what an earlier Install registered.
func Install(rt *rdmatopology.Runtime) { New(rt).Install() }
