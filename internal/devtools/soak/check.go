package soak

import (
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/google/go-cmp/cmp"
	"github.com/kubewharf/katalyst-api/pkg/apis/node/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
	schedulingv1beta1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"

	"github.com/rdmatopo/rdmatopo/core/ledger"
	"github.com/rdmatopo/rdmatopo/core/placement"
	"github.com/rdmatopo/rdmatopo/core/topology"
	"github.com/rdmatopo/rdmatopo/internal/sim/nodeagent"
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
	// KindHardLimit: a hard-mode gang is planned wider than its highest
	// tier (or, with Checker.NodeFollowsPlan, placed wider).
	KindHardLimit Kind = "HardLimitBreach"
	// KindNICCount: a bound pod's rdmatopo.io/nics annotation is missing,
	// malformed, names NICs its node does not have, or does not hold as
	// many NICs as the pod requests.
	KindNICCount Kind = "NICCountMismatch"
	// KindLedgerMismatch: the plugin's ledger differs from a rebuild from
	// the bound pods (a leaked, missing or different reservation).
	KindLedgerMismatch Kind = "LedgerMismatch"
	// KindKCNRDivergence: a bound pod its node's KCNR lists has no
	// reservation, or one on other NICs or zones than the KCNR lists (the
	// scheduler did not adopt the node's choice: divergence, or capacity
	// leaked on NICs the pod does not hold).
	KindKCNRDivergence Kind = "KCNRDivergence"
	// KindZoneDrift: not a violation; see Checker.Drift.
	KindZoneDrift Kind = "ZoneResourceDrift"
	// KindStuck: a gang that fits the empty cluster stays pending while the
	// cluster is idle (leaked capacity).
	KindStuck Kind = "StuckGang"
	// KindHigherPriorityEvicted: the scheduler evicted a pod whose priority
	// is not strictly below its preemptor's, or named no preemptor.
	KindHigherPriorityEvicted Kind = "HigherPriorityEvicted"
	// KindWrongQueueEvicted: the scheduler evicted a pod for a gang of
	// another queue while the pod's queue may not be reclaimed from.
	KindWrongQueueEvicted Kind = "WrongQueueEvicted"
	// KindNonPreemptableEvicted: the scheduler evicted a pod that carries
	// volcano.sh/preemptable: "false".
	KindNonPreemptableEvicted Kind = "NonPreemptableEvicted"
	// KindPartialVictim: after a cycle's evictions a victim gang keeps some
	// but fewer than minMember pods bound: it was not evicted whole.
	KindPartialVictim Kind = "PartialVictimGang"
	// KindPlacedOnFailed: a pod was bound onto a failed node or NIC, or
	// onto a NIC in its cool-down (faults.go).
	KindPlacedOnFailed Kind = "PlacedOnFailed"
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
	// GangFailedNICs maps each gang with a failed bind in this cycle to the
	// NICs those binds named (their Bindings' rdmatopo.io/nics): the room
	// the failures freed.
	GangFailedNICs map[string][]NodeNIC
	// Evictions are the pods the scheduler evicted in this cycle; Pods no
	// longer holds them.
	Evictions []Eviction
	// Priorities maps every gang ("namespace/name") the soak submitted, live
	// or gone, to its priority (its PriorityClass's value).
	Priorities map[string]int32
	// Queues maps every gang the soak submitted to its Queue (absent: the
	// default queue); NonPreemptable marks gangs whose pods carry
	// volcano.sh/preemptable: "false".
	Queues         map[string]string
	NonPreemptable map[string]bool
	// Relaxed holds the hard gangs that have been pending at least their
	// max-wait since they were submitted: the scheduler may place them wider
	// than their highest tier.
	Relaxed map[string]bool
	// EvictedConsumers holds the KCNR consumers ("namespace/name/uid") of
	// every pod the scheduler evicted. Their NICs go to the preemptor once
	// the pods are gone, while a lagging KCNR may still list them: not a
	// conflict.
	EvictedConsumers map[string]bool
	// Faults are the hardware faults the cycle's session ran with (nil:
	// none injected).
	Faults *FaultView
}

// FaultView is what the checker is told of the injected faults, as the
// cycle's session saw them.
type FaultView struct {
	// FailedNodes are the NotReady (and drained) nodes.
	FailedNodes map[string]bool
	// Down are the failed NICs; Cooling the NICs in the cool-down the
	// scheduler's arguments give them.
	Down, Cooling map[nicKey]bool
	// Replacing holds the gangs with a lost pod whose replacement is not
	// bound yet: they may be partial meanwhile.
	Replacing map[string]bool
	// Lost maps each lost pod ("namespace/name") whose replacement is not
	// bound yet to what its gang held when it was lost.
	Lost map[string]Loss
	// SessionFabric is built from the nodes and the KCNRs the session saw.
	SessionFabric *topology.Fabric
	// Nodes are the Node objects by name.
	Nodes map[string]*corev1.Node
}

