// Package placement plans where a whole gang goes: every pod on a node, a
// NUMA zone and RDMA NICs, under as few S0 leaf switches as possible, or
// nowhere. It is pure Go (no Volcano import): the rdma-topology plugin and the
// topology-allocate action feed it a fabric snapshot, the ledger and the gang.
//
// # Algorithm overview
//
// State (state.go) is the free view a session plans against: the fabric
// minus the ledger's reservations, bounded by each node's idle resources,
// with per-node views and per-leaf statistics cached and invalidated when a
// node changes.
//
// Plan (planner.go) prefers, in this order: one node when a node holds the
// whole gang (its traffic crosses no leaf); then the fewest distinct leaves
// used by all NICs of the gang; then the fewest S1s. It searches the tiers
// tightest first and stops at the gang's highest tier in hard mode:
//
//   - node (tiers.go tryNode): nodes that hold the gang by count, taken from
//     the most fragmented leaves first, best fit verified by a fill;
//   - s0 (tryS0): leaves whose statistics (leafstats.go: pods of the main
//     shape fitting with that leaf's NICs alone, and classes.go: each
//     class of the gang's pods on the nodes it may use) hold the gang,
//     best fit;
//   - s1 and cluster (tryGroups): the fewest leaves per S1 or overall, the
//     largest first and the last swapped for the smallest that completes the
//     gang, verified by a fill that adds the leaf sharing the most nodes when
//     the estimate was optimistic; in soft mode a one-S1 placement yields to
//     one anywhere with fewer leaves;
//   - footprints (footprint.go): where pods need NICs of several leaves each
//     (rails, topology-unknown NICs), a greedy cover by the leaf sets one pod
//     can use, pruned and verified by a fill;
//   - anywhere (soft mode): a fill over every usable node when the free
//     capacity holds the gang but the leaf-bounded searches did not find it.
//
// The fill (fill.go) assigns pods NUMA-aligned as each node's policy
// demands, finishing one node before opening the next. The places a search
// chose are then handed to the pods in rank order (ranks.go reads each
// pod's rank from its controller's labels; rankorder.go lays the ranks out
// leaf by leaf, node by node), so the ring over the gang's ranks crosses as
// few leaf boundaries as its leaves allow. A failure is data
// (Failure: a ReasonCode and a message with counts), never an error; the
// job contract is parsed strictly by ParseContract (contract.go).
package placement
