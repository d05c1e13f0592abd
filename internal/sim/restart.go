package sim

import (
	"github.com/rdmatopo/rdmatopo/framework/ledger"
	"github.com/rdmatopo/rdmatopo/plugins/rdmatopology"
)

// Restart simulates a scheduler restart: the rdma-topology runtime (fabric
// cache and NIC ledger) is dropped and a fresh one is fed from the simulated
// API objects alone, the current Nodes and KCNRs. The ledger starts empty and
// rebuilds itself from the bound pods' rdmatopo.io/* annotations when the
// next session opens. Volcano's scheduler cache is a mirror of the API
// objects that the simulator keeps in step (as informers would after a
// re-list), so it is left as is.
func (s *Simulator) Restart() {
	cycleMu.Lock()
	defer cycleMu.Unlock()
	rt := rdmatopology.NewRuntime(s.conf.Topology)
	for _, name := range s.nodeOrder {
		rt.Fabric.UpsertNode(s.nodes[name].DeepCopy())
	}
	for _, name := range s.cnrOrder {
		rt.Fabric.UpsertCNR(s.cnrs[name].DeepCopy())
	}
	s.runtime = rt
	if rdmatopology.CurrentRuntime() != nil {
		// Another simulator's or this one's old runtime: uninstall it, the
		// next cycle installs the new one.
		rdmatopology.SetRuntime(nil)
	}
}

// Ledger returns the NIC ledger of the simulator's rdma-topology runtime
// (the plugin's live record of reservations; callers must not modify it).
func (s *Simulator) Ledger() *ledger.Ledger { return s.runtime.Ledger }
