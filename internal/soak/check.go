package soak

import (
	"fmt"
	"sort"
	"strings"

	"github.com/google/go-cmp/cmp"
	"github.com/kubewharf/katalyst-api/pkg/apis/node/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	schedulingv1beta1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"

	"github.com/rdmatopo/rdmatopo/framework/ledger"
	"github.com/rdmatopo/rdmatopo/framework/placement"
	"github.com/rdmatopo/rdmatopo/framework/topology"
)

// Kind classifies a violation of the soak's invariants.
type Kind string

// Violation kinds. Each is counted separately in the Result.
const (
	// KindDoubleBooked: one NIC of a node is annotated on two live pods.
	KindDoubleBooked Kind = "DoubleBookedNIC"
	// KindKCNRConflict: a pod holds a NIC its node's KCNR shows consumed by
	// another consumer.
	KindKCNRConflict Kind = "KCNRConflict"
	// KindPartialGang: a gang has some but fewer than minMember pods bound
	// outside the grace allowed after a failed bind.
	KindPartialGang Kind = "PartialGang"
	// KindHardLimit: a hard-mode gang is placed wider than its highest tier.
	KindHardLimit Kind = "HardLimitBreach"
	// KindNICCount: a bound pod's rdmatopo.io/nics annotation is missing,
	// malformed, names NICs its node does not have, or does not hold as
	// many NICs as the pod requests.
	KindNICCount Kind = "NICCountMismatch"
	// KindLedgerMismatch: the plugin's ledger differs from a rebuild from
	// the bound pods (a leaked, missing or different reservation).
	KindLedgerMismatch Kind = "LedgerMismatch"
	// KindZoneDrift: not a violation; see Checker.Drift.
	KindZoneDrift Kind = "ZoneResourceDrift"
	// KindStuck: a gang that fits the empty cluster stays pending while the
	// cluster is idle (leaked capacity).
	KindStuck Kind = "StuckGang"
)

// Violation is one broken invariant, found after a cycle.
type Violation struct {
	// Cycle is the cycle after which the check ran.
	Cycle int
	// Kind classifies it.
	Kind Kind
	// Object names the pod, gang or NIC concerned.
	Object string
	// Detail says what was found.
	Detail string
}

func (v Violation) String() string {
	return fmt.Sprintf("cycle %d: %s: %s: %s", v.Cycle, v.Kind, v.Object, v.Detail)
}

// Observation is what the checker reads after a cycle: the API objects (not
// the scheduler's memory), plus the plugin's ledger for the rebuild
// comparison and the pods whose bind failed in this cycle.
type Observation struct {
	// Cycle is the cycle just run.
	Cycle int
	// Pods are the live pods (pending and bound).
	Pods []*corev1.Pod
	// PodGroups are the live PodGroups.
	PodGroups []*schedulingv1beta1.PodGroup
	// SessionCNRs are the KCNRs as the cycle's session saw them (taken
	// before the cycle ran).
	SessionCNRs []*v1alpha1.CustomNodeResource
	// JustBound holds the UIDs of pods bound in this cycle.
	JustBound map[string]bool
	// Fabric is built from the present Nodes and KCNRs.
	Fabric *topology.Fabric
	// Ledger is the plugin's ledger (nil: skip the ledger comparison).
	Ledger []ledger.Reservation
	// FailedBinds holds the UIDs of pods whose bind failed in this cycle.
	// Their reservations may remain in the ledger until the next session
	// opens (reconcile releases them there).
	FailedBinds map[string]bool
	// GangFailures maps each gang ("namespace/name") with a failed bind in
	// this cycle to the nodes of those binds.
	GangFailures map[string][]string
}

