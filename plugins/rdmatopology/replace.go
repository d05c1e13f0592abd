package rdmatopology

// Replacements: the pods a running gang loses (deleted, failed, evicted by
// the node's lifecycle after a NIC, leaf or node failure), and the room
// kept for the pods that replace them.
//
// When a session opens and reconcile releases the reservation of a pod
// that is gone, Failed or being deleted while other pods of its gang still
// run, the pod is recorded as lost, with what failed under it (faults.go). For
// ReplacementHold after the loss, each session keeps room of the lost pod's
// shape for the gang, from every other gang: on a node the gang holds,
// else under a leaf the gang holds, else under a leaf of the gang's S1s
// (within a hard gang's tier; never on failed hardware, nor on a failed
// leaf), except while the gang waits on a preemption hold. The room is a
// hold in the planner's state (State.AddHold), which keeps its NICs, GPUs
// and CPUs from other RDMA pods; the hold predicate keeps its GPUs and CPUs
// from every other pod (holds.go, RoomKeptOn). Plan gives it back to the
// gang's own planning, in what-if plans too, and keeps it when nothing was
// planned; pipelining the gang (topology-preempt) gives it back until the
// statement is discarded. The replacement pod (the job controller
// re-creates it under the same name, with the same rank) is then planned
// like every late pod of a gang, next to its rank neighbours, and back
// under the leaves its gang held when it lost it (withHome; see
// core/placement/neighbours.go); partial gangs are placed before any
// other job (topology-allocate). When it is sent to bind, the gang's
// PodGroup gets a ReplacementPlaced Event naming what failed and where the
// replacement went, and rdmatopo_replacements_total counts it by where it
// went (leaf, s1, wider).

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
	"volcano.sh/volcano/pkg/scheduler/api"

	"github.com/rdmatopo/rdmatopo/core/ledger"
	"github.com/rdmatopo/rdmatopo/core/placement"
	"github.com/rdmatopo/rdmatopo/core/topology"
)

// replacePrefix prefixes the holder of a replacement's room.
const replacePrefix = "replace/"

// lostPod is a pod a running gang lost.
type lostPod struct {
	uid, name, node string
	nics            []topology.NICID
	// leaves are the gang's leaves when the pod was lost (its own too);
	// s1s their S1s.
	leaves []topology.S0ID
	s1s    []topology.S1ID
	// shape is what the pod took.
	shape placement.Shape
	// cause says what failed under it ("" when nothing known did).
	cause string
	since time.Time
}

// heldRoom is room a session keeps for a lost pod.
type heldRoom struct {
	holder string
	a      placement.Assignment
}

// noteLost records the pods lost since the last session: reservations
// reconcile released for a pod gone, Failed or being deleted whose gang
// has pods bound still (a pod that Succeeded is owed no replacement).
func (s *SessionState) noteLost(released []ledger.Reservation) {
	ft := s.rt.faults
	now := s.rt.Now()
	for _, r := range released {
		job := s.ssn.Jobs[api.JobID(r.Job)]
		if job == nil || job.ReadyTaskNum() == 0 {
			continue // the whole gang is gone or ended: nothing to replace
		}
		lp := lostPod{uid: r.UID, name: r.Name, node: r.Node, nics: r.NICs(), since: now,
			cause: ft.cause(r.Node, r.NICs(), s.ssn.Nodes)}
		for _, z := range r.Zones {
			lp.shape.GPU += z.GPU
			lp.shape.CPUMilli += z.CPUMilli
			lp.shape.NICs += int64(len(z.NICs))
		}
		lp.leaves = s.leavesOf(r.Node, r.NICs())
		for _, o := range s.byJob[job.UID] {
			for _, id := range s.leavesOf(o.Node, o.NICs()) {
				if !slices.Contains(lp.leaves, id) {
					lp.leaves = append(lp.leaves, id)
				}
			}
		}
		slices.Sort(lp.leaves)
		for _, id := range lp.leaves {
			if l, ok := s.fabric.Leaf(id); ok && !slices.Contains(lp.s1s, l.S1) {
				lp.s1s = append(lp.s1s, l.S1)
			}
		}
		if ft.lost == nil {
			ft.lost = map[string][]lostPod{}
		}
		ft.lost[r.Job] = append(ft.lost[r.Job], lp)
		klog.InfoS("Running gang lost a pod", "job", r.Job, "pod", klog.KRef(r.Namespace, r.Name), "node", r.Node,
			"nics", lp.nics, "cause", lp.cause)
	}
}

// leavesOf returns the leaves of a node's NICs: from the fabric, else from
// what the fault tracker last saw of a NIC gone.
func (s *SessionState) leavesOf(node string, nics []topology.NICID) []topology.S0ID {
	var out []topology.S0ID
	for _, nic := range nics {
		id, ok := s.fabric.NICLeaf(node, nic)
		if !ok {
			h := s.rt.faults.nics[nicRef{node, nic}]
			if h == nil {
				continue
			}
			id = h.leaf
		}
		if !slices.Contains(out, id) {
			out = append(out, id)
		}
	}
	return out
}

