package soak

// Hardware faults injected into the soak (--faults nic,leaf,node,flap), as a
// cluster shows them to the scheduler:
//
//   - nic: a NIC held by a running pod disappears from its KCNR's zones for
//     FaultFor cycles;
//   - leaf: every NIC under a leaf that a running gang uses is listed with
//     allocatable 0 for FaultFor cycles;
//   - node: a node with running pods turns NotReady (Ready False, taint
//     node.kubernetes.io/not-ready:NoExecute) for FaultFor cycles;
//   - flap: a NIC fails and comes back flapCount times, one cycle each way
//     (the scheduler then keeps it out for its cool-down).
//
// The pods on failed hardware fail: they are deleted (their KCNR entries go
// after the lag) and, ReplaceAfter cycles later, the job controller
// re-creates each under its name with a new UID, as Volcano's job
// controller and the training operator do. The rest of the gang runs on.
//
// The checker grades, from the objects and the faults it was told of (never
// from the scheduler's memory): no pod is bound onto failed hardware, nor
// onto a NIC in the cool-down the scheduler's arguments give it
// (placedOnFailed), and where each replacement landed: within tier when
// its NICs are under leaves its gang held when the pod was lost, or under
// its gang's S1s while no usable node under those leaves had room for it
// in the view the session started from.

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/kubewharf/katalyst-api/pkg/apis/node/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/rdmatopo/rdmatopo/core/ledger"
	"github.com/rdmatopo/rdmatopo/core/topology"
	"github.com/rdmatopo/rdmatopo/internal/testing/builders"
	"github.com/rdmatopo/rdmatopo/plugins/rdmatopology"
)

// Fault kinds of Config.Faults.
const (
	FaultNIC  = "nic"
	FaultLeaf = "leaf"
	FaultNode = "node"
	FaultFlap = "flap"
)

// The rdma-topology arguments the soak runs its faults with (one cycle is
// one simulated second), and what the checker expects of them.
const (
	soakFlapCount       = 3
	soakFlapWindow      = 60 // cycles
	soakCooldown        = 40 // cycles
	soakReplacementHold = 20 // cycles
)

// faultArgs are the lines added under the rdma-topology plugin's arguments
// of the soak's conf when faults are injected.
var faultArgs = fmt.Sprintf("      nicFlapCount: %d\n      nicFlapWindow: %ds\n      nicCooldown: %ds\n      replacementHold: %ds\n",
	soakFlapCount, soakFlapWindow, soakCooldown, soakReplacementHold)

// ParseFaults reads a comma-separated list of fault kinds.
func ParseFaults(s string) ([]string, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	var out []string
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		switch f {
		case FaultNIC, FaultLeaf, FaultNode, FaultFlap:
			if !slices.Contains(out, f) {
				out = append(out, f)
			}
		default:
			return nil, fmt.Errorf("unknown fault %q (want nic, leaf, node or flap)", f)
		}
	}
	return out, nil
}

// nicFault is how a failed NIC shows in its KCNR.
type nicFault struct {
	// zero: listed with allocatable 0; else gone from its zone.
	zero bool
	// until is the cycle before which it is back.
	until int
}

// faults is the soak's fault state.
type faults struct {
	kinds []string
	// next is the index of the next kind to inject.
	next int
	nics map[nicKey]nicFault
	// nodes maps a NotReady node to the cycle before which it is back.
	nodes map[string]int
	// flaps are the scheduled flap transitions.
	flaps []flapStep
	// history is each NIC's outages, in session cycles.
	history map[nicKey][]outage
	// restart is the cycle of the last scheduler restart.
	restart int
	// replace are the pods to re-create.
	replace []replacement
	// lost maps a lost pod ("namespace/name") awaiting its replacement's
	// bind to what the gang held when it was lost.
	lost map[string]loss
	// wholeLost holds the gangs that lost every bound pod to a fault: they
	// are partial meanwhile only as a gang being placed again is.
	wholeLost map[string]bool
}

// outage is one failure of a NIC: down in the sessions of cycles
// [start, until).
type outage struct{ start, until int }

// down fails a NIC for the sessions of cycles [start, until). A NIC already
// down stays down until the later end: the scheduler sees one failure.
func (f *faults) down(k nicKey, start, until int, zero bool) {
	if nf, ok := f.nics[k]; ok {
		nf.until = max(nf.until, until)
		f.nics[k] = nf
		if h := f.history[k]; len(h) > 0 {
			h[len(h)-1].until = nf.until
		}
		return
	}
	f.nics[k] = nicFault{zero: zero, until: until}
	f.history[k] = append(f.history[k], outage{start, until})
}