// Checker checks the invariants after every cycle. It keeps only what a
// definition needs across cycles: the last cycle in which each gang had a
// failed bind.
//
// Partial gangs, precisely: a gang is partial after cycle c when
// 0 < bound pods < minMember. A failed bind makes a gang partial (Volcano
// puts the failed pods back to pending; the scheduler must place them, or
// the gang stays as it is until then). A partial gang is a violation unless
// one of its binds failed in cycle f with c-f <= Grace: the failing cycle
// itself and Grace more cycles to place the rest. The grace rests on the
// failed bind having freed room in the gang's tier; while a node of the
// gang's last failed binds is out of the cluster (drained), that room is
// gone and the gang waits for capacity like any pending gang, so it is not
// a violation, and the grace starts again when the node is back.
type Checker struct {
	// Config selects the resources (the conf's topology configuration).
	Config topology.Config
	// Grace is how many cycles after a failed bind a gang may stay partial.
	Grace int
	// StrictS0 makes a hard s0 (or s1) gang breach its limit when its NICs
	// span S0s (S1s) even though all its pods share one node. By default a
	// one-node placement is tier node, the narrowest tier (docs/design.md
	// "Tiers"), and within every limit.
	StrictS0 bool

	// Drift collects, across checks, reservations whose NICs match the
	// rebuild but whose GPU/CPU split over NUMA zones does not. It is
	// reported, not counted as a violation: the brief's ledger invariant
	// compares NIC sets.
	Drift []Violation
	// MaxPartialCycles is the longest run of consecutive checks in which
	// one gang was partial (violation or not).
	MaxPartialCycles int

	lastFailure  map[string]int
	partialSince map[string]int
	// failedOn holds the nodes of each gang's last failed binds.
	failedOn map[string][]string
}

// NewChecker returns a checker.
func NewChecker(cfg topology.Config, grace int) *Checker {
	return &Checker{Config: cfg.WithDefaults(), Grace: grace, lastFailure: map[string]int{}}
}

// nicKey identifies a NIC cluster-wide.
type nicKey struct {
	node string
	nic  topology.NICID
}

// heldPod is a bound pod with the NICs its annotation lists.
type heldPod struct {
	pod  *corev1.Pod
	nics []topology.NICID
}

// Check runs every invariant on one observation and returns the violations,
// sorted by kind and object.
func (c *Checker) Check(o *Observation) []Violation {
	if c.lastFailure == nil {
		c.lastFailure = map[string]int{}
	}
	if c.failedOn == nil {
		c.failedOn = map[string][]string{}
	}
	for gang, nodes := range o.GangFailures {
		c.lastFailure[gang] = o.Cycle
		c.failedOn[gang] = nodes
	}
	var out []Violation
	add := func(kind Kind, object, format string, args ...interface{}) {
		out = append(out, Violation{Cycle: o.Cycle, Kind: kind, Object: object, Detail: fmt.Sprintf(format, args...)})
	}
	held := c.checkPods(o, add)
	c.checkNICs(o, held, add)
	c.checkGangs(o, held, add)
	c.checkLedger(o, add)
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].Kind != out[j].Kind {
			return out[i].Kind < out[j].Kind
		}
		return out[i].Object < out[j].Object
	})
	return out
}

type addFunc func(kind Kind, object, format string, args ...interface{})

// bound reports whether a pod occupies its node.
func bound(p *corev1.Pod) bool {
	return p.Spec.NodeName != "" && p.DeletionTimestamp == nil &&
		p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed
}

func podKey(p *corev1.Pod) string { return p.Namespace + "/" + p.Name }

// rdmaRequest is the number of RDMA NICs the pod requests.
func (c *Checker) rdmaRequest(p *corev1.Pod) int64 {
	var n int64
	for _, ct := range p.Spec.Containers {
		q := ct.Resources.Requests[corev1.ResourceName(c.Config.RDMAResource)]
		n += q.Value()
	}
	return n
}