// Loss is what a gang held when it lost a pod to a fault.
type Loss struct {
	Gang   string
	Cycle  int
	Kind   string
	Leaves []topology.S0ID
	S1s    []topology.S1ID
}

// Eviction is one pod the scheduler evicted.
type Eviction struct {
	// Pod and Gang are "namespace/name".
	Pod, Gang string
	// Priority is the pod's own priority (spec.priority).
	Priority int32
	// Preemptor is the gang ("namespace/name") the eviction reason names;
	// empty when it names none.
	Preemptor string
	// Reason is the eviction reason, for messages.
	Reason string
	// Node and NICs are where the pod was (its rdmatopo.io/nics).
	Node string
	NICs []topology.NICID
}

// NodeNIC is one NIC of one node.
type NodeNIC struct {
	Node string
	NIC  topology.NICID
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
// a violation, and the grace starts again when the node is back. The same
// holds while the node agent has given a NIC those binds freed to another
// pod that was not bound with it (roomTaken): the node, not the scheduler,
// spent the room, which the scheduler learns only when the KCNR lists it.
type Checker struct {
	// Config selects the resources (the conf's topology configuration).
	Config topology.Config
	// Grace is how many cycles after a failed bind a gang may stay partial.
	Grace int
	// NodeFollowsPlan says the node agent gives every pod the NICs it was
	// bound with (the exact agent): a hard gang placed wider than its
	// highest tier is then a breach even where its plan was not, since no
	// node widened it.
	NodeFollowsPlan bool
	// NICUnits is the RDMA units every NIC of the cluster was built with
	// (1 if 0): how many live pods one NIC may serve.
	NICUnits int64

	// NICMismatches counts bound pods whose KCNR entry, once it came, listed
	// other NICs than the pod was bound with (the node agent's choice,
	// which the scheduler adopts).
	NICMismatches int
	// RealizedWider counts hard gangs planned within their highest tier
	// that the nodes realized wider (not a violation unless
	// NodeFollowsPlan; see checkTier).
	RealizedWider int

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
	// planned holds, per bound pod UID, the NICs it was bound with.
	planned map[string][]topology.NICID
	// listedSeen marks pods whose KCNR entry was compared with their plan.
	listedSeen map[string]bool
	// wider marks gangs counted in RealizedWider.
	wider map[string]bool
	// failedOn holds the nodes of each gang's last failed binds.
	failedOn map[string][]string
	// failedNICs holds the NICs of each gang's last failed binds.
	failedNICs map[string][]NodeNIC

	// PlacedOnFailed counts pods bound onto failed hardware or a NIC in
	// its cool-down; Replacements the replacements bound, of which
	// ReplacementsInLeaf under a leaf their gang held and
	// ReplacementsWithinTier those or under its S1s while its leaves had no
	// room (faults.go).
	PlacedOnFailed         int
	Replacements           int
	ReplacementsInLeaf     int
	ReplacementsWithinTier int
	// OutsideTier describes the replacements not within tier.
	OutsideTier []string
	// leafSeen remembers the leaf each NIC was last listed under (with
	// faults, a NIC a pod was planned on may fail later).
	leafSeen map[nicKey]topology.S0ID
	// claimed maps the NICs of evicted pods to their preemptor gang, until
	// that gang is placed or gone: the scheduler holds them for it.
	claimed map[nicKey]string
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
	if c.failedNICs == nil {
		c.failedNICs = map[string][]NodeNIC{}
	}
	for gang, nodes := range o.GangFailures {
		c.lastFailure[gang] = o.Cycle
		c.failedOn[gang] = nodes
		c.failedNICs[gang] = o.GangFailedNICs[gang]
	}
	var out []Violation
	add := func(kind Kind, object, format string, args ...interface{}) {
		out = append(out, Violation{Cycle: o.Cycle, Kind: kind, Object: object, Detail: fmt.Sprintf(format, args...)})
	}
	if o.Faults != nil {
		if c.leafSeen == nil {
			c.leafSeen = map[nicKey]topology.S0ID{}
		}
		for _, name := range o.Fabric.NodeNames() {
			n, _ := o.Fabric.Node(name)
			for _, z := range n.Zones {
				for _, nic := range z.NICs {
					c.leafSeen[nicKey{name, nic.ID}] = nic.S0
				}
			}
		}
	}
	if o.Faults != nil {
		c.trackClaims(o)
	}
	held := c.checkPods(o, add)
	listed := kcnrListings(o.SessionCNRs)
	c.recordPlans(o, held, listed)
	c.checkNICs(o, held, add)
	c.checkGangs(o, held, listed, add)
	c.checkLedger(o, add)
	c.checkKCNRTruth(o, listed, add)
	c.checkEvictions(o, add)
	c.checkFaults(o, add)
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

// checkNICs finds NICs annotated on more live pods than they have RDMA
// units (one pod each on a NIC of one unit), and NICs a pod holds that the
// KCNR shows consumed to their last unit by other consumers.
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
		if pods, units := holders[k], max(c.NICUnits, 1); int64(len(pods)) > units {
			sort.Strings(pods)
			add(KindDoubleBooked, k.node+"/"+string(k.nic), "held by pods %s (%d RDMA units)", strings.Join(pods, ", "), units)
		}
	}
	// A pod bound in this cycle must not hold a NIC that the KCNRs the
	// session saw list for another consumer. Later, a lagging KCNR may list
	// a pod that was deleted before its allocation caught up on a NIC the
	// scheduler has since handed to someone else: that is the lag, not a
	// conflict, so pods are checked against the KCNRs of the session that
	// placed them.
	consumers := kcnrNICConsumers(o.SessionCNRs, c.Config.RDMAResource)
	for _, h := range held {
		if !o.JustBound[string(h.pod.UID)] {
			continue
		}
		own := nodeagent.Consumer(h.pod)
		for _, n := range h.nics {
			use := consumers[nicKey{h.pod.Spec.NodeName, n}]
			var others []string
			var taken int64
			for _, a := range use.allocs {
				if a.consumer != own && !o.EvictedConsumers[a.consumer] {
					others = append(others, a.consumer)
					taken += a.units
				}
			}
			if len(others) > 0 && taken >= use.units {
				add(KindKCNRConflict, podKey(h.pod), "placed on NIC %s of node %s, whose %d RDMA units the session's KCNR showed consumed by %s",
					n, h.pod.Spec.NodeName, use.units, strings.Join(others, ", "))
			}
		}
	}
}