// flapStep is one transition of a flapping NIC before cycle at.
type flapStep struct {
	at   int
	nic  nicKey
	down bool
}

// replacement is a pod to re-create before cycle due.
type replacement struct {
	due  int
	job  string
	pod  *corev1.Pod
	kind string
}

// loss is what a gang held when it lost a pod.
type loss struct {
	gang   string
	cycle  int
	kind   string
	leaves []topology.S0ID
	s1s    []topology.S1ID
}

func newFaults(kinds []string) *faults {
	return &faults{kinds: kinds, nics: map[nicKey]nicFault{}, nodes: map[string]int{}, history: map[nicKey][]outage{},
		lost: map[string]loss{}, wholeLost: map[string]bool{}}
}

// down reports whether a NIC is failed (as of the session about to run).
func (f *faults) nicDown(k nicKey) bool {
	_, ok := f.nics[k]
	return ok
}

// cooling reports whether the scheduler, with the soak's arguments, must
// keep the NIC out at cycle: it is up, and failed soakFlapCount times within
// soakFlapWindow cycles, the last of them less than soakCooldown + 1 cycles
// ago (it came back the cycle after), all after the last restart (a
// restart forgets failures).
func (f *faults) cooling(k nicKey, cycle int) bool {
	if f.nicDown(k) {
		return false
	}
	h := f.history[k]
	n := len(h)
	if n < soakFlapCount {
		return false
	}
	// The scheduler sees the NIC back in the session its last outage ends
	// in, and counts the failures within the window back from then.
	back := h[n-1].until
	first := h[n-soakFlapCount].start
	if first <= f.restart {
		return false
	}
	return back-first <= soakFlapWindow && cycle >= back && cycle < back+soakCooldown
}

// applyToCNR shows the failed NICs of the node in its KCNR.
func (f *faults) applyToCNR(cnr *v1alpha1.CustomNodeResource, rdma corev1.ResourceName) {
	if cnr == nil {
		return
	}
	for _, sock := range cnr.Status.TopologyZone {
		if sock == nil {
			continue
		}
		for _, numa := range sock.Children {
			if numa == nil {
				continue
			}
			kept := numa.Children[:0]
			for _, z := range numa.Children {
				if z == nil || z.Type != v1alpha1.TopologyTypeNIC {
					kept = append(kept, z)
					continue
				}
				nf, failed := f.nics[nicKey{cnr.Name, topology.NormalizeNICName(z.Name)}]
				switch {
				case !failed:
					kept = append(kept, z)
				case nf.zero:
					if z.Resources.Allocatable == nil {
						l := corev1.ResourceList{}
						z.Resources.Allocatable = &l
					}
					(*z.Resources.Allocatable)[rdma] = resource.MustParse("0")
					kept = append(kept, z)
				}
			}
			numa.Children = kept
		}
	}
}

// notReady returns a NotReady copy of a node, tainted as the node
// lifecycle controller taints it.
func notReady(n *corev1.Node) *corev1.Node {
	c := n.DeepCopy()
	found := false
	for i := range c.Status.Conditions {
		if c.Status.Conditions[i].Type == corev1.NodeReady {
			c.Status.Conditions[i].Status = corev1.ConditionFalse
			found = true
		}
	}
	if !found {
		c.Status.Conditions = append(c.Status.Conditions, corev1.NodeCondition{Type: corev1.NodeReady, Status: corev1.ConditionFalse})
	}
	c.Spec.Taints = append(c.Spec.Taints, corev1.Taint{Key: corev1.TaintNodeNotReady, Effect: corev1.TaintEffectNoExecute,
		TimeAdded: &metav1.Time{}})
	return c
}

