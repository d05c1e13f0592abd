// Package explain says why a gang waits, or where it sits, on the live
// state of a cluster: the planner (core/placement) runs over the
// fabric the KCNRs describe minus every NIC bound pods hold, with the
// gang's own contract, and each leaf is probed for how many of the gang's
// pods it could hold alone and who holds its NICs.
package explain

import (
	"fmt"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	schedulingv1beta1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"

	"github.com/rdmatopo/rdmatopo/core/kube"
	"github.com/rdmatopo/rdmatopo/core/ledger"
	"github.com/rdmatopo/rdmatopo/core/placement"
	"github.com/rdmatopo/rdmatopo/core/topology"
	"github.com/rdmatopo/rdmatopo/internal/fabricview"
	"github.com/rdmatopo/rdmatopo/internal/live"
)

// MaxLeaves is how many leaves an explanation lists.
const MaxLeaves = 5

// States of a gang.
const (
	StatePlaced  = "placed"
	StateWaiting = "waiting"
)

// Contract is the gang's job contract as read from its PodGroup.
type Contract struct {
	Mode         string `json:"mode"`
	HighestTier  string `json:"highestTier"`
	MaxWait      string `json:"maxWait"`
	WaitingSince string `json:"waitingSince"`
	// Error names the annotations that cannot be read (the scheduler then
	// keeps the gang pending with reason InvalidAnnotation).
	Error string `json:"error"`
}

// Placement is a set of nodes and leaves and its tier.
type Placement struct {
	Tier  string   `json:"tier"`
	Nodes []string `json:"nodes"`
	S0    []string `json:"s0"`
	S1    []string `json:"s1"`
}

// LeafFit is what one leaf could give the gang now.
type LeafFit struct {
	S0 string `json:"s0"`
	S1 string `json:"s1"`
	// Pods is how many of the gang's pending pods fit under the leaf
	// alone (of Need pods needed).
	Pods int `json:"pods"`
	// FreeNICs and NICs count the leaf's NICs.
	FreeNICs int `json:"freeNICs"`
	NICs     int `json:"nics"`
	// HeldBy lists the jobs holding the leaf's NICs, with NIC counts.
	HeldBy map[string]int `json:"heldBy"`
}

// Explanation is the answer for one gang.
type Explanation struct {
	Namespace string `json:"namespace"`
	PodGroup  string `json:"podGroup"`
	// From is the PodGroup's controller ("Job/llm", "PyTorchJob/bert").
	From      string   `json:"from"`
	Phase     string   `json:"phase"`
	MinMember int32    `json:"minMember"`
	Pods      int      `json:"pods"`
	Bound     int      `json:"bound"`
	State     string   `json:"state"`
	Contract  Contract `json:"contract"`
	// Shape is the largest pending pod's need ("4 GPU + 2 RDMA").
	Shape string `json:"shape"`
	// Current is where the bound pods sit (nil when none is bound).
	Current *Placement `json:"current"`
	// Ranked lists the bound pods in rank order, with their node and
	// leaves (empty when none is bound or a rank annotation is invalid).
	Ranked []RankedPod `json:"ranked"`
	// RingCrossings counts the leaf changes along the ring over the bound
	// pods that hold NICs, in rank order (nil when Ranked is empty).
	RingCrossings *int `json:"ringCrossings"`
	// Plan is where the planner would place the pending pods now (nil
	// when it cannot, or nothing is pending).
	Plan *Placement `json:"plan"`
	// Blocked says why the planner cannot place the gang now.
	Blocked string `json:"blocked"`
	// Leaves are the best leaves for the gang, best first.
	Leaves []LeafFit `json:"leaves"`
	// Scheduler is what the scheduler last wrote on the PodGroup.
	Scheduler string `json:"scheduler"`
	// OtherSchedulers lists, per scheduler name other than Volcano's, the
	// gang's pending pods that name it in spec.schedulerName (the API
	// server writes "default-scheduler" into a pod that names none): that
	// scheduler, not Volcano's, places them.
	OtherSchedulers map[string][]string `json:"otherSchedulers,omitempty"`
	// Notes are further remarks (non-RDMA gang, gang fits now, ...).
	Notes []string `json:"notes"`
	// FailedLeaves are the cluster's failed leaves, with the gangs that
	// lost pods under each (faults.go).
	FailedLeaves []FailedLeaf `json:"failedLeaves"`
}

// VolcanoSchedulerName is the schedulerName Volcano's scheduler takes pods
// for (vc-scheduler's --scheduler-name default, and what every install
// route keeps).
const VolcanoSchedulerName = "volcano"

