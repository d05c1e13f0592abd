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
// installs one Runtime at start-up; the simulator installs its own before
// each cycle.
package registry

import (
	"volcano.sh/volcano/pkg/scheduler/framework"

	"github.com/rdmatopo/rdmatopo/actions/topologyallocate"
	"github.com/rdmatopo/rdmatopo/actions/topologypreempt"
	"github.com/rdmatopo/rdmatopo/actions/topologyreclaim"
	"github.com/rdmatopo/rdmatopo/plugins/rdmatopology"
)

// Install registers the rdma-topology plugin builder and the three actions,
// all over rt, replacing what an earlier Install registered.
func Install(rt *rdmatopology.Runtime) {
	framework.RegisterPluginBuilder(rdmatopology.PluginName, rdmatopology.Builder(rt))
	framework.RegisterAction(topologyallocate.New(rt))
	framework.RegisterAction(topologypreempt.New(rt))
	framework.RegisterAction(topologyreclaim.New(rt))
}