// checkPods reads the NIC annotations of bound pods and checks each pod
// holds as many known NICs as it requests.
func (c *Checker) checkPods(o *Observation, add addFunc) []heldPod {
	var held []heldPod
	for _, p := range o.Pods {
		if !bound(p) {
			continue
		}
		want := c.rdmaRequest(p)
		raw, ok := p.Annotations[ledger.AnnotationNICs]
		if want == 0 {
			if ok && raw != "" {
				add(KindNICCount, podKey(p), "requests no RDMA but %s=%q", ledger.AnnotationNICs, raw)
			}
			continue
		}
		nics, err := ledger.ParseNICs(raw)
		if err != nil {
			add(KindNICCount, podKey(p), "annotation %s: %v", ledger.AnnotationNICs, err)
			continue
		}
		if int64(len(nics)) != want {
			add(KindNICCount, podKey(p), "requests %d NICs, annotation %s=%q holds %d", want, ledger.AnnotationNICs, raw, len(nics))
		}
		for _, n := range nics {
			if _, known := o.Fabric.NICLeaf(p.Spec.NodeName, n); !known {
				add(KindNICCount, podKey(p), "NIC %s is not a NIC of node %s", n, p.Spec.NodeName)
			}
		}
		held = append(held, heldPod{pod: p, nics: nics})
	}
	return held
}

// checkNICs finds NICs annotated on two live pods, and NICs a pod holds
// that the KCNR shows consumed by another consumer.
func (c *Checker) checkNICs(o *Observation, held []heldPod, add addFunc) {
	holders := map[nicKey][]string{}
	for _, h := range held {
		for _, n := range h.nics {
			k := nicKey{h.pod.Spec.NodeName, n}
			holders[k] = append(holders[k], podKey(h.pod))
		}
	}
	keys := make([]nicKey, 0, len(holders))
	for k := range holders {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if keys[i].node != keys[j].node {
			return keys[i].node < keys[j].node
		}
		return keys[i].nic < keys[j].nic
	})
	for _, k := range keys {
		if pods := holders[k]; len(pods) > 1 {
			sort.Strings(pods)
			add(KindDoubleBooked, k.node+"/"+string(k.nic), "held by pods %s", strings.Join(pods, ", "))
		}
	}
	// A pod bound in this cycle must not hold a NIC that the KCNRs the
	// session saw list for another consumer. Later, a lagging KCNR may list
	// a pod that was deleted before its allocation caught up on a NIC the
	// scheduler has since handed to someone else: that is the lag, not a
	// conflict, so pods are checked against the KCNRs of the session that
	// placed them.
	consumers := kcnrNICConsumers(o.SessionCNRs)
	for _, h := range held {
		if !o.JustBound[string(h.pod.UID)] {
			continue
		}
		own := h.pod.Namespace + "/" + h.pod.Name + "/" + string(h.pod.UID)
		for _, n := range h.nics {
			for _, other := range consumers[nicKey{h.pod.Spec.NodeName, n}] {
				if other != own {
					add(KindKCNRConflict, podKey(h.pod), "placed on NIC %s of node %s, which the session's KCNR showed consumed by %s",
						n, h.pod.Spec.NodeName, other)
				}
			}
		}
	}
}

// kcnrNICConsumers lists, per NIC, the consumers of the NIC zone's
// allocations in the KCNRs (PCI addresses compared in lower case).
func kcnrNICConsumers(cnrs []*v1alpha1.CustomNodeResource) map[nicKey][]string {
	out := map[nicKey][]string{}
	var walk func(node string, zones []*v1alpha1.TopologyZone)
	walk = func(node string, zones []*v1alpha1.TopologyZone) {
		for _, z := range zones {
			if z == nil {
				continue
			}
			if z.Type == v1alpha1.TopologyTypeNIC {
				k := nicKey{node, topology.NICID(strings.ToLower(z.Name))}
				for _, a := range z.Allocations {
					if a != nil && a.Consumer != "" {
						out[k] = append(out[k], a.Consumer)
					}
				}
			}
			walk(node, z.Children)
		}
	}
	for _, cnr := range cnrs {
		walk(cnr.Name, cnr.Status.TopologyZone)
	}
	return out
}