// DefaultSchedulerName is what the API server writes into a pod's
// spec.schedulerName when the pod names none.
const DefaultSchedulerName = corev1.DefaultSchedulerName

// otherSchedulers groups the pending pods that another scheduler than
// Volcano's is asked to place, by that scheduler's name.
func otherSchedulers(pending []*corev1.Pod) map[string][]string {
	var out map[string][]string
	for _, p := range pending {
		// An API server never stores an empty name (it defaults it); an
		// object read from elsewhere without one is not judged.
		name := p.Spec.SchedulerName
		if name == "" || name == VolcanoSchedulerName {
			continue
		}
		if out == nil {
			out = map[string][]string{}
		}
		out[name] = append(out[name], p.Name)
	}
	return out
}

// RankedPod is one bound pod of the gang: its rank, node and leaves.
type RankedPod struct {
	Pod  string   `json:"pod"`
	Rank int      `json:"rank"`
	Node string   `json:"node"`
	S0   []string `json:"s0"`
}

// Explain computes the explanation of one PodGroup on a snapshot.
func Explain(cfg topology.Config, snap *live.Snapshot, pg *schedulingv1beta1.PodGroup) *Explanation {
	cfg = cfg.WithDefaults()
	bound, pending := snap.PodsOf(pg.Namespace, pg.Name)
	e := &Explanation{
		Namespace: pg.Namespace, PodGroup: pg.Name, From: live.OwnerOf(pg), Phase: string(pg.Status.Phase),
		MinMember: pg.Spec.MinMember, Pods: len(bound) + len(pending), Bound: len(bound),
		Leaves: []LeafFit{}, Notes: []string{}, Ranked: []RankedPod{},
	}
	e.FailedLeaves = FailedLeaves(cfg, snap.Cluster.CNRs, snap.PodGroups)
	e.State = StateWaiting
	if len(bound) > 0 && int32(len(bound)) >= pg.Spec.MinMember {
		e.State = StatePlaced
	}
	contract, cerr := e.readContract(cfg, snap, pg, bound, pending)
	for _, j := range snap.Jobs(cfg.RDMAResource) {
		if j.Namespace == pg.Namespace && j.Name == pg.Name && !j.Placed {
			e.Scheduler = j.Reason
		}
	}
	e.noteOtherSchedulers(pending)

	view := fabricview.Build(cfg, snap.Cluster)
	f := view.Fabric()
	reserved, _ := ledger.Rebuild(cfg, snap.Cluster.Pods, f)
	if len(bound) > 0 {
		e.Current = where(f, reserved, bound)
		e.Ranked, e.RingCrossings = ranked(f, reserved, bound, pending, snap.JobTasks)
	}
	g := pendingGang(cfg, f, reserved, bound, pending, snap.JobTasks)
	if cerr == nil {
		cerr = g.rankErr
	}
	if len(pending) == 0 {
		return e
	}
	if len(g.pods) == 0 {
		note := "no pending pod requests " + cfg.RDMAResource + ": its pods are placed as stock Volcano's allocate places them"
		if tier := confinedTier(contract); tier != "" {
			note += ", within one " + tier + " domain (" + tierDomain[tier] + ")"
		}
		e.Notes = append(e.Notes, note)
		return e
	}
	main := g.pods[0].Shape
	for _, p := range g.pods[1:] {
		if p.Shape.NICs > main.NICs || (p.Shape.NICs == main.NICs && p.Shape.GPU > main.GPU) {
			main = p.Shape
		}
	}
	e.Shape = main.String()
	need := min(max(int(pg.Spec.MinMember)-len(bound), 1), len(g.pods))

	nodes := sessionNodes(snap.Cluster, corev1.ResourceName(cfg.GPUResource), corev1.ResourceName(cfg.RDMAResource))
	st := placement.NewState(f, reserved)
	for name, n := range nodes {
		kube.LimitNode(st, name, n.node, n.free)
	}
	kube.LimitMissing(st, func(name string) bool { _, ok := nodes[name]; return ok })
	gang := placement.Gang{Job: pg.Namespace + "/" + pg.Name, Pods: g.pods, Need: need,
		Mode: contract.Mode, HighestTier: contract.HighestTier, Occupancy: g.occupancy, Segment: contract.Segment, Members: g.members,
		Allowed: func(node string, group int) bool {
			ni, ok := nodes[node]
			return ok && admits(g.reps[group], ni.node)
		}}
	e.planNow(st, gang, contract, cerr)
	e.Leaves = bestLeaves(st, view, main, len(g.pods), func(node string) bool {
		for i := range g.reps {
			if gang.Allowed(node, i) {
				return true
			}
		}
		return false
	})
	return e
}

