package rdmatopology

// Hardware faults, read from what the cluster shows (docs/node-contract.md,
// "When hardware fails"):
//
//   - a NIC has failed when its KCNR no longer lists it under its NUMA zone,
//     or lists it with an allocatable of 0 (units); it is back when listed
//     with units again;
//   - a leaf has failed when every NIC last seen under it has failed while
//     their nodes are still there (a node deleted with its KCNR is drained,
//     not failed);
//   - a node has failed when Volcano's session leaves it out (its Ready
//     condition is not True), when it is cordoned, or when it carries a
//     NoExecute taint (LimitNodes).
//
// Nothing is planned on failed hardware: a failed NIC is not free in the
// fabric, a failed node is unusable. A NIC that failed NICFlapCount times
// within NICFlapWindow is kept out for NICCooldown once it is back
// (State.KeepOut), with an Event on its node's KCNR and the metrics
// rdmatopo_nic_cooldowns_total and rdmatopo_nics_cooling_down. A failed
// leaf is reported once when it fails (Event LeafFailed on the KCNR of the
// first of its nodes, metric rdmatopo_failed_leaves). The memory of
// failures lives in the Runtime: a scheduler restart forgets it, as it
// forgets holds.

import (
	"fmt"
	"sort"
	"strings"
	"time"

	nodev1alpha1 "github.com/kubewharf/katalyst-api/pkg/apis/node/v1alpha1"
	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"
	"volcano.sh/volcano/pkg/scheduler/api"

	"github.com/rdmatopo/rdmatopo/core/kube"
	"github.com/rdmatopo/rdmatopo/core/placement"
	"github.com/rdmatopo/rdmatopo/core/topology"
)

// Event reasons of hardware faults.
const (
	// ReasonNICCoolingDown: a flapping NIC is back and kept out (KCNR).
	ReasonNICCoolingDown = "NICCoolingDown"
	// ReasonLeafFailed: every NIC under a leaf failed at once (KCNR).
	ReasonLeafFailed = "LeafFailed"
	// ReasonReplacementPlaced: a pod a running gang lost was replaced
	// (PodGroup).
	ReasonReplacementPlaced = "ReplacementPlaced"
)

// nicRef names one NIC of one node.
type nicRef struct {
	node string
	nic  topology.NICID
}

func (r nicRef) String() string { return r.node + "/" + string(r.nic) }

// nicHealth is what the tracker remembers of one NIC.
type nicHealth struct {
	// leaf is the NIC's leaf when it was last listed.
	leaf topology.S0ID
	// down is set while the NIC has failed; since is when it failed.
	down  bool
	since time.Time
	// fails are the times it failed within the flap window.
	fails []time.Time
	// coolUntil is the end of its cool-down (zero: none).
	coolUntil time.Time
}

// failedLeaf is a leaf every NIC of which failed.
type failedLeaf struct {
	since time.Time
	nodes []string
	nics  int
}

// faultTracker follows the health of every NIC the fabric lists across
// sessions. Only session open uses it, one session at a time.
type faultTracker struct {
	// last is the fabric last observed (transitions are read only when it
	// changes).
	last *topology.Fabric
	nics map[nicRef]*nicHealth
	// leaves are the failed leaves.
	leaves map[topology.S0ID]failedLeaf
	// lost are the pods running gangs lost, by job ("namespace/podgroup"),
	// until replaced or the gang is gone (replace.go).
	lost map[string][]lostPod
}

func newFaultTracker() *faultTracker {
	return &faultTracker{nics: map[nicRef]*nicHealth{}, leaves: map[topology.S0ID]failedLeaf{}}
}