// injectFaults runs before cycle next: faults that end are lifted, flaps
// step, and every FaultEvery cycles a new fault of the next kind is
// injected; pods due to be re-created are.
func (r *runner) injectFaults(next int) error {
	f := r.faults
	changed := map[string]bool{}
	for k, nf := range f.nics {
		if nf.until <= next {
			delete(f.nics, k)
			changed[k.node] = true
		}
	}
	for _, name := range sortedKeys(boolSet2(f.nodes)) {
		if f.nodes[name] <= next {
			delete(f.nodes, name)
			if _, away := r.drained[name]; !away {
				r.sim.UpsertNode(r.nodes[name])
			}
		}
	}
	rest := f.flaps[:0]
	for _, st := range f.flaps {
		if st.at > next {
			rest = append(rest, st)
			continue
		}
		if _, away := r.drained[st.nic.node]; away {
			continue
		}
		if st.down {
			f.down(st.nic, next, next+1, false)
			if err := r.failPods(next, FaultFlap, func(node string, nics []topology.NICID) bool {
				return node == st.nic.node && slices.Contains(nics, st.nic.nic)
			}); err != nil {
				return err
			}
		}
		changed[st.nic.node] = true
	}
	f.flaps = rest
	if r.cfg.FaultEvery > 0 && next%r.cfg.FaultEvery == 0 && len(f.kinds) > 0 {
		kind := f.kinds[f.next%len(f.kinds)]
		f.next++
		if err := r.inject(next, kind, changed); err != nil {
			return err
		}
	}
	for _, name := range sortedKeys(changed) {
		if _, away := r.drained[name]; !away {
			r.sim.UpsertCNR(r.cnr(name))
		}
	}
	return r.recreate(next)
}

// inject starts one fault of kind before cycle next.
func (r *runner) inject(next int, kind string, changed map[string]bool) error {
	f := r.faults
	held := r.heldNICs()
	if len(held) == 0 {
		return nil
	}
	pick := held[r.rng.Intn(len(held))]
	r.res.Faults++
	switch kind {
	case FaultNIC:
		f.down(pick, next, next+r.cfg.FaultFor, false)
		changed[pick.node] = true
		return r.failPods(next, kind, func(node string, nics []topology.NICID) bool {
			return node == pick.node && slices.Contains(nics, pick.nic)
		})
	case FaultFlap:
		// Down now, and soakFlapCount-1 more times, every other cycle.
		f.down(pick, next, next+1, false)
		changed[pick.node] = true
		for i := 1; i < soakFlapCount; i++ {
			f.flaps = append(f.flaps, flapStep{at: next + 2*i, nic: pick, down: true})
		}
		return r.failPods(next, kind, func(node string, nics []topology.NICID) bool {
			return node == pick.node && slices.Contains(nics, pick.nic)
		})
	case FaultLeaf:
		fab := r.sim.Fabric()
		leaf, ok := fab.NICLeaf(pick.node, pick.nic)
		if !ok || leaf.IsUnknown() {
			return nil
		}
		l, _ := fab.Leaf(leaf)
		under := map[nicKey]bool{}
		for _, sl := range l.Slots {
			for _, nic := range sl.NICs {
				k := nicKey{sl.Node.Name, nic}
				under[k] = true
				f.down(k, next, next+r.cfg.FaultFor, true)
				changed[sl.Node.Name] = true
			}
		}
		r.res.LeafFaults++
		return r.failPods(next, kind, func(node string, nics []topology.NICID) bool {
			return slices.ContainsFunc(nics, func(n topology.NICID) bool { return under[nicKey{node, n}] })
		})
	case FaultNode:
		if _, away := r.drained[pick.node]; away {
			return nil
		}
		f.nodes[pick.node] = next + r.cfg.FaultFor
		r.sim.UpsertNode(notReady(r.nodes[pick.node]))
		return r.failPods(next, kind, func(node string, _ []topology.NICID) bool { return node == pick.node })
	}
	return nil
}

// heldNICs lists the NICs the node agent handed to live pods of gangs in
// the soak, on present, healthy nodes, sorted.
func (r *runner) heldNICs() []nicKey {
	var out []nicKey
	for node, m := range r.agent.handed {
		if _, away := r.drained[node]; away {
			continue
		}
		if _, down := r.faults.nodes[node]; down {
			continue
		}
		for _, res := range m {
			for _, nic := range res.NICs() {
				k := nicKey{node, nic}
				if !r.faults.nicDown(k) {
					out = append(out, k)
				}
			}
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].node != out[j].node {
			return out[i].node < out[j].node
		}
		return out[i].nic < out[j].nic
	})
	return slices.Compact(out)
}