// readContract reads the gang's contract as the scheduler reads it, into
// e.Contract and e.Notes; the error is the contract's.
func (e *Explanation) readContract(cfg topology.Config, snap *live.Snapshot, pg *schedulingv1beta1.PodGroup, bound, pending []*corev1.Pod) (placement.Contract, error) {
	hyper, _ := topology.NewHyperNodeIndex(cfg.S1HyperNodeTier, snap.Cluster.HyperNodes)
	contract, problems := placement.ReadGangContract(placement.ContractInput{Group: pg.Annotations, Native: snap.NativeOf(pg.Namespace, pg.Name),
		MinMember: pg.Spec.MinMember, Tiers: placement.VolcanoTiers{S1Tier: cfg.S1HyperNodeTier, Names: hyper.TierNames()},
		Pods: placement.MembersOf(append(append([]*corev1.Pod(nil), bound...), pending...))})
	cerr := placement.ContractErr(problems)
	if len(contract.Overridden) > 0 {
		e.Notes = append(e.Notes, "contract settings overridden by a layer of higher precedence: "+strings.Join(contract.Overridden, "; "))
	}
	e.Contract = Contract{Mode: contract.Mode.String(), HighestTier: contract.HighestTier.String(),
		WaitingSince: pg.Annotations[ledger.AnnotationWaitingSince]}
	if contract.MaxWait > 0 {
		e.Contract.MaxWait = contract.MaxWait.String()
	}
	if cerr != nil {
		e.Contract.Error = cerr.Error()
	}
	return contract, cerr
}

// noteOtherSchedulers notes the pending pods that wait for another
// scheduler than Volcano's.
func (e *Explanation) noteOtherSchedulers(pending []*corev1.Pod) {
	if e.OtherSchedulers = otherSchedulers(pending); e.OtherSchedulers == nil {
		return
	}
	names := make([]string, 0, len(e.OtherSchedulers))
	for n := range e.OtherSchedulers {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		pods := e.OtherSchedulers[n]
		e.Notes = append(e.Notes, fmt.Sprintf("%d pending pod(s) (%s) wait for the scheduler %q%s, not Volcano's %q: "+
			"Volcano and rdmatopo never place them; pods of a plain PodGroup need spec.schedulerName: %s",
			len(pods), strings.Join(firstN(pods, 3), ", "), n, schedulerNameSource(n), VolcanoSchedulerName, VolcanoSchedulerName))
	}
}

// gangToPlan is the gang's pending RDMA pods as the scheduler would plan
// them, and what its bound pods hold.
type gangToPlan struct {
	// pods are the pending pods that request RDMA NICs, in rank order;
	// a pod's Group indexes reps, its pod object.
	pods []placement.Pod
	reps []*corev1.Pod
	// occupancy is what the bound pods occupy, their ranks included.
	occupancy *placement.Occupancy
	// members counts the ranked pods (pending and holding NICs); 0 when
	// the ranks are invalid (rankErr).
	members int
	rankErr error
}

// pendingGang reads the pending pods that request RDMA NICs and ranks
// them as the scheduler ranks a gang (kube.RanksOf, a Volcano
// Job's tasks in spec order when the snapshot has the Job, else by name),
// over the pending RDMA pods and the bound pods that hold NICs: the pods in
// rank order, the held ones with theirs, so that late pods are planned
// next to their neighbours.
func pendingGang(cfg topology.Config, f *topology.Fabric, reserved *ledger.Ledger, bound, pending []*corev1.Pod,
	tasks func(namespace, job string) []string) gangToPlan {
	gpu, rdma := corev1.ResourceName(cfg.GPUResource), corev1.ResourceName(cfg.RDMAResource)
	var g gangToPlan
	for _, p := range pending {
		sh := sessionShape(p, gpu, rdma)
		if sh.NICs <= 0 {
			continue
		}
		g.pods = append(g.pods, placement.Pod{UID: string(p.UID), Name: p.Namespace + "/" + p.Name, Shape: sh, Group: len(g.reps)})
		g.reps = append(g.reps, p)
	}
	g.occupancy = occupancyOf(f, reserved, bound)
	var holding []*corev1.Pod
	for _, p := range bound {
		if _, ok := reserved.Get(string(p.UID)); ok {
			holding = append(holding, p)
		}
	}
	rank, err := kube.RanksOf(append(append([]*corev1.Pod(nil), g.reps...), holding...), tasks)
	if err != nil {
		g.rankErr = err
		return g
	}
	for i := range g.pods {
		g.pods[i].Rank = rank[i]
	}
	sort.SliceStable(g.pods, func(i, j int) bool { return g.pods[i].Rank < g.pods[j].Rank })
	for i, p := range holding {
		r, _ := reserved.Get(string(p.UID))
		leaves := f.NICLeaves(r.Node, r.NICs())
		sort.Slice(leaves, func(a, b int) bool { return leaves[a] < leaves[b] })
		g.occupancy.Ranks = append(g.occupancy.Ranks, placement.OccupiedRank{Rank: rank[len(g.reps)+i], Node: r.Node, Leaves: leaves})
	}
	sort.SliceStable(g.occupancy.Ranks, func(i, j int) bool { return g.occupancy.Ranks[i].Rank < g.occupancy.Ranks[j].Rank })
	g.members = len(g.reps) + len(holding)
	return g
}

