package nodeagent

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/kubewharf/katalyst-api/pkg/apis/node/v1alpha1"
	"github.com/kubewharf/katalyst-api/pkg/consts"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/rdmatopo/rdmatopo/core/ledger"
	"github.com/rdmatopo/rdmatopo/core/topology"
	"github.com/rdmatopo/rdmatopo/internal/workload"
)

// Mode says how the agent hands a bound pod its NUMA zone(s) and NICs.
// The node, not the scheduler, has the last word: the KCNR then lists what
// the agent chose, and the scheduler adopts it where it differs from the
// plan. Stock Volcano writes no numa_bind_result, so under NUMA its pods
// take the unhinted path (as under Blind).
type Mode string

const (
	// Exact gives the pod the NICs of its rdmatopo.io/nics annotation
	// (a node that follows the plan to the NIC).
	Exact Mode = "exact"
	// NUMA honours katalyst's numa_bind_result: the pod gets the hinted
	// zone(s) when they have room, and inside them the free NICs in the
	// agent's own order (the NICs with the most free RDMA units first,
	// then by name; by name on NICs of one unit), whatever NICs the
	// scheduler annotated. Each of a pod's NICs is a distinct NIC, one
	// unit of it.
	// Without a usable hint, or without room in the hinted zones, it acts
	// as Blind. On a container-level node a pod of several containers
	// is placed container by container (perContainer).
	NUMA Mode = "numa"
	// Blind ignores the hint and takes the first NUMA zone (lowest id)
	// with room for the pod's GPUs, CPU and NICs, as a kubelet topology
	// manager without hints would; on a container-level node, the first
	// zone with room for each container in turn.
	Blind Mode = "blind"
)

// Default is the mode of `rdmatopo simulate`, bench, soak and the
// end-to-end driver unless told otherwise: a node that honours the NUMA
// hint only.
const Default = NUMA

// Modes lists every mode, the default first.
var Modes = []Mode{NUMA, Exact, Blind}

// ParseMode reads a --node-agent value.
func ParseMode(s string) (Mode, error) {
	for _, a := range Modes {
		if string(a) == s {
			return a, nil
		}
	}
	names := make([]string, len(Modes))
	for i, a := range Modes {
		names[i] = string(a)
	}
	return "", fmt.Errorf("unknown node agent %q: must be one of %s", s, strings.Join(names, ", "))
}

// agentZone is one NUMA zone as the agent sees it: what is still free.
type agentZone struct {
	id  int
	gpu int64
	cpu int64
	// nics are the zone's NICs with a free unit: the most free units
	// first, then by name (so a NIC of several units is shared out
	// evenly, leaving the most distinct NICs for pods of several).
	nics []topology.NICID
}

// podAsk is what a pod asks of its node.
type podAsk struct {
	nics int
	gpu  int64
	cpu  int64
}

// Outcome says which of the agent's rules placed a pod (see Decide).
type Outcome int

const (
	// Unplaced: nothing to report (no RDMA asked, no KCNR, no NIC listed).
	Unplaced Outcome = iota
	// Followed: the NICs of the pod's rdmatopo.io/nics annotation, as
	// Exact asks.
	Followed
	// Hinted: the zone(s) katalyst's numa_bind_result names (NUMA).
	Hinted
	// PerContainer: each container in one zone, on a container-level node.
	PerContainer
	// OneZone: the lowest zone that holds the whole pod, as kubelet's
	// topology manager admits a pod without a hint.
	OneZone
	// Spread: no one zone holds the pod, so it is spread over the zones in
	// id order; a kubelet with the single-numa-node policy would reject it.
	Spread
	// Overflow: not even all zones together hold the pod, so the agent
	// keeps the scheduler's annotated NICs (a kubelet would reject it;
	// the simulation keeps the scheduler's accounting).
	Overflow
)

var outcomeNames = [...]string{"unplaced", "followed", "hinted", "per-container", "one-zone", "spread", "overflow"}

func (o Outcome) String() string {
	if o >= 0 && int(o) < len(outcomeNames) {
		return outcomeNames[o]
	}
	return fmt.Sprintf("Outcome(%d)", int(o))
}

// Misaligned reports whether the pod was given NUMA zones no kubelet with
// the single-numa-node policy would admit it to: spread or overflowing,
// without a hint asking for it.
func (o Outcome) Misaligned() bool { return o == Spread || o == Overflow }