// failPods deletes the live bound pods whose node and NICs (as the node
// agent handed them, and as annotated) match, and schedules their
// re-creation.
func (r *runner) failPods(next int, kind string, on func(node string, nics []topology.NICID) bool) error {
	fab := r.sim.Fabric()
	type victim struct {
		gang, name string
	}
	var victims []victim
	for _, ps := range r.sim.Pods() {
		p := ps.Pod
		if ps.Evicted != "" || !bound(p) || p.Namespace != Namespace {
			continue
		}
		nics, _ := ledger.ParseNICs(p.Annotations[ledger.AnnotationNICs])
		if given, ok := r.agent.handed[p.Spec.NodeName][consumerOf(p)]; ok {
			nics = append(nics, given.NICs()...)
		}
		if on(p.Spec.NodeName, nics) {
			victims = append(victims, victim{p.Annotations[ledger.GroupNameAnnotation], p.Name})
		}
	}
	sort.Slice(victims, func(i, j int) bool { return victims[i].name < victims[j].name })
	// A gang that loses every bound pod is not running: it is placed whole
	// again, and its pods are not graded as replacements.
	lostBy := map[string]int{}
	for _, v := range victims {
		lostBy[v.gang]++
	}
	boundBy := map[string]int{}
	for _, ps := range r.sim.Pods() {
		if ps.Evicted == "" && bound(ps.Pod) && ps.Pod.Namespace == Namespace {
			boundBy[ps.Pod.Annotations[ledger.GroupNameAnnotation]]++
		}
	}
	for _, v := range victims {
		j := r.live[v.gang]
		if j == nil {
			continue
		}
		gang := Namespace + "/" + v.gang
		leaves, s1s := r.gangLeaves(fab, v.gang)
		var pod *corev1.Pod
		for _, ps := range r.sim.Pods() {
			if ps.Pod.Namespace == Namespace && ps.Pod.Name == v.name {
				pod = ps.Pod
			}
		}
		if pod == nil {
			continue
		}
		if err := r.sim.DeletePod(Namespace, v.name); err != nil {
			return err
		}
		r.agent.schedule(r.sim.Cycle(), pod.Spec.NodeName, consumerOf(pod), nil)
		r.res.LostPods++
		if lostBy[v.gang] < boundBy[v.gang] {
			r.faults.lost[Namespace+"/"+v.name] = loss{gang: gang, cycle: next, kind: kind, leaves: leaves, s1s: s1s}
		} else {
			r.faults.wholeLost[gang] = true
		}
		r.faults.replace = append(r.faults.replace, replacement{due: next + r.cfg.ReplaceAfter, job: v.gang, pod: r.fresh(pod), kind: kind})
	}
	return nil
}

// gangLeaves returns the leaves (and their S1s) of the NICs the node agent
// handed to the gang's live bound pods.
func (r *runner) gangLeaves(fab *topology.Fabric, gang string) ([]topology.S0ID, []topology.S1ID) {
	var leaves []topology.S0ID
	var s1s []topology.S1ID
	for _, ps := range r.sim.Pods() {
		p := ps.Pod
		if ps.Evicted != "" || !bound(p) || p.Namespace != Namespace || p.Annotations[ledger.GroupNameAnnotation] != gang {
			continue
		}
		nics, _ := ledger.ParseNICs(p.Annotations[ledger.AnnotationNICs])
		if given, ok := r.agent.handed[p.Spec.NodeName][consumerOf(p)]; ok {
			nics = given.NICs()
		}
		for _, nic := range nics {
			id, ok := fab.NICLeaf(p.Spec.NodeName, nic)
			if !ok || slices.Contains(leaves, id) {
				continue
			}
			leaves = append(leaves, id)
			if l, ok := fab.Leaf(id); ok && !slices.Contains(s1s, l.S1) {
				s1s = append(s1s, l.S1)
			}
		}
	}
	slices.Sort(leaves)
	return leaves, s1s
}

// fresh is the pod the job controller re-creates for p: same name, spec and
// labels, a new UID, not bound, without the scheduler's annotations.
func (r *runner) fresh(p *corev1.Pod) *corev1.Pod {
	r.recreated++
	c := p.DeepCopy()
	c.UID = types.UID(fmt.Sprintf("%s-f%d", p.UID, r.recreated))
	c.ResourceVersion = ""
	c.Spec.NodeName = ""
	c.DeletionTimestamp = nil
	c.Status = corev1.PodStatus{Phase: corev1.PodPending}
	for k := range c.Annotations {
		if strings.HasPrefix(k, "rdmatopo.io/") || k == rdmatopology.AnnotationNUMABindResult {
			delete(c.Annotations, k)
		}
	}
	return c
}

