package sim

import (
	"maps"
	"sort"

	"github.com/rdmatopo/rdmatopo/core/ledger"
	"github.com/rdmatopo/rdmatopo/core/preemption"
	"github.com/rdmatopo/rdmatopo/plugins/rdmatopology"
)

// Restart simulates a scheduler process restart: Volcano's scheduler cache
// and the rdma-topology runtime (fabric cache and NIC ledger) are dropped,
// and fresh ones are filled from the simulated API objects alone, as the
// informers of a new process would after their first list: Queues,
// PriorityClasses, Nodes, PodGroups and Pods (with their current status
// and annotations) into the cache, Nodes and KCNRs into the fabric. The
// ledger starts empty and rebuilds itself from the bound pods'
// rdmatopo.io/* annotations when the next session opens. Nothing is in
// flight: the simulator writes every bind back before a cycle ends. The
// claims of waiting hard gangs are carried over, as the scheduler reads
// them back from where it keeps them.
func (s *Simulator) Restart() {
	cycleMu.Lock()
	defer cycleMu.Unlock()
	c := s.newCache()
	for _, name := range sortedKeys(s.queues) {
		c.AddQueueV1beta1(s.queues[name].DeepCopy())
	}
	for _, name := range sortedKeys(s.classes) {
		c.AddPriorityClass(s.classes[name].DeepCopy())
	}
	rt := s.newRuntime(rdmatopology.WithClaims(s.runtime.Claims()))
	for _, name := range s.nodeOrder {
		_ = c.AddOrUpdateNode(s.nodes[name].DeepCopy()) // never fails
		rt.Fabric.UpsertNode(s.nodes[name].DeepCopy())
	}
	for _, name := range s.cnrOrder {
		rt.Fabric.UpsertCNR(s.cnrs[name].DeepCopy())
	}
	for _, key := range s.pgOrder {
		c.AddPodGroupV1beta1(s.podGroups[key].DeepCopy())
	}
	for i, key := range s.podOrder {
		if e, ok := s.pods[key]; ok && !e.deleted && s.arrival[key] == i {
			c.AddPod(s.podLists.copyPod(e.pod))
		}
	}
	s.cache = c
	// The next cycle installs the new runtime (install), with actions of
	// its own: a restarted scheduler carries nothing over.
	s.refusedBefore += s.runtime.PlanRefused()
	s.runtime, s.installed = rt, nil
}

// sortedKeys returns a map's keys in order.
func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// Ledger returns the NIC ledger of the simulator's rdma-topology runtime
// (the plugin's live record of reservations; callers must not modify it).
func (s *Simulator) Ledger() *ledger.Ledger { return s.runtime.Ledger }

// PlanRefused is how many planned nodes were refused when a plan was applied,
// over every runtime the simulator ran (restarts included).
func (s *Simulator) PlanRefused() int64 { return s.refusedBefore + s.runtime.PlanRefused() }

// Claims returns copies of the claims the runtime keeps (preemption.Claim):
// what the next session's topology-allocate keeps younger gangs off.
func (s *Simulator) Claims() []preemption.Claim {
	kept := s.runtime.Claims()
	out := make([]preemption.Claim, len(kept))
	for i, c := range kept {
		out[i] = *c
		out[i].S0s, out[i].Nodes = maps.Clone(c.S0s), maps.Clone(c.Nodes)
	}
	return out
}