// Allot returns what the agent in mode a gives pod p on the node whose
// KCNR is cnr; the second result is false when there is nothing to report
// (see Decide, which also says which rule placed the pod).
func Allot(a Mode, cfg topology.Config, cnr *v1alpha1.CustomNodeResource, held []ledger.Reservation, p *corev1.Pod) (ledger.Reservation, bool) {
	r, how := Decide(a, cfg, cnr, held, p)
	return r, how != Unplaced
}

// Decide returns what the agent in mode a gives pod p on the node whose
// KCNR is cnr, and the rule that placed it. Free capacity is the KCNR's
// allocatable minus its allocations, minus held: what the agent already
// handed out on that node that the KCNR does not list yet (nil when the
// KCNR is current). The outcome is Unplaced when there is nothing to
// report: the pod requests no RDMA, or the KCNR lists no NIC the pod could
// get.
//
// A pod without a usable hint gets the lowest zone with room for its GPUs,
// CPU and NICs: katalyst's QRM plugins offer every zone with room as an
// equally preferred single-zone hint, in id order, and kubelet's topology
// manager keeps the first of equally narrow hints. When no zone has room,
// the agent spreads the pod over the zones in id order if together they
// hold it, and otherwise gives it the NICs it was annotated with.
func Decide(a Mode, cfg topology.Config, cnr *v1alpha1.CustomNodeResource, held []ledger.Reservation, p *corev1.Pod) (ledger.Reservation, Outcome) {
	cfg = cfg.WithDefaults()
	r := ledger.Reservation{UID: string(p.UID), Namespace: p.Namespace, Name: p.Name,
		Job: p.Namespace + "/" + p.Annotations[ledger.GroupNameAnnotation], Node: p.Spec.NodeName}
	if cnr == nil {
		return r, Unplaced
	}
	req := workload.PodRequests(&p.Spec)
	ask := podAsk{}
	if q, ok := req[corev1.ResourceName(cfg.RDMAResource)]; ok {
		ask.nics = int(q.Value())
	}
	if q, ok := req[corev1.ResourceName(cfg.GPUResource)]; ok {
		ask.gpu = q.Value()
	}
	if q, ok := req[corev1.ResourceCPU]; ok {
		ask.cpu = q.MilliValue()
	}
	if ask.nics <= 0 {
		return r, Unplaced
	}
	node := topology.BuildNode(cfg, nil, cnr)
	if node == nil || !listsNICs(cnr) {
		return r, Unplaced
	}
	zones := freeZones(node, held, r.UID)

	var uses []ledger.ZoneUse
	how := Unplaced
	if asks := containerAsks(cfg, p); a != Exact && node.Policy == topology.PolicySingleNUMAContainer && len(asks) > 1 {
		hint := ""
		if a == NUMA {
			hint = p.Annotations[consts.PodAnnotationNUMABindResultKey]
		}
		uses, how = perContainer(zones, asks, hint), PerContainer
	}
	if uses == nil && a == NUMA {
		uses, how = hinted(zones, p.Annotations[consts.PodAnnotationNUMABindResultKey], ask), Hinted
	}
	if uses == nil && a != Exact {
		uses, how = firstWithRoom(zones, ask), OneZone
		if uses == nil {
			uses, how = spread(zones, ask), Spread
		}
	}
	if uses == nil {
		uses, how = annotated(cfg, node, p, ask), Followed
		if a != Exact {
			how = Overflow
		}
	}
	r.Zones = uses
	if len(uses) == 0 {
		return r, Unplaced
	}
	return r, how
}

// containerAsks lists what each of the pod's containers that run side by
// side (sidecar init containers, then regular ones) asks, leaving out those
// that ask for no GPU, NIC or CPU.
func containerAsks(cfg topology.Config, p *corev1.Pod) []podAsk {
	var out []podAsk
	add := func(c *corev1.Container) {
		q := c.Resources.Requests
		ask := podAsk{cpu: q.Cpu().MilliValue()}
		if v, ok := q[corev1.ResourceName(cfg.RDMAResource)]; ok {
			ask.nics = int(v.Value())
		}
		if v, ok := q[corev1.ResourceName(cfg.GPUResource)]; ok {
			ask.gpu = v.Value()
		}
		if ask.nics > 0 || ask.gpu > 0 || ask.cpu > 0 {
			out = append(out, ask)
		}
	}
	for i := range p.Spec.InitContainers {
		if c := &p.Spec.InitContainers[i]; c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways {
			add(c)
		}
	}
	for i := range p.Spec.Containers {
		add(&p.Spec.Containers[i])
	}
	return out
}