// observe reads the NICs of f at now: failures, returns (with a cool-down
// when the NIC flapped) and failed leaves, with their Events and metrics.
// recorder may be nil.
func (ft *faultTracker) observe(now time.Time, f *topology.Fabric, args *Args, recorder record.EventRecorder) {
	if f == nil || f == ft.last {
		ft.gauge(now)
		return
	}
	ft.last = f
	listed := map[nicRef]bool{}
	for _, name := range f.NodeNames() {
		n, _ := f.Node(name)
		for _, z := range n.Zones {
			for _, nic := range z.NICs {
				ref := nicRef{name, nic.ID}
				listed[ref] = true
				h := ft.nics[ref]
				if h == nil {
					// First seen: a NIC listed at 0 is down, but its
					// failure was not seen (after a restart, say), and
					// does not count towards a cool-down.
					h = &nicHealth{down: nic.Units <= 0, since: now}
					ft.nics[ref] = h
				}
				h.leaf = nic.S0
				if nic.Units > 0 {
					ft.back(now, ref, h, args, recorder)
				} else {
					ft.fail(now, ref, h, args)
				}
			}
		}
	}
	for ref, h := range ft.nics {
		if listed[ref] {
			continue
		}
		if _, ok := f.Node(ref.node); !ok {
			// The node left the fabric (drained, deleted): not a failure.
			delete(ft.nics, ref)
			continue
		}
		ft.fail(now, ref, h, args)
	}
	ft.readLeaves(now, recorder)
	ft.gauge(now)
}

// fail records a NIC failure (once per failure).
func (ft *faultTracker) fail(now time.Time, ref nicRef, h *nicHealth, args *Args) {
	if h.down {
		return
	}
	h.down, h.since = true, now
	h.fails = append(pruneBefore(h.fails, now.Add(-args.NICFlapWindow)), now)
	nicFailures.Inc()
	klog.InfoS("NIC failed", "node", klog.KRef("", ref.node), "nic", ref.nic, "leaf", h.leaf, "failuresInWindow", len(h.fails))
}

// back records a NIC listed with units: when it was down and failed
// NICFlapCount times within the window, its cool-down starts.
func (ft *faultTracker) back(now time.Time, ref nicRef, h *nicHealth, args *Args, recorder record.EventRecorder) {
	if !h.down {
		return
	}
	h.down = false
	h.fails = pruneBefore(h.fails, now.Add(-args.NICFlapWindow))
	if len(h.fails) < args.NICFlapCount {
		klog.InfoS("NIC is back", "node", klog.KRef("", ref.node), "nic", ref.nic)
		return
	}
	h.coolUntil = now.Add(args.NICCooldown)
	nicCooldowns.Inc()
	msg := fmt.Sprintf("NIC %s failed %d times within %s (last at %s); kept out of placement until %s",
		ref.nic, len(h.fails), args.NICFlapWindow, h.since.UTC().Format(time.RFC3339), h.coolUntil.UTC().Format(time.RFC3339))
	klog.InfoS("Flapping NIC kept out", "node", klog.KRef("", ref.node), "nic", ref.nic, "until", h.coolUntil)
	if recorder != nil {
		recorder.Event(kcnrRef(ref.node), v1.EventTypeWarning, ReasonNICCoolingDown, msg)
	}
}

// pruneBefore drops the times before t.
func pruneBefore(ts []time.Time, t time.Time) []time.Time {
	out := ts[:0]
	for _, x := range ts {
		if !x.Before(t) {
			out = append(out, x)
		}
	}
	return out
}

// readLeaves finds the leaves every NIC of which is down; a leaf that
// newly failed is reported once. Topology-unknown leaves (one NIC each)
// are NIC failures, not leaf failures.
func (ft *faultTracker) readLeaves(now time.Time, recorder record.EventRecorder) {
	type leafNICs struct {
		all, down int
		nodes     map[string]bool
	}
	by := map[topology.S0ID]*leafNICs{}
	for ref, h := range ft.nics {
		if h.leaf.IsUnknown() {
			continue
		}
		l := by[h.leaf]
		if l == nil {
			l = &leafNICs{nodes: map[string]bool{}}
			by[h.leaf] = l
		}
		l.all++
		l.nodes[ref.node] = true
		if h.down {
			l.down++
		}
	}
	for id := range ft.leaves {
		if l := by[id]; l == nil || l.down < l.all {
			klog.InfoS("Leaf is back", "leaf", id)
			delete(ft.leaves, id)
		}
	}
	for id, l := range by {
		if l.down < l.all {
			continue
		}
		if _, known := ft.leaves[id]; known {
			continue
		}
		nodes := make([]string, 0, len(l.nodes))
		for n := range l.nodes {
			nodes = append(nodes, n)
		}
		sort.Strings(nodes)
		ft.leaves[id] = failedLeaf{since: now, nodes: nodes, nics: l.all}
		msg := fmt.Sprintf("every NIC under leaf %s failed (%d NICs on node(s) %s); nothing is placed under it until a NIC is back",
			id, l.all, strings.Join(nodes, ", "))
		klog.InfoS("Leaf failed", "leaf", id, "nics", l.all, "nodes", nodes)
		if recorder != nil {
			recorder.Event(kcnrRef(nodes[0]), v1.EventTypeWarning, ReasonLeafFailed, msg)
		}
	}
}