// checkGangs checks whole gangs and hard-mode tier limits.
func (c *Checker) checkGangs(o *Observation, held []heldPod, add addFunc) {
	boundByGang := map[string]int{}
	for _, p := range o.Pods {
		if g := p.Annotations[ledger.GroupNameAnnotation]; g != "" && bound(p) {
			boundByGang[p.Namespace+"/"+g]++
		}
	}
	nicsByGang := map[string][]heldPod{}
	for _, h := range held {
		if g := h.pod.Annotations[ledger.GroupNameAnnotation]; g != "" {
			key := h.pod.Namespace + "/" + g
			nicsByGang[key] = append(nicsByGang[key], h)
		}
	}
	if c.partialSince == nil {
		c.partialSince = map[string]int{}
	}
	partial := map[string]bool{}
	for _, pg := range o.PodGroups {
		key := pg.Namespace + "/" + pg.Name
		n := boundByGang[key]
		if n > 0 && n < int(pg.Spec.MinMember) {
			partial[key] = true
			if _, ok := c.partialSince[key]; !ok {
				c.partialSince[key] = o.Cycle
			}
			c.MaxPartialCycles = max(c.MaxPartialCycles, o.Cycle-c.partialSince[key]+1)
			if c.slotGone(o, key) {
				// Waiting for capacity; the grace restarts once the node
				// is back.
				c.lastFailure[key] = o.Cycle
				c.checkTier(o, pg, nicsByGang[key], add)
				continue
			}
			last, failed := c.lastFailure[key]
			if !failed || o.Cycle-last > c.Grace {
				since := "no failed bind"
				if failed {
					since = fmt.Sprintf("last failed bind in cycle %d", last)
				}
				why := ""
				if k := len(pg.Status.Conditions); k > 0 {
					cond := pg.Status.Conditions[k-1]
					why = fmt.Sprintf("; PodGroup condition %s: %s", cond.Reason, cond.Message)
				}
				add(KindPartialGang, key, "%s gang: %d of minMember %d pods bound (%s; grace %d cycles)%s",
					contractOf(pg), n, pg.Spec.MinMember, since, c.Grace, why)
			}
		}
		c.checkTier(o, pg, nicsByGang[key], add)
	}
	for key := range c.partialSince {
		if !partial[key] {
			delete(c.partialSince, key)
			delete(c.failedOn, key)
		}
	}
}

// slotGone reports whether a node of the gang's last failed binds is out of
// the cluster.
func (c *Checker) slotGone(o *Observation, gang string) bool {
	for _, node := range c.failedOn[gang] {
		if _, ok := o.Fabric.Node(node); !ok {
			return true
		}
	}
	return false
}

// contractOf renders a gang's contract for messages, e.g. "hard s0".
func contractOf(pg *schedulingv1beta1.PodGroup) string {
	mode := pg.Annotations[ledger.AnnotationMode]
	if mode == "" {
		mode = "soft"
	}
	if tier := pg.Annotations[ledger.AnnotationHighestTier]; tier != "" {
		return mode + " " + tier
	}
	return mode
}

// checkTier checks a hard-mode gang's NICs against its highest tier, using
// the fabric (a NIC the fabric does not know is a leaf of its own).
func (c *Checker) checkTier(o *Observation, pg *schedulingv1beta1.PodGroup, held []heldPod, add addFunc) {
	mode, err := placement.ParseMode(pg.Annotations[ledger.AnnotationMode])
	if err != nil || mode != placement.ModeHard || len(held) == 0 {
		return
	}
	tier := placement.DefaultHighestTier
	if v, ok := pg.Annotations[ledger.AnnotationHighestTier]; ok {
		if tier, err = placement.ParseTier(v); err != nil {
			return
		}
	}
	nodes, leaves, s1s := map[string]bool{}, map[topology.S0ID]bool{}, map[topology.S1ID]bool{}
	for _, h := range held {
		nodes[h.pod.Spec.NodeName] = true
		for _, n := range h.nics {
			leaf, ok := o.Fabric.NICLeaf(h.pod.Spec.NodeName, n)
			if !ok {
				leaf = topology.UnknownS0(h.pod.Spec.NodeName, n)
			}
			leaves[leaf] = true
			if l, ok := o.Fabric.Leaf(leaf); ok {
				s1s[l.S1] = true
			} else {
				s1s[topology.S1ID("unknown:"+string(leaf))] = true
			}
		}
	}
	key := pg.Namespace + "/" + pg.Name
	if len(nodes) == 1 && !c.StrictS0 {
		return // tier node: the narrowest, within every limit
	}
	var where []string
	for _, h := range held {
		where = append(where, fmt.Sprintf("%s@%s[%s]", h.pod.Name, h.pod.Spec.NodeName, ledger.FormatNICs(h.nics)))
	}
	sort.Strings(where)
	switch tier {
	case placement.TierNode:
		if len(nodes) > 1 {
			add(KindHardLimit, key, "hard tier node, pods on %d nodes %v; pods %s", len(nodes), sortedKeys(nodes), strings.Join(where, " "))
		}
	case placement.TierS0:
		if len(leaves) > 1 {
			add(KindHardLimit, key, "hard tier s0, NICs under %d S0s %v; pods %s", len(leaves), sortedKeys(leaves), strings.Join(where, " "))
		}
	case placement.TierS1:
		if len(s1s) > 1 {
			add(KindHardLimit, key, "hard tier s1, NICs under %d S1s %v; pods %s", len(s1s), sortedKeys(s1s), strings.Join(where, " "))
		}
	}
}