// perContainer is kubelet's topology manager with scope container: each
// container, in order, gets one zone, the hinted one when the hint names
// exactly one zone with room for it (katalyst's numa_bind_result is one
// value per pod, matched against each container's single-zone hints, so a
// hint naming several zones prefers none), else the lowest zone with room.
// The uses are merged per zone, by NUMA id; nil when a container finds no
// zone.
func perContainer(zones []agentZone, asks []podAsk, hint string) []ledger.ZoneUse {
	zones = slices.Clone(zones)
	pref := -1
	if ids, err := ledger.ParseNUMA(hint); err == nil && len(ids) == 1 {
		pref = ids[0]
	}
	byZone := map[int]*ledger.ZoneUse{}
	for _, ask := range asks {
		pick := -1
		for i, z := range zones {
			if z.room(ask) && (pick < 0 || z.id == pref) {
				pick = i
			}
		}
		if pick < 0 {
			return nil
		}
		u := zones[pick].take(ask)
		zones[pick].gpu -= ask.gpu
		zones[pick].cpu -= ask.cpu
		zones[pick].nics = zones[pick].nics[ask.nics:]
		if m, ok := byZone[u.NUMA]; ok {
			m.GPU += u.GPU
			m.CPUMilli += u.CPUMilli
			m.NICs = append(m.NICs, u.NICs...)
		} else {
			byZone[u.NUMA] = &u
		}
	}
	out := make([]ledger.ZoneUse, 0, len(byZone))
	for _, u := range byZone {
		slices.Sort(u.NICs)
		out = append(out, *u)
	}
	slices.SortFunc(out, func(a, b ledger.ZoneUse) int { return a.NUMA - b.NUMA })
	return out
}

// listsNICs reports whether a KCNR's zone tree holds a NIC zone.
func listsNICs(cnr *v1alpha1.CustomNodeResource) bool {
	var walk func([]*v1alpha1.TopologyZone) bool
	walk = func(zs []*v1alpha1.TopologyZone) bool {
		for _, z := range zs {
			if z != nil && (z.Type == v1alpha1.TopologyTypeNIC || walk(z.Children)) {
				return true
			}
		}
		return false
	}
	return walk(cnr.Status.TopologyZone)
}

// freeZones lists the node's zones (by id) with what is free once held,
// except the pod's own reservation, is taken.
func freeZones(node *topology.Node, held []ledger.Reservation, self string) []agentZone {
	units := map[topology.NICID]int64{}
	gpu, cpu := map[int]int64{}, map[int]int64{}
	for _, z := range node.Zones {
		gpu[z.ID], cpu[z.ID] = z.FreeGPU, z.FreeCPUMilli
		for _, n := range z.NICs {
			units[n.ID] = n.FreeUnits
		}
	}
	for _, h := range held {
		if h.UID == self {
			continue
		}
		for _, u := range h.Zones {
			gpu[u.NUMA] -= u.GPU
			cpu[u.NUMA] -= u.CPUMilli
			for _, n := range u.NICs {
				units[n]--
			}
		}
	}
	out := make([]agentZone, 0, len(node.Zones))
	for _, z := range node.Zones {
		az := agentZone{id: z.ID, gpu: max(gpu[z.ID], 0), cpu: max(cpu[z.ID], 0)}
		for _, n := range z.NICs {
			if units[n.ID] > 0 {
				az.nics = append(az.nics, n.ID)
			}
		}
		slices.SortStableFunc(az.nics, func(a, b topology.NICID) int { return cmp.Compare(units[b], units[a]) })
		out = append(out, az)
	}
	return out
}

// room reports whether one zone holds the whole pod.
func (z agentZone) room(ask podAsk) bool {
	return z.gpu >= ask.gpu && z.cpu >= ask.cpu && len(z.nics) >= ask.nics
}

// take is the pod's whole use of one zone with room: its first free NICs.
func (z agentZone) take(ask podAsk) ledger.ZoneUse {
	return ledger.ZoneUse{NUMA: z.id, GPU: ask.gpu, CPUMilli: ask.cpu, NICs: sortedNICs(z.nics[:ask.nics])}
}

// sortedNICs is a sorted copy of nics (a pod's NICs as the ledger keeps
// them).
func sortedNICs(nics []topology.NICID) []topology.NICID {
	out := slices.Clone(nics)
	slices.Sort(out)
	return out
}