// holdReplacements keeps, in the planner's state, room for each pod lost
// within ReplacementHold; it drops the losses of gangs that are gone. It
// runs when the session opens, after the preemption and rebind holds.
func (s *SessionState) holdReplacements() {
	ft := s.rt.faults
	now := s.rt.Now()
	for _, key := range sortedLostJobs(ft.lost) {
		job := s.ssn.Jobs[api.JobID(key)]
		if job == nil || job.ReadyTaskNum() == 0 {
			delete(ft.lost, key)
			continue
		}
		if s.rt.preemption.Holds.Has(key) {
			// Its replacements are held where its preemption placed them.
			continue
		}
		for _, lp := range ft.lost[key] {
			if now.Sub(lp.since) > s.args.ReplacementHold {
				continue
			}
			if a, ok := s.roomFor(job, lp); ok {
				holder := replacePrefix + lp.uid
				s.state.AddHold(holder, a)
				s.replaceHeld[job.UID] = append(s.replaceHeld[job.UID], heldRoom{holder: holder, a: a})
				klog.V(3).InfoS("Keeping room for a lost pod's replacement", "job", key, "pod", lp.name, "node", a.Node, "nics", a.NICs())
			}
		}
	}
}

// roomFor finds room of the lost pod's shape for its gang: on a node the
// gang holds, then under the gang's leaves, then under the leaves of its
// S1s, as far as the gang's hard tier allows; never on a failed node or
// leaf.
func (s *SessionState) roomFor(job *api.JobInfo, lp lostPod) (placement.Assignment, bool) {
	failed := map[topology.S0ID]bool{}
	for _, id := range s.rt.faults.failedLeafIDs() {
		failed[id] = true
	}
	leaves := map[topology.S0ID]bool{}
	for _, id := range lp.leaves {
		if !failed[id] {
			leaves[id] = true
		}
	}
	s1Leaves := map[topology.S0ID]bool{}
	for _, s1 := range lp.s1s {
		for _, id := range s.fabric.LeavesOf(s1) {
			if !failed[id] {
				s1Leaves[id] = true
			}
		}
	}
	var held []string
	for _, r := range s.byJob[job.UID] {
		if !slices.Contains(held, r.Node) {
			held = append(held, r.Node)
		}
	}
	slices.Sort(held)
	stages := []struct {
		nodes   []string
		allowed map[topology.S0ID]bool
	}{{held, leaves}, {s.nodesUnder(leaves), leaves}, {s.nodesUnder(s1Leaves), s1Leaves}}
	// Never room the gang's hard tier forbids it: a hard node gang grows
	// on its node, a hard s0 gang under its leaves.
	if c, _, err := s.effectiveContract(job); err == nil && c.Mode == placement.ModeHard {
		switch c.HighestTier {
		case placement.TierNode:
			stages = stages[:1]
		case placement.TierS0:
			stages = stages[:2]
		}
	}
	for _, st := range stages {
		if len(st.allowed) == 0 {
			continue
		}
		for _, node := range st.nodes {
			if !s.state.Usable(node) || nodeFailure(s.ssn.Nodes[node]) != "" {
				continue
			}
			if a, ok := s.state.Fit(node, lp.shape, st.allowed); ok {
				return a, true
			}
		}
	}
	return placement.Assignment{}, false
}

// withHome returns g with the leaves its gang held when it lost the pods
// it now replaces (every lost pod recorded for it, failed leaves left
// out) as its occupancy's Home, so the planner puts the replacements back
// there first (core/placement neighbours.go). A gang that holds no
// pod or lost none is returned as it is; g's occupancy is not changed.
func (s *SessionState) withHome(g placement.Gang) placement.Gang {
	if g.Occupancy == nil || len(g.Occupancy.Ranks) == 0 {
		return g
	}
	lost := s.rt.faults.lost[g.Job]
	if len(lost) == 0 {
		return g
	}
	failed := map[topology.S0ID]bool{}
	for _, id := range s.rt.faults.failedLeafIDs() {
		failed[id] = true
	}
	home := map[topology.S0ID]bool{}
	for _, lp := range lost {
		for _, id := range lp.leaves {
			if !failed[id] {
				home[id] = true
			}
		}
	}
	if len(home) == 0 {
		return g
	}
	occ := *g.Occupancy
	occ.Home = home
	g.Occupancy = &occ
	return g
}

// nodesUnder lists the nodes with a NIC under the leaves, sorted.
func (s *SessionState) nodesUnder(leaves map[topology.S0ID]bool) []string {
	seen := map[string]bool{}
	var out []string
	for id := range leaves {
		l, ok := s.fabric.Leaf(id)
		if !ok {
			continue
		}
		for _, sl := range l.Slots {
			if !seen[sl.Node.Name] {
				seen[sl.Node.Name] = true
				out = append(out, sl.Node.Name)
			}
		}
	}
	sort.Strings(out)
	return out
}