// nicUse is a NIC zone as a KCNR reports it: its allocatable RDMA units and
// its allocations.
type nicUse struct {
	units  int64
	allocs []nicAlloc
}

// nicAlloc is one consumer's allocation on a NIC: the RDMA units it
// requests (1 when it names none, as an agent that does not count units
// reports a NIC it gave away).
type nicAlloc struct {
	consumer string
	units    int64
}

// kcnrNICConsumers lists, per NIC, its allocatable units and the consumers
// of the NIC zone's allocations in the KCNRs (PCI addresses compared in
// lower case).
func kcnrNICConsumers(cnrs []*v1alpha1.CustomNodeResource, rdma string) map[nicKey]nicUse {
	out := map[nicKey]nicUse{}
	var walk func(node string, zones []*v1alpha1.TopologyZone)
	walk = func(node string, zones []*v1alpha1.TopologyZone) {
		for _, z := range zones {
			if z == nil {
				continue
			}
			if z.Type == v1alpha1.TopologyTypeNIC {
				k := nicKey{node, topology.NICID(strings.ToLower(z.Name))}
				use := nicUse{units: 1}
				if r := z.Resources.Allocatable; r != nil {
					if q, ok := (*r)[corev1.ResourceName(rdma)]; ok {
						use.units = q.Value()
					}
				}
				for _, a := range z.Allocations {
					if a == nil || a.Consumer == "" {
						continue
					}
					units := int64(1)
					if a.Requests != nil {
						if q, ok := (*a.Requests)[corev1.ResourceName(rdma)]; ok {
							units = q.Value()
						}
					}
					use.allocs = append(use.allocs, nicAlloc{a.Consumer, units})
				}
				out[k] = use
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
func (c *Checker) checkGangs(o *Observation, held []heldPod, listed map[string]map[int][]topology.NICID, add addFunc) {
	boundByGang := boundPerGang(o)
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
			if c.slotGone(o, key) || c.roomTaken(o, key, listed) || c.roomOutranked(o, key) ||
				(o.Faults != nil && o.Faults.Replacing[key]) {
				// Waiting for capacity; the grace restarts once the node
				// is back, or the room is free again.
				c.lastFailure[key] = o.Cycle
				c.checkTier(o, pg, nicsByGang[key], listed, add)
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
		c.checkTier(o, pg, nicsByGang[key], listed, add)
	}
	for key := range c.partialSince {
		if !partial[key] {
			delete(c.partialSince, key)
			delete(c.failedOn, key)
			delete(c.failedNICs, key)
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

// roomTaken reports whether a NIC of the gang's last failed binds is, as
// the KCNR lists it, held by a live pod that was bound with other NICs
// (of any gang, this one included): the node agent gave that pod the room
// the failures freed, and the NICs the pod was planned on are not the
// room the failures freed. With an agent that follows the plan this never
// happens.
func (c *Checker) roomTaken(o *Observation, gang string, listed map[string]map[int][]topology.NICID) bool {
	if len(c.failedNICs[gang]) == 0 {
		return false
	}
	freed := c.freedBy(gang)
	for _, p := range o.Pods {
		if !bound(p) {
			continue
		}
		zones, ok := listingOf(listed, p)
		if !ok {
			continue
		}
		plan := c.planned[string(p.UID)]
		for _, nic := range allNICs(zones) {
			if freed[NodeNIC{p.Spec.NodeName, nic}] && !containsNIC(plan, nic) {
				return true
			}
		}
	}
	return false
}

// roomOutranked reports whether a NIC of the gang's last failed binds is
// held, by its annotation, by a bound pod of a gang ahead of this one in
// the job order (Observation.Priorities): of strictly higher priority, or
// of equal priority and created earlier. The scheduler gave the room to
// that gang, as the job order demands, and the partial gang waits for
// capacity like any pending gang.
func (c *Checker) roomOutranked(o *Observation, gang string) bool {
	if len(c.failedNICs[gang]) == 0 || o.Priorities == nil {
		return false
	}
	own, ok := o.Priorities[gang]
	if !ok {
		return false
	}
	created := map[string]metav1.Time{}
	for _, pg := range o.PodGroups {
		created[pg.Namespace+"/"+pg.Name] = pg.CreationTimestamp
	}
	ahead := func(other string) bool {
		p, ok := o.Priorities[other]
		switch {
		case !ok || other == gang:
			return false
		case p != own:
			return p > own
		}
		a, okA := created[other]
		b, okB := created[gang]
		return okA && okB && a.Before(&b)
	}
	freed := c.freedBy(gang)
	for _, p := range o.Pods {
		if !bound(p) || !ahead(p.Namespace+"/"+p.Annotations[ledger.GroupNameAnnotation]) {
			continue
		}
		nics, err := ledger.ParseNICs(p.Annotations[ledger.AnnotationNICs])
		if err != nil {
			continue
		}
		for _, nic := range nics {
			if freed[NodeNIC{p.Spec.NodeName, nic}] {
				return true
			}
		}
	}
	return false
}

// freedBy is the set of NICs the gang's last failed binds named.
func (c *Checker) freedBy(gang string) map[NodeNIC]bool {
	freed := make(map[NodeNIC]bool, len(c.failedNICs[gang]))
	for _, n := range c.failedNICs[gang] {
		freed[n] = true
	}
	return freed
}

// boundPerGang counts each gang's ("namespace/name") bound pods.
func boundPerGang(o *Observation) map[string]int {
	out := map[string]int{}
	for _, p := range o.Pods {
		if g := p.Annotations[ledger.GroupNameAnnotation]; g != "" && bound(p) {
			out[p.Namespace+"/"+g]++
		}
	}
	return out
}

func containsNIC(list []topology.NICID, id topology.NICID) bool {
	for _, n := range list {
		if n == id {
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

// checkTier checks a hard-mode gang against its highest tier, using the
// fabric (a NIC the fabric does not know is a leaf of its own).
//
// Hard mode bounds what the scheduler plans; the node agent, not the
// scheduler, hands out the NICs, and the scheduler learns its choice only
// when the KCNR lists the pod. So the breach is judged on the plan: the
// NICs each pod was bound with (recordPlans). The placement as realized
// (the NICs the KCNR lists for listed pods, the annotation for the others)
// that is wider than the limit while the plan is not is the node's doing:
// counted in RealizedWider, once per gang, and a violation only when the
// node follows the plan (NodeFollowsPlan), where nothing but the scheduler
// can have widened it.
func (c *Checker) checkTier(o *Observation, pg *schedulingv1beta1.PodGroup, held []heldPod, listed map[string]map[int][]topology.NICID, add addFunc) {
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
	key := pg.Namespace + "/" + pg.Name
	if o.Relaxed[key] {
		return // max-wait has passed: placed as soft
	}
	planned := make([]heldPod, len(held))
	realized := make([]heldPod, len(held))
	for i, h := range held {
		planned[i] = heldPod{pod: h.pod, nics: c.planned[string(h.pod.UID)]}
		realized[i] = heldPod{pod: h.pod, nics: h.nics}
		if zones, ok := listingOf(listed, h.pod); ok {
			realized[i].nics = allNICs(zones)
		}
	}
	if why := c.breach(o, tier, planned); why != "" {
		add(KindHardLimit, key, "planned: %s", why)
		return
	}
	if why := c.breach(o, tier, realized); why != "" {
		if c.NodeFollowsPlan {
			add(KindHardLimit, key, "%s", why)
			return
		}
		if c.wider == nil {
			c.wider = map[string]bool{}
		}
		if !c.wider[key] {
			c.wider[key] = true
			c.RealizedWider++
		}
	}
}

// breach says how pods placed on the given NICs are wider than tier ("":
// they are not).
func (c *Checker) breach(o *Observation, tier placement.Tier, held []heldPod) string {
	nodes, leaves, s1s := map[string]bool{}, map[topology.S0ID]bool{}, map[topology.S1ID]bool{}
	for _, h := range held {
		nodes[h.pod.Spec.NodeName] = true
		for _, n := range h.nics {
			leaf, ok := o.Fabric.NICLeaf(h.pod.Spec.NodeName, n)
			if !ok {
				// A NIC that failed since keeps the leaf it was planned
				// under.
				leaf, ok = c.leafSeen[nicKey{h.pod.Spec.NodeName, n}]
			}
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
	if len(nodes) == 1 && len(leaves) <= 1 {
		return "" // tier node: the narrowest, within every limit
	}
	var where []string
	for _, h := range held {
		where = append(where, fmt.Sprintf("%s@%s[%s]", h.pod.Name, h.pod.Spec.NodeName, ledger.FormatNICs(h.nics)))
	}
	sort.Strings(where)
	switch tier {
	case placement.TierNode:
		// One node, and its NICs under one S0 (a node whose NICs hang off
		// two S0s talks through S1).
		if len(nodes) > 1 || len(leaves) > 1 {
			return fmt.Sprintf("hard tier node, pods on %d nodes %v, NICs under %d S0s; pods %s", len(nodes), sortedKeys(nodes), len(leaves), strings.Join(where, " "))
		}
	case placement.TierS0:
		if len(leaves) > 1 {
			return fmt.Sprintf("hard tier s0, NICs under %d S0s %v; pods %s", len(leaves), sortedKeys(leaves), strings.Join(where, " "))
		}
	case placement.TierS1:
		if len(s1s) > 1 {
			return fmt.Sprintf("hard tier s1, NICs under %d S1s %v; pods %s", len(s1s), sortedKeys(s1s), strings.Join(where, " "))
		}
	}
	return ""
}

// allNICs returns the NICs of every zone, sorted.
func allNICs(zones map[int][]topology.NICID) []topology.NICID {
	var out []topology.NICID
	for _, nics := range zones {
		out = append(out, nics...)
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

// listingKey names a consumer on a node in the result of kcnrListings.
func listingKey(node, consumer string) string { return node + "|" + consumer }

// listingOf returns what the pod's node's KCNR lists the pod on.
func listingOf(listed map[string]map[int][]topology.NICID, p *corev1.Pod) (map[int][]topology.NICID, bool) {
	zones, ok := listed[listingKey(p.Spec.NodeName, nodeagent.Consumer(p))]
	return zones, ok
}

// kcnrListings returns, per node and consumer (listingKey), the NICs the
// node's KCNR lists the consumer on, by NUMA zone (PCI addresses in lower
// case, sorted). A consumer listed on no NIC is absent.
func kcnrListings(cnrs []*v1alpha1.CustomNodeResource) map[string]map[int][]topology.NICID {
	out := map[string]map[int][]topology.NICID{}
	var node string
	var walk func(zones []*v1alpha1.TopologyZone, numa int)
	walk = func(zones []*v1alpha1.TopologyZone, numa int) {
		for _, z := range zones {
			if z == nil {
				continue
			}
			at := numa
			switch z.Type {
			case v1alpha1.TopologyTypeNuma:
				if id, err := strconv.Atoi(z.Name); err == nil {
					at = id
				}
			case v1alpha1.TopologyTypeNIC:
				for _, a := range z.Allocations {
					if a == nil || a.Consumer == "" {
						continue
					}
					k := listingKey(node, a.Consumer)
					m := out[k]
					if m == nil {
						m = map[int][]topology.NICID{}
						out[k] = m
					}
					m[at] = append(m[at], topology.NICID(strings.ToLower(z.Name)))
				}
			}
			walk(z.Children, at)
		}
	}
	for _, cnr := range cnrs {
		node = cnr.Name
		walk(cnr.Status.TopologyZone, -1)
	}
	for _, m := range out {
		for numa := range m {
			sort.Slice(m[numa], func(i, j int) bool { return m[numa][i] < m[numa][j] })
		}
	}
	return out
}

// recordPlans keeps, for each bound pod first seen bound, the NICs its
// annotation names: the plan the scheduler bound it with (nothing patches a
// pod in the session that binds it: adoption patches only pods a KCNR
// lists, and adoption runs when the session opens). A pod whose KCNR entry
// appears is counted in NICMismatches, once, when that entry names other
// NICs than its plan. Pods that are no longer bound are forgotten.
func (c *Checker) recordPlans(o *Observation, held []heldPod, listed map[string]map[int][]topology.NICID) {
	if c.planned == nil {
		c.planned = map[string][]topology.NICID{}
		c.listedSeen = map[string]bool{}
	}
	live := map[string]bool{}
	for _, h := range held {
		uid := string(h.pod.UID)
		live[uid] = true
		if _, ok := c.planned[uid]; !ok {
			c.planned[uid] = append([]topology.NICID(nil), h.nics...)
		}
		zones, ok := listingOf(listed, h.pod)
		if !ok || c.listedSeen[uid] {
			continue
		}
		c.listedSeen[uid] = true
		if d := cmp.Diff(sortedNICs(c.planned[uid]), allNICs(zones)); d != "" {
			c.NICMismatches++
		}
	}
	for uid := range c.planned {
		if !live[uid] {
			delete(c.planned, uid)
			delete(c.listedSeen, uid)
		}
	}
}

func sortedNICs(nics []topology.NICID) []topology.NICID {
	out := append([]topology.NICID(nil), nics...)
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
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
	// A pending pod pipelined by a preemption (nominated to the node, or of
	// a gang this cycle's evictions name as preemptor) keeps a reservation
	// until the next session opens, where the hold takes over.
	preemptors := map[string]bool{}
	for _, e := range o.Evictions {
		if e.Preemptor != "" {
			preemptors[e.Preemptor] = true
		}
	}
	pipelined := map[string]string{}
	for _, p := range o.Pods {
		switch {
		case bound(p):
		case p.Status.NominatedNodeName != "":
			pipelined[string(p.UID)] = p.Status.NominatedNodeName
		case preemptors[p.Namespace+"/"+p.Annotations[ledger.GroupNameAnnotation]]:
			pipelined[string(p.UID)] = "*"
		}
	}
	for _, r := range o.Ledger {
		if n := pipelined[r.UID]; n == r.Node || n == "*" {
			continue
		}
		if _, ok := want[r.UID]; ok || o.FailedBinds[r.UID] {
			continue
		}
		add(KindLedgerMismatch, r.Namespace+"/"+r.Name, "ledger holds NICs %s on %s for a pod that is not bound with them (leak)",
			ledger.FormatNICs(r.NICs()), r.Node)
	}
}

// checkKCNRTruth checks that the KCNR is the truth for every pod it lists:
// once a bound pod's KCNR entry lists it on NICs (the KCNR lag has passed
// for it), its ledger reservation holds exactly those NICs, in the zones
// the KCNR lists them in: the scheduler adopted the node's choice, holds
// no NIC the pod does not have (no leaked capacity) and lacks none it has.
// The KCNRs are those the cycle's session saw (adoption runs when the
// session opens). A pod listed on no NIC says nothing about NICs and is
// skipped, as the scheduler skips it.
func (c *Checker) checkKCNRTruth(o *Observation, listed map[string]map[int][]topology.NICID, add addFunc) {
	if o.Ledger == nil {
		return
	}
	got := make(map[string]ledger.Reservation, len(o.Ledger))
	for _, r := range o.Ledger {
		got[r.UID] = r
	}
	for _, p := range o.Pods {
		if !bound(p) || c.rdmaRequest(p) == 0 {
			continue
		}
		zones, ok := listingOf(listed, p)
		if !ok {
			continue
		}
		r, ok := got[string(p.UID)]
		if !ok {
			add(KindKCNRDivergence, podKey(p), "its KCNR lists it on NICs %s, but the ledger holds no reservation", ledger.FormatNICs(allNICs(zones)))
			continue
		}
		if r.Node != p.Spec.NodeName {
			add(KindKCNRDivergence, podKey(p), "bound to %s, but the ledger reserves on %s", p.Spec.NodeName, r.Node)
			continue
		}
		held := map[int][]topology.NICID{}
		for _, z := range r.Zones {
			if len(z.NICs) > 0 {
				held[z.NUMA] = sortedNICs(z.NICs)
			}
		}
		if d := cmp.Diff(zones, held); d != "" {
			add(KindKCNRDivergence, podKey(p), "ledger differs from what its KCNR lists, NICs per NUMA zone (-KCNR +ledger):\n%s", d)
		}
	}
}

// checkEvictions checks the cycle's evictions: no victim is marked
// non-preemptable; a victim of a gang of another queue is in a reclaimable
// queue (reclaim, which ranks no priorities); a victim of a gang of its
// own queue has a priority (the higher of its own and its gang's) strictly
// below the gang's (preempt); and no victim gang is left with
// 0 < bound < minMember pods.
func (c *Checker) checkEvictions(o *Observation, add addFunc) {
	if len(o.Evictions) == 0 {
		return
	}
	victims := map[string]bool{}
	for _, e := range o.Evictions {
		victims[e.Gang] = true
		if e.Preemptor == "" {
			add(KindHigherPriorityEvicted, e.Pod, "evicted with no preemptor named (reason %q)", e.Reason)
			continue
		}
		pre, ok := o.Priorities[e.Preemptor]
		if !ok {
			add(KindHigherPriorityEvicted, e.Pod, "evicted for %s, which the soak never submitted", e.Preemptor)
			continue
		}
		if o.NonPreemptable[e.Gang] {
			add(KindNonPreemptableEvicted, e.Pod, "evicted for %s though its pods carry volcano.sh/preemptable: \"false\"", e.Preemptor)
		}
		if q, qp := o.Queues[e.Gang], o.Queues[e.Preemptor]; q != qp {
			if !reclaimableQueue(q) {
				add(KindWrongQueueEvicted, e.Pod, "evicted from queue %q, which is not reclaimable, for %s of queue %q", q, e.Preemptor, qp)
			}
			continue
		}
		prio := max(e.Priority, o.Priorities[e.Gang])
		if prio >= pre {
			add(KindHigherPriorityEvicted, e.Pod, "priority %d evicted for %s of priority %d", prio, e.Preemptor, pre)
		}
	}
	boundBy := boundPerGang(o)
	for _, pg := range o.PodGroups {
		key := pg.Namespace + "/" + pg.Name
		if !victims[key] {
			continue
		}
		if n := boundBy[key]; n > 0 && n < int(pg.Spec.MinMember) {
			add(KindPartialVictim, key, "%d of minMember %d pods still bound after its evictions", n, pg.Spec.MinMember)
		}
	}
}

// checkFaults checks the pods bound in the cycle against the injected
// faults (none on failed hardware or a cooling NIC) and grades each
// replacement of a lost pod.
func (c *Checker) checkFaults(o *Observation, add addFunc) {
	fv := o.Faults
	if fv == nil {
		return
	}
	for _, p := range o.Pods {
		if !bound(p) || !o.JustBound[string(p.UID)] {
			continue
		}
		node := p.Spec.NodeName
		nics, _ := ledger.ParseNICs(p.Annotations[ledger.AnnotationNICs])
		var bad []string
		if fv.FailedNodes[node] {
			bad = append(bad, "node "+node+" is NotReady")
		}
		for _, n := range nics {
			switch k := (nicKey{node, n}); {
			case fv.Down[k]:
				bad = append(bad, "NIC "+string(n)+" failed")
			case fv.Cooling[k]:
				bad = append(bad, "NIC "+string(n)+" is in its cool-down")
			}
		}
		if len(bad) > 0 {
			c.PlacedOnFailed++
			add(KindPlacedOnFailed, podKey(p), "bound on %s: %s", node, strings.Join(bad, "; "))
		}
		l, lost := fv.Lost[podKey(p)]
		if !lost || c.rdmaRequest(p) == 0 {
			continue
		}
		c.Replacements++
		var leaves []topology.S0ID
		for _, n := range nics {
			if id, ok := o.Fabric.NICLeaf(node, n); ok && !slices.Contains(leaves, id) {
				leaves = append(leaves, id)
			}
		}
		inLeaf := len(leaves) > 0 && subset(leaves, l.Leaves)
		inS1 := len(leaves) > 0
		for _, id := range leaves {
			leaf, ok := o.Fabric.Leaf(id)
			inS1 = inS1 && ok && slices.Contains(l.S1s, leaf.S1)
		}
		switch {
		case inLeaf:
			c.ReplacementsInLeaf++
			c.ReplacementsWithinTier++
		default:
			room := c.roomUnder(o, p, l.Leaves)
			if inS1 && room == "" {
				c.ReplacementsWithinTier++
				break
			}
			c.OutsideTier = append(c.OutsideTier, fmt.Sprintf("cycle %d: %s (lost to %s in cycle %d) bound on %s under %v; gang leaves %v, S1s %v, in S1 %v; room under the gang's leaves: %s",
				o.Cycle, podKey(p), l.Kind, l.Cycle, node, leaves, l.Leaves, l.S1s, inS1, room))
		}
	}
}

// subset reports whether every element of xs is in set.
func subset[T comparable](xs, set []T) bool {
	for _, x := range xs {
		if !slices.Contains(set, x) {
			return false
		}
	}
	return true
}

// roomUnder reports whether, in the view the cycle's session started from
// (its KCNRs, less the pods bound before it that those KCNRs did not list
// yet, the other replacements bound in it and the NICs the gang's failed
// binds of the cycle named), a usable node had room (it
// names it; "" when none had) for
// the pod's GPUs, CPU and NICs with every NIC under the leaves: in one NUMA
// zone on nodes that bind a pod to one zone, across zones on the others.
// Failed and cooling NICs, failed nodes and failed leaves have no room.
func (c *Checker) roomUnder(o *Observation, p *corev1.Pod, leaves []topology.S0ID) string {
	fv := o.Faults
	f := fv.SessionFabric
	if f == nil {
		return ""
	}
	gpu, cpu, nicsNeed := c.podNeeds(p)
	listed := kcnrListings(o.SessionCNRs)
	// taken: node/NIC -> RDMA units; used: node -> zone -> [gpu, cpu] of
	// pods the session's KCNRs did not list.
	taken := map[nicKey]int64{}
	used := map[string]map[int][2]int64{}
	for _, q := range o.Pods {
		if !bound(q) || q.UID == p.UID {
			continue
		}
		if o.JustBound[string(q.UID)] {
			if _, repl := fv.Lost[podKey(q)]; !repl {
				continue
			}
		}
		if _, ok := listingOf(listed, q); ok {
			continue
		}
		qn, _ := ledger.ParseNICs(q.Annotations[ledger.AnnotationNICs])
		for _, n := range qn {
			taken[nicKey{q.Spec.NodeName, n}]++
		}
		g, cp, _ := c.podNeeds(q)
		zones := strings.Split(q.Annotations[ledger.AnnotationNUMA], ",")
		if id, err := strconv.Atoi(strings.TrimSpace(zones[0])); err == nil {
			m := used[q.Spec.NodeName]
			if m == nil {
				m = map[int][2]int64{}
				used[q.Spec.NodeName] = m
			}
			u := m[id]
			m[id] = [2]int64{u[0] + g, u[1] + cp}
		}
	}
	// The room a pod of the same gang was sent to bind on in this cycle
	// is the gang's even when that bind failed: the scheduler gave it to
	// a sibling replacement.
	gang := p.Namespace + "/" + p.Annotations[ledger.GroupNameAnnotation]
	for _, nn := range o.GangFailedNICs[gang] {
		taken[nicKey{nn.Node, nn.NIC}]++
	}
	for _, name := range f.NodeNames() {
		if fv.FailedNodes[name] || !admits(fv.Nodes[name], p, o.Pods, corev1.ResourceName(c.Config.GPUResource)) {
			continue
		}
		n, _ := f.Node(name)
		var sumG, sumC, sumN int64
		for _, z := range n.Zones {
			u := used[name][z.ID]
			g, cp := z.FreeGPU-u[0], z.FreeCPUMilli-u[1]
			var free int64
			for _, nic := range z.NICs {
				k := nicKey{name, nic.ID}
				claimer, claimed := c.claimed[k]
				claimed = claimed && claimer != gang
				if slices.Contains(leaves, nic.S0) && nic.FreeUnits > taken[k] && !fv.Down[k] && !fv.Cooling[k] && !claimed {
					free++
				}
			}
			if n.Policy.Aligned() && g >= gpu && cp >= cpu && free >= nicsNeed {
				return fmt.Sprintf("%s NUMA %d", name, z.ID)
			}
			sumG, sumC, sumN = sumG+max(g, 0), sumC+max(cp, 0), sumN+free
		}
		if !n.Policy.Aligned() && sumG >= gpu && sumC >= cpu && sumN >= nicsNeed {
			return name
		}
	}
	return ""
}

// podNeeds returns a pod's GPUs, CPU millicores and RDMA units (its
// containers' requests).
func (c *Checker) podNeeds(p *corev1.Pod) (gpu, cpuMilli, nics int64) {
	for _, ct := range p.Spec.Containers {
		q := ct.Resources.Requests
		if v, ok := q[corev1.ResourceName(c.Config.GPUResource)]; ok {
			gpu += v.Value()
		}
		cpuMilli += q.Cpu().MilliValue()
	}
	return gpu, cpuMilli, c.rdmaRequest(p)
}

// admits reports whether Kubernetes would let the pod onto the node, for
// what the soak's constraints vary: the node's taints, the pod's required
// node selection, the node's memory, CPU and GPUs and host ports beside
// the pods bound there, whether the KCNR lists them or not (Kubernetes'
// own helpers for taints and node affinity).
func admits(node *corev1.Node, p *corev1.Pod, pods []*corev1.Pod, gpu corev1.ResourceName) bool {
	if node == nil {
		return false
	}
	if _, bad := corev1helpers.FindMatchingUntoleratedTaint(node.Spec.Taints, p.Spec.Tolerations, func(t *corev1.Taint) bool {
		return t.Effect == corev1.TaintEffectNoSchedule || t.Effect == corev1.TaintEffectNoExecute
	}); bad {
		return false
	}
	if ok, _ := nodeaffinity.GetRequiredNodeAffinity(p).Match(node); !ok {
		return false
	}
	memFree := node.Status.Allocatable.Memory().Value()
	cpuFree := node.Status.Allocatable.Cpu().MilliValue()
	gq := node.Status.Allocatable[gpu]
	gpuFree := gq.Value()
	take := func(c corev1.Container) {
		memFree -= c.Resources.Requests.Memory().Value()
		cpuFree -= c.Resources.Requests.Cpu().MilliValue()
		q := c.Resources.Requests[gpu]
		gpuFree -= q.Value()
	}
	ports := map[int32]bool{}
	for _, q := range pods {
		if q.UID == p.UID || !bound(q) || q.Spec.NodeName != node.Name {
			continue
		}
		for _, c := range q.Spec.Containers {
			take(c)
			for _, cp := range c.Ports {
				if cp.HostPort > 0 {
					ports[cp.HostPort] = true
				}
			}
		}
	}
	for _, c := range p.Spec.Containers {
		take(c)
		for _, cp := range c.Ports {
			if cp.HostPort > 0 && ports[cp.HostPort] {
				return false
			}
		}
	}
	return memFree >= 0 && cpuFree >= 0 && gpuFree >= 0
}

// trackClaims records the NICs the cycle's evictions freed for their
// preemptors, and forgets the claims of preemptors placed or gone.
func (c *Checker) trackClaims(o *Observation) {
	if c.claimed == nil {
		c.claimed = map[nicKey]string{}
	}
	for _, ev := range o.Evictions {
		if ev.Preemptor == "" {
			continue
		}
		for _, n := range ev.NICs {
			c.claimed[nicKey{ev.Node, n}] = ev.Preemptor
		}
	}
	boundBy := boundPerGang(o)
	min := map[string]int32{}
	for _, pg := range o.PodGroups {
		min[pg.Namespace+"/"+pg.Name] = pg.Spec.MinMember
	}
	for k, g := range c.claimed {
		m, live := min[g]
		if !live || int32(boundBy[g]) >= m {
			delete(c.claimed, k)
		}
	}
}