// planNow plans the gang on the state now, into e.Plan or e.Blocked (the
// contract's error, cerr, first).
func (e *Explanation) planNow(st *placement.State, gang placement.Gang, contract placement.Contract, cerr error) {
	switch plan, fail := st.Plan(gang); {
	case cerr != nil:
		e.Blocked = string(placement.ReasonInvalidContract) + ": " + cerr.Error()
	case plan != nil:
		p := &Placement{Tier: plan.Tier.String(), S0: ids(plan.S0s), S1: s1s(plan.S1s)}
		seen := map[string]bool{}
		for _, a := range plan.Assignments {
			if !seen[a.Node] {
				seen[a.Node] = true
				p.Nodes = append(p.Nodes, a.Node)
			}
		}
		sort.Strings(p.Nodes)
		e.Plan = p
		if e.State == StateWaiting && e.OtherSchedulers == nil {
			e.Notes = append(e.Notes, fmt.Sprintf("the fabric holds %d of the gang's pods now at tier %s: it waits for something else (queue, quota, node conditions, a room an older waiting gang of its priority claims, the next scheduling cycle); see the scheduler's message", len(plan.Assignments), p.Tier))
		}
	case fail != nil:
		e.Blocked = string(fail.Code) + ": " + fail.Message
		if contract.Mode == placement.ModeHard && contract.MaxWait > 0 && e.Contract.WaitingSince != "" {
			if since, err := time.Parse(time.RFC3339, e.Contract.WaitingSince); err == nil {
				e.Notes = append(e.Notes, fmt.Sprintf("hard until %s (max-wait %s), then placed as soft",
					since.Add(contract.MaxWait).UTC().Format(time.RFC3339), contract.MaxWait))
			}
		}
	}
}

// where is the placement of the bound pods, by their reservations.
func where(f *topology.Fabric, l *ledger.Ledger, bound []*corev1.Pod) *Placement {
	h := occupancyOf(f, l, bound)
	p := &Placement{Nodes: []string{}}
	for n := range h.Nodes {
		p.Nodes = append(p.Nodes, n)
	}
	sort.Strings(p.Nodes)
	var s0 []topology.S0ID
	for id := range h.S0s {
		s0 = append(s0, id)
	}
	var s1 []topology.S1ID
	for id := range h.S1s {
		s1 = append(s1, id)
	}
	sort.Slice(s0, func(i, j int) bool { return s0[i] < s0[j] })
	sort.Slice(s1, func(i, j int) bool { return s1[i] < s1[j] })
	p.S0, p.S1 = ids(s0), s1s(s1)
	if len(s0) > 0 {
		p.Tier = placement.TierOf(len(h.Nodes), len(s0), max(len(s1), 1)).String()
	}
	return p
}