// releaseReplacements gives the room kept for the job's lost pods back to
// its planning; keepReplacements keeps it again (nothing was planned).
func (s *SessionState) releaseReplacements(job api.JobID) []heldRoom {
	s.mu.Lock()
	rooms := s.replaceHeld[job]
	delete(s.replaceHeld, job)
	s.mu.Unlock()
	for _, r := range rooms {
		s.state.RemoveHold(r.holder, r.a)
	}
	return rooms
}

func (s *SessionState) keepReplacements(job api.JobID, rooms []heldRoom) {
	if len(rooms) == 0 {
		return
	}
	for _, r := range rooms {
		s.state.AddHold(r.holder, r.a)
	}
	s.mu.Lock()
	s.replaceHeld[job] = append(s.replaceHeld[job], rooms...)
	s.mu.Unlock()
}

// reportReplacements, when the session closes, matches the pods of gangs
// with losses that the session sent to bind with the pods lost (by name,
// as job controllers re-create them, else in the order lost), records a
// ReplacementPlaced Event on each gang's PodGroup and counts the
// replacement by where it went.
func (s *SessionState) reportReplacements() {
	ft := s.rt.faults
	for _, key := range sortedLostJobs(ft.lost) {
		job := s.ssn.Jobs[api.JobID(key)]
		if job == nil {
			continue
		}
		var sent []*api.TaskInfo
		s.mu.Lock()
		for uid, b := range s.allocated {
			if b.job != job.UID || !b.task.RDMA {
				continue
			}
			if t := job.Tasks[uid]; t != nil && t.Status == api.Binding {
				sent = append(sent, t)
			}
		}
		s.mu.Unlock()
		if len(sent) == 0 {
			continue
		}
		sort.Slice(sent, func(i, j int) bool { return sent[i].Name < sent[j].Name })
		lost := ft.lost[key]
		for _, t := range sent {
			i := slices.IndexFunc(lost, func(lp lostPod) bool { return lp.name == t.Name })
			if i < 0 {
				i = 0
				if len(lost) == 0 {
					break
				}
			}
			lp := lost[i]
			lost = slices.Delete(lost, i, i+1)
			s.reportReplacement(job, lp, t)
		}
		if len(lost) == 0 {
			delete(ft.lost, key)
		} else {
			ft.lost[key] = lost
		}
	}
}

// reportReplacement records one replacement.
func (s *SessionState) reportReplacement(job *api.JobInfo, lp lostPod, t *api.TaskInfo) {
	r, _ := s.rt.Ledger.Get(string(t.UID))
	leaves := s.leavesOf(r.Node, r.NICs())
	within := "wider"
	switch {
	case len(leaves) > 0 && allIn(leaves, lp.leaves):
		within = "leaf"
	case len(leaves) > 0 && allIn(s1sOf(s.fabric, leaves), lp.s1s):
		within = "s1"
	}
	replacements.WithLabelValues(within).Inc()
	cause := lp.cause
	if cause == "" {
		cause = "the pod was deleted or failed"
	}
	where := map[string]string{"leaf": "a leaf the gang holds", "s1": "the gang's S1, outside its leaves", "wider": "outside the gang's S1"}[within]
	msg := fmt.Sprintf("pod %s lost on node %s (%s); replacement %s placed on node %s, NICs %s under leaf %s: %s",
		lp.name, lp.node, cause, t.Name, r.Node, joinNICs(r.NICs()), joinLeaves(leaves), where)
	klog.InfoS("Replacement placed", "job", klog.KRef(job.Namespace, job.Name), "pod", klog.KRef(t.Namespace, t.Name),
		"lostOn", lp.node, "cause", cause, "node", r.Node, "within", within)
	if s.rt.recorder != nil && job.PodGroup != nil {
		ref := &v1.ObjectReference{Kind: "PodGroup", APIVersion: "scheduling.volcano.sh/v1beta1",
			Namespace: job.Namespace, Name: job.PodGroup.Name, UID: job.PodGroup.UID}
		s.rt.recorder.Event(ref, v1.EventTypeNormal, ReasonReplacementPlaced, msg)
	}
}

func s1sOf(f *topology.Fabric, leaves []topology.S0ID) []topology.S1ID {
	var out []topology.S1ID
	for _, id := range leaves {
		if l, ok := f.Leaf(id); ok && !slices.Contains(out, l.S1) {
			out = append(out, l.S1)
		}
	}
	return out
}

func allIn[T comparable](xs, set []T) bool {
	for _, x := range xs {
		if !slices.Contains(set, x) {
			return false
		}
	}
	return true
}

func joinNICs(nics []topology.NICID) string {
	out := make([]string, len(nics))
	for i, n := range nics {
		out[i] = string(n)
	}
	return strings.Join(out, ",")
}

func joinLeaves(leaves []topology.S0ID) string {
	out := make([]string, len(leaves))
	for i, n := range leaves {
		out[i] = string(n)
	}
	return strings.Join(out, ",")
}

func sortedLostJobs(m map[string][]lostPod) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func sortedJobIDs(m map[api.JobID][]heldRoom) []api.JobID {
	out := make([]api.JobID, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