// recreate adds the pods due for re-creation whose gang still runs.
func (r *runner) recreate(next int) error {
	f := r.faults
	rest := f.replace[:0]
	for _, rp := range f.replace {
		if rp.due > next {
			rest = append(rest, rp)
			continue
		}
		j := r.live[rp.job]
		if j == nil {
			delete(f.lost, Namespace+"/"+rp.pod.Name)
			continue
		}
		if err := r.sim.AddPod(rp.pod); err != nil {
			return fmt.Errorf("re-create pod %s: %w", rp.pod.Name, err)
		}
		for i, p := range j.pods {
			if p.Name == rp.pod.Name {
				j.pods[i] = rp.pod
			}
		}
	}
	f.replace = rest
	return nil
}

// replacing reports the gangs with a lost pod whose replacement is not
// bound yet: they may be partial meanwhile.
func (f *faults) replacing() map[string]bool {
	out := map[string]bool{}
	for _, l := range f.lost {
		out[l.gang] = true
	}
	return out
}

// failedNodes lists the NotReady nodes.
func (f *faults) failedNodes() map[string]bool {
	out := map[string]bool{}
	for n := range f.nodes {
		out[n] = true
	}
	return out
}

// consumerOf is a pod's KCNR consumer id.
func consumerOf(p *corev1.Pod) string {
	return builders.Consumer(p.Namespace, p.Name, string(p.UID))
}

// forgetNode drops what the faults know of a drained node's NICs: the
// scheduler forgets a node that leaves the cluster, and its failures.
func (f *faults) forgetNode(node string) {
	for k := range f.history {
		if k.node == node {
			delete(f.history, k)
		}
	}
	for k := range f.nics {
		if k.node == node {
			delete(f.nics, k)
		}
	}
}

// active reports whether a fault is in progress at cycle (the cluster is
// not whole): a NIC or node down, a flap or a re-creation to come, a NIC
// in its cool-down.
func (f *faults) active(cycle int) bool {
	if len(f.nics) > 0 || len(f.nodes) > 0 || len(f.flaps) > 0 || len(f.replace) > 0 {
		return true
	}
	for k := range f.history {
		if f.cooling(k, cycle) {
			return true
		}
	}
	return false
}

// cnr is the node's KCNR as the node agent shows it, failed NICs included.
func (r *runner) cnr(node string) *v1alpha1.CustomNodeResource {
	obj := r.agent.object(node)
	if r.faults != nil {
		r.faults.applyToCNR(obj, corev1.ResourceName(r.checker.Config.RDMAResource))
	}
	return obj
}

// baseOf is the node's KCNR without allocations, failed NICs included: what
// the node agent hands devices from.
func (r *runner) baseOf(node string) *v1alpha1.CustomNodeResource {
	base := r.agent.base[node]
	if r.faults == nil || base == nil {
		return base
	}
	c := base.DeepCopy()
	r.faults.applyToCNR(c, corev1.ResourceName(r.checker.Config.RDMAResource))
	return c
}

// faultView is what the checker is told of the faults the cycle's session
// ran with.
func (r *runner) faultView(o *Observation) *FaultView {
	f := r.faults
	v := &FaultView{FailedNodes: f.failedNodes(), Replacing: f.replacing(), Lost: map[string]Loss{}, Nodes: r.nodes,
		Down: map[nicKey]bool{}, Cooling: map[nicKey]bool{}}
	for k := range f.nics {
		v.Down[k] = true
	}
	for k := range f.history {
		if f.cooling(k, o.Cycle) {
			v.Cooling[k] = true
		}
	}
	for k, l := range f.lost {
		v.Lost[k] = Loss{Gang: l.gang, Cycle: l.cycle, Kind: l.kind, Leaves: l.leaves, S1s: l.s1s}
	}
	for name := range r.drained {
		v.FailedNodes[name] = true
	}
	return v
}

// fabricOf builds the fabric the session saw: the nodes as they are now
// (NotReady ones included: the checker skips them) with the session's KCNRs.
func (r *runner) fabricOf(cnrs []*v1alpha1.CustomNodeResource) *topology.Fabric {
	c := topology.NewCache(r.checker.Config)
	for _, name := range sortedKeys(boolSetN(r.nodes)) {
		if _, away := r.drained[name]; !away {
			c.UpsertNode(r.nodes[name])
		}
	}
	for _, cnr := range cnrs {
		c.UpsertCNR(cnr)
	}
	return c.Snapshot()
}

func boolSetN(m map[string]*corev1.Node) map[string]bool {
	out := make(map[string]bool, len(m))
	for k := range m {
		out[k] = true
	}
	return out
}

// podByUID finds a pod by UID.
func podByUID(pods []*corev1.Pod, uid string) *corev1.Pod {
	for _, p := range pods {
		if string(p.UID) == uid {
			return p
		}
	}
	return nil
}