func sortedKeys[K ~string](m map[K]bool) []K {
	out := make([]K, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

// ledgerView is the part of a reservation the comparison looks at: node,
// gang and NICs per NUMA zone. Confirmation is excluded (the plugin
// confirms at session open, so it lags the KCNR by one cycle), and so are
// the GPU and CPU split over zones, which Drift reports.
type ledgerView struct {
	Node string
	Job  string
	NICs map[int][]topology.NICID
}

func viewOf(r ledger.Reservation) ledgerView {
	v := ledgerView{Node: r.Node, Job: r.Job, NICs: map[int][]topology.NICID{}}
	for _, z := range r.Zones {
		v.NICs[z.NUMA] = z.NICs
	}
	return v
}

// zoneSplit is the GPU and CPU a reservation takes per NUMA zone.
func zoneSplit(r ledger.Reservation) map[int][2]int64 {
	out := map[int][2]int64{}
	for _, z := range r.Zones {
		out[z.NUMA] = [2]int64{z.GPU, z.CPUMilli}
	}
	return out
}

// checkLedger compares the plugin's ledger with a rebuild from the bound
// pods: every bound pod's reservation must be in the ledger, equal; every
// other reservation must belong to a pod whose bind failed in this cycle.
func (c *Checker) checkLedger(o *Observation, add addFunc) {
	if o.Ledger == nil {
		return
	}
	rebuilt, errs := ledger.Rebuild(c.Config, o.Pods, o.Fabric)
	for _, err := range errs {
		add(KindLedgerMismatch, "rebuild", "%v", err)
	}
	want := map[string]ledger.Reservation{}
	for _, r := range rebuilt.All() {
		want[r.UID] = r
	}
	got := map[string]ledger.Reservation{}
	for _, r := range o.Ledger {
		got[r.UID] = r
	}
	for _, r := range rebuilt.All() {
		g, ok := got[r.UID]
		switch {
		case !ok:
			add(KindLedgerMismatch, r.Namespace+"/"+r.Name, "bound with NICs %s on %s, but the ledger holds no reservation",
				ledger.FormatNICs(r.NICs()), r.Node)
		default:
			if d := cmp.Diff(viewOf(r), viewOf(g)); d != "" {
				add(KindLedgerMismatch, r.Namespace+"/"+r.Name, "ledger differs from the rebuild (-rebuild +ledger):\n%s", d)
			} else if d := cmp.Diff(zoneSplit(r), zoneSplit(g)); d != "" {
				c.Drift = append(c.Drift, Violation{Cycle: o.Cycle, Kind: KindZoneDrift, Object: r.Namespace + "/" + r.Name,
					Detail: fmt.Sprintf("GPU/CPU per NUMA zone {gpu, cpuMilli} differ from the rebuild (-rebuild +ledger):\n%s", d)})
			}
		}
	}
	for _, r := range o.Ledger {
		if _, ok := want[r.UID]; ok || o.FailedBinds[r.UID] {
			continue
		}
		add(KindLedgerMismatch, r.Namespace+"/"+r.Name, "ledger holds NICs %s on %s for a pod that is not bound with them (leak)",
			ledger.FormatNICs(r.NICs()), r.Node)
	}
}
