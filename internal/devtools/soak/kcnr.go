package soak

import (
	"maps"
	"slices"

	"github.com/kubewharf/katalyst-api/pkg/apis/node/v1alpha1"

	"github.com/rdmatopo/rdmatopo/core/ledger"
	"github.com/rdmatopo/rdmatopo/core/topology"
	"github.com/rdmatopo/rdmatopo/internal/sim/nodeagent"
)

// kcnrChange is one pending KCNR update: a consumer's allocations appear
// (alloc non-nil) or disappear on a node once the cycle counter reaches due.
type kcnrChange struct {
	due      int
	node     string
	consumer string
	alloc    *ledger.Reservation
}

// kcnrAgent plays katalyst: it keeps, per node, the consumers the node's
// KCNR lists and writes their allocations into the KCNR, lag cycles after
// the bind or deletion that caused them.
type kcnrAgent struct {
	cfg topology.Config
	lag int
	// base holds each node's KCNR without allocations.
	base map[string]*v1alpha1.CustomNodeResource
	// shown maps node -> consumer -> what the KCNR lists for it.
	shown map[string]map[string]ledger.Reservation
	// handed maps node -> consumer -> what the agent gave it, listed in
	// the KCNR or not yet.
	handed map[string]map[string]ledger.Reservation
	queue  []kcnrChange
}

func newKCNRAgent(cfg topology.Config, lag int, cnrs []*v1alpha1.CustomNodeResource) *kcnrAgent {
	a := &kcnrAgent{cfg: cfg.WithDefaults(), lag: lag, base: map[string]*v1alpha1.CustomNodeResource{},
		shown: map[string]map[string]ledger.Reservation{}, handed: map[string]map[string]ledger.Reservation{}}
	for _, c := range cnrs {
		a.base[c.Name] = c.DeepCopy()
	}
	return a
}

// schedule queues a change made in cycle now; it shows in the KCNR from
// session now+max(lag,1) on.
func (a *kcnrAgent) schedule(now int, node, consumer string, alloc *ledger.Reservation) {
	a.queue = append(a.queue, kcnrChange{due: now + max(a.lag, 1), node: node, consumer: consumer, alloc: alloc})
	m := a.handed[node]
	if m == nil {
		m = map[string]ledger.Reservation{}
		a.handed[node] = m
	}
	if alloc != nil {
		m[consumer] = *alloc
	} else {
		delete(m, consumer)
	}
}

// given lists what the agent has handed out on a node, in consumer order.
func (a *kcnrAgent) given(node string) []ledger.Reservation {
	m := a.handed[node]
	out := make([]ledger.Reservation, 0, len(m))
	for _, c := range sortedKeys(boolSetOf(m)) {
		out = append(out, m[c])
	}
	return out
}

// boolSetOf returns the key set of a map.
func boolSetOf[V any](m map[string]V) map[string]bool {
	out := make(map[string]bool, len(m))
	for k := range m {
		out[k] = true
	}
	return out
}

// due applies the changes due before cycle next runs and returns the nodes
// whose KCNR changed, sorted.
func (a *kcnrAgent) due(next int) []string {
	changed := map[string]bool{}
	rest := a.queue[:0]
	for _, ch := range a.queue {
		if ch.due > next {
			rest = append(rest, ch)
			continue
		}
		m := a.shown[ch.node]
		if m == nil {
			m = map[string]ledger.Reservation{}
			a.shown[ch.node] = m
		}
		if ch.alloc != nil {
			m[ch.consumer] = *ch.alloc
		} else {
			delete(m, ch.consumer)
		}
		changed[ch.node] = true
	}
	a.queue = rest
	return sortedKeys(changed)
}

// pending reports whether changes are still queued.
func (a *kcnrAgent) pending() bool { return len(a.queue) > 0 }

// object returns the node's KCNR with the allocations it currently lists,
// written by the node agent (nodeagent.Record) in consumer order: on each
// NIC zone one RDMA unit per consumer, and on the NUMA zone the consumer's
// GPUs, CPU and NICs.
func (a *kcnrAgent) object(node string) *v1alpha1.CustomNodeResource {
	base, ok := a.base[node]
	if !ok {
		return nil
	}
	cnr := base.DeepCopy()
	for _, c := range slices.Sorted(maps.Keys(a.shown[node])) {
		nodeagent.Record(cnr, a.cfg, c, a.shown[node][c])
	}
	return cnr
}