// gauge refreshes rdmatopo_nics_cooling_down and rdmatopo_failed_leaves.
func (ft *faultTracker) gauge(now time.Time) {
	cooling := 0
	for _, h := range ft.nics {
		if !h.down && h.coolUntil.After(now) {
			cooling++
		}
	}
	nicsCoolingDown.Set(float64(cooling))
	failedLeaves.Set(float64(len(ft.leaves)))
}

// keepOut keeps the NICs in their cool-down out of st.
func (ft *faultTracker) keepOut(now time.Time, st *placement.State) {
	for ref, h := range ft.nics {
		if !h.down && h.coolUntil.After(now) {
			st.KeepOut(ref.node, ref.nic, "cooldown")
		}
	}
}

// nicFailed says why a NIC of the session's fabric must not be used ("" when
// it may): gone from its node's KCNR, listed with allocatable 0, or in its
// cool-down. Holds kept from an earlier session check their NICs with it.
func (s *SessionState) nicFailed(node string, nic topology.NICID, now time.Time) string {
	n, ok := s.fabric.Node(node)
	if !ok {
		return "node " + node + " is not in the fabric"
	}
	for _, z := range n.Zones {
		for _, c := range z.NICs {
			if c.ID != nic {
				continue
			}
			if c.Units <= 0 {
				return fmt.Sprintf("NIC %s on %s failed (allocatable 0)", nic, node)
			}
			if s.rt.faults.cooling(now, node, nic) {
				return fmt.Sprintf("NIC %s on %s is in its cool-down", nic, node)
			}
			return ""
		}
	}
	return fmt.Sprintf("NIC %s on %s failed (gone from its KCNR)", nic, node)
}

// cooling reports whether a NIC is in its cool-down at now.
func (ft *faultTracker) cooling(now time.Time, node string, nic topology.NICID) bool {
	h := ft.nics[nicRef{node, nic}]
	return h != nil && !h.down && h.coolUntil.After(now)
}

// cause says what failed under a pod placed on node with nics ("" when
// nothing the tracker or the session knows of did): a failed leaf, a
// failed NIC, or the node.
func (ft *faultTracker) cause(node string, nics []topology.NICID, nodes map[string]*api.NodeInfo) string {
	var down []string
	for _, nic := range nics {
		h := ft.nics[nicRef{node, nic}]
		if h == nil || !h.down {
			continue
		}
		if _, failed := ft.leaves[h.leaf]; failed {
			return fmt.Sprintf("leaf %s failed", h.leaf)
		}
		down = append(down, string(nic))
	}
	if len(down) > 0 {
		return fmt.Sprintf("NIC %s on node %s failed", strings.Join(down, ","), node)
	}
	if why := nodeFailure(nodes[node]); why != "" {
		return "node " + node + " " + why
	}
	return ""
}

// failedLeafIDs lists the failed leaves, sorted.
func (ft *faultTracker) failedLeafIDs() []topology.S0ID {
	out := make([]topology.S0ID, 0, len(ft.leaves))
	for id := range ft.leaves {
		out = append(out, id)
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

// nodeFailure says how a node of the session failed ("" when it did not):
// absent from the session (NotReady), cordoned, or tainted NoExecute.
func nodeFailure(ni *api.NodeInfo) string {
	if ni == nil || ni.Node == nil {
		return "is NotReady or gone"
	}
	if ni.Node.Spec.Unschedulable {
		return "is cordoned"
	}
	if t := noExecuteTaint(ni.Node); t != "" {
		return "is tainted " + t + ":NoExecute"
	}
	return ""
}

// noExecuteTaint returns the key of the node's first NoExecute taint ("" if
// none).
func noExecuteTaint(n *v1.Node) string { return kube.NoExecuteTaint(n) }

// kcnrRef is the reference of a node's KCNR, for Events.
func kcnrRef(node string) *v1.ObjectReference {
	return &v1.ObjectReference{APIVersion: nodev1alpha1.SchemeGroupVersion.String(), Kind: "CustomNodeResource", Name: node}
}