// hinted places the pod in the zones numa_bind_result names: the zone if
// it names one with room, the named zones together (greedily, by id) if it
// names several that hold the pod; nil otherwise.
func hinted(zones []agentZone, hint string, ask podAsk) []ledger.ZoneUse {
	ids, err := ledger.ParseNUMA(hint)
	if err != nil || len(ids) == 0 {
		return nil
	}
	want := map[int]bool{}
	for _, id := range ids {
		want[id] = true
	}
	var sel []agentZone
	for _, z := range zones {
		if want[z.id] {
			sel = append(sel, z)
		}
	}
	if len(sel) != len(want) {
		return nil // a zone the node does not have
	}
	if len(sel) == 1 {
		if !sel[0].room(ask) {
			return nil
		}
		return []ledger.ZoneUse{sel[0].take(ask)}
	}
	return spread(sel, ask)
}

// firstWithRoom places the pod in the lowest zone that holds all of it.
func firstWithRoom(zones []agentZone, ask podAsk) []ledger.ZoneUse {
	for _, z := range zones {
		if z.room(ask) {
			return []ledger.ZoneUse{z.take(ask)}
		}
	}
	return nil
}

// spread takes what the pod asks from the zones in order, each giving what
// it has left; nil when together they fall short.
func spread(zones []agentZone, ask podAsk) []ledger.ZoneUse {
	var out []ledger.ZoneUse
	left := ask
	for _, z := range zones {
		u := ledger.ZoneUse{NUMA: z.id, GPU: min(z.gpu, left.gpu), CPUMilli: min(z.cpu, left.cpu)}
		n := min(len(z.nics), left.nics)
		u.NICs = sortedNICs(z.nics[:n])
		left.gpu -= u.GPU
		left.cpu -= u.CPUMilli
		left.nics -= n
		if u.GPU > 0 || u.CPUMilli > 0 || n > 0 {
			out = append(out, u)
		}
	}
	if left.gpu > 0 || left.cpu > 0 || left.nics > 0 {
		return nil
	}
	return out
}

// annotated gives the pod the NICs of its rdmatopo.io/nics annotation that
// the node has, in their zones (first seen first), with the GPUs and CPU of
// the containers rdmatopo.io/containers puts in each zone, or, without it,
// the pod's GPUs and CPU split evenly over those zones (the first zones
// taking the remainder, as ledger.Rebuild splits them).
func annotated(cfg topology.Config, node *topology.Node, p *corev1.Pod, ask podAsk) []ledger.ZoneUse {
	zoneOf := map[topology.NICID]int{}
	for _, z := range node.Zones {
		for _, n := range z.NICs {
			zoneOf[n.ID] = z.ID
		}
	}
	var out []ledger.ZoneUse
	at := map[int]int{}
	for _, nic := range AnnotatedNICs(p) {
		id, ok := zoneOf[nic]
		if !ok {
			continue
		}
		i, seen := at[id]
		if !seen {
			i = len(out)
			at[id] = i
			out = append(out, ledger.ZoneUse{NUMA: id})
		}
		if !containsNIC(out[i].NICs, nic) {
			out[i].NICs = append(out[i].NICs, nic)
		}
	}
	if byContainer(cfg, p, out) {
		return out
	}
	gpus, cpus := ledger.SplitEvenly(ask.gpu, len(out)), ledger.SplitEvenly(ask.cpu, len(out))
	for i := range out {
		out[i].GPU, out[i].CPUMilli = gpus[i], cpus[i]
	}
	return out
}

// byContainer gives each zone of uses the GPUs and CPU of the containers
// the pod's rdmatopo.io/containers annotation puts there, and reports
// whether it could: the annotation reads, names only the pod's containers
// (regular or sidecar) and only zones of uses.
func byContainer(cfg topology.Config, p *corev1.Pod, uses []ledger.ZoneUse) bool {
	cs, err := ledger.ParseContainers(p.Annotations[ledger.AnnotationContainers])
	if err != nil || len(cs) == 0 {
		return false
	}
	req := map[string]corev1.ResourceList{}
	for _, c := range p.Spec.Containers {
		req[c.Name] = c.Resources.Requests
	}
	for _, c := range p.Spec.InitContainers {
		if c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways {
			req[c.Name] = c.Resources.Requests
		}
	}
	gpu, cpu := map[int]int64{}, map[int]int64{}
	for _, g := range cs {
		if !slices.ContainsFunc(uses, func(u ledger.ZoneUse) bool { return u.NUMA == g.NUMA }) {
			return false
		}
		for _, name := range g.Names {
			r, ok := req[name]
			if !ok {
				return false
			}
			gpu[g.NUMA] += r.Name(corev1.ResourceName(cfg.GPUResource), resource.DecimalSI).Value()
			cpu[g.NUMA] += r.Cpu().MilliValue()
		}
	}
	for i := range uses {
		uses[i].GPU, uses[i].CPUMilli = gpu[uses[i].NUMA], cpu[uses[i].NUMA]
	}
	return true
}