// ranked returns the bound pods in rank order (ranks over the whole gang,
// as kube.RanksOf reads them, tasks giving a Volcano Job's task
// order) with their leaves, and the leaf changes
// along the ring over those that hold NICs; nothing when a rank is
// invalid.
func ranked(f *topology.Fabric, l *ledger.Ledger, bound, pending []*corev1.Pod, tasks func(namespace, job string) []string) ([]RankedPod, *int) {
	all := append(append([]*corev1.Pod(nil), bound...), pending...)
	rank, err := kube.RanksOf(all, tasks)
	if err != nil {
		return []RankedPod{}, nil
	}
	out := make([]RankedPod, 0, len(bound))
	for i, p := range bound {
		rp := RankedPod{Pod: p.Namespace + "/" + p.Name, Rank: rank[i], Node: p.Spec.NodeName, S0: []string{}}
		if r, ok := l.Get(string(p.UID)); ok {
			rp.S0 = ids(f.NICLeaves(r.Node, r.NICs()))
			sort.Strings(rp.S0)
		}
		out = append(out, rp)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Rank < out[j].Rank })
	var ring []string
	for _, rp := range out {
		if len(rp.S0) > 0 {
			ring = append(ring, strings.Join(rp.S0, ","))
		}
	}
	n := placement.RingCrossings(ring)
	return out, &n
}

// occupancyOf is what the bound pods of a gang occupy.
func occupancyOf(f *topology.Fabric, l *ledger.Ledger, bound []*corev1.Pod) *placement.Occupancy {
	h := &placement.Occupancy{Nodes: map[string]bool{}, S0s: map[topology.S0ID]bool{}, S1s: map[topology.S1ID]bool{}}
	for _, p := range bound {
		h.Nodes[p.Spec.NodeName] = true
		r, ok := l.Get(string(p.UID))
		if !ok {
			continue
		}
		h.Pods++
		for _, id := range f.NICLeaves(r.Node, r.NICs()) {
			h.S0s[id] = true
			if leaf, ok := f.Leaf(id); ok {
				h.S1s[leaf.S1] = true
			}
		}
	}
	return h
}

// bestLeaves probes every known leaf: how many pods of the main shape it
// holds alone (up to want) on the nodes admit accepts, its free NICs and
// holders; best first.
func bestLeaves(st *placement.State, v *fabricview.View, sh placement.Shape, want int, admit func(node string) bool) []LeafFit {
	f := st.Fabric()
	rows := map[string]fabricview.Leaf{}
	for _, r := range v.Leaves {
		rows[r.S0] = r
	}
	var out []LeafFit
	probe := 0
	for _, id := range f.LeafIDs() {
		if id.IsUnknown() {
			continue
		}
		leaf, _ := f.Leaf(id)
		allowed := map[topology.S0ID]bool{id: true}
		type applied struct {
			uid string
			a   placement.Assignment
		}
		var done []applied
		last := ""
		for _, s := range leaf.Slots {
			if s.Node.Name == last {
				continue
			}
			last = s.Node.Name
			if !admit(last) {
				continue
			}
			for len(done) < want {
				a, ok := st.Fit(s.Node.Name, sh, allowed)
				if !ok {
					break
				}
				probe++
				uid := fmt.Sprintf("explain-probe-%d", probe)
				st.Apply(uid, a)
				done = append(done, applied{uid, a})
			}
		}
		for _, d := range done {
			st.Unapply(d.uid, d.a)
		}
		r := rows[string(id)]
		out = append(out, LeafFit{S0: string(id), S1: string(leaf.S1), Pods: len(done),
			FreeNICs: r.Free, NICs: r.NICs, HeldBy: r.Holders})
	}
	sort.SliceStable(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.Pods != b.Pods {
			return a.Pods > b.Pods
		}
		if a.FreeNICs != b.FreeNICs {
			return a.FreeNICs > b.FreeNICs
		}
		return a.S0 < b.S0
	})
	if len(out) > MaxLeaves {
		out = out[:MaxLeaves]
	}
	return out
}

func ids(in []topology.S0ID) []string {
	out := make([]string, 0, len(in))
	for _, id := range in {
		out = append(out, string(id))
	}
	return out
}

func s1s(in []topology.S1ID) []string {
	out := make([]string, 0, len(in))
	for _, id := range in {
		if id != "" {
			out = append(out, string(id))
		}
	}
	return out
}

// tierDomain says what one domain of a tier is for pods without RDMA NICs.
var tierDomain = map[string]string{
	"node": "one node",
	"s0":   "the nodes with a NIC under one leaf",
	"s1":   "the nodes of one S1",
}

// confinedTier is the tier a gang whose pods request no RDMA NICs is kept
// within as a whole (rdmatopology.SessionState.Confine): its hard highest tier
// ("" when it limits nothing).
func confinedTier(c placement.Contract) string {
	tier := placement.TierCluster
	if c.Mode == placement.ModeHard && c.HighestTier >= placement.TierNode {
		tier = c.HighestTier
	}
	if tier == placement.TierCluster {
		return ""
	}
	return tier.String()
}
