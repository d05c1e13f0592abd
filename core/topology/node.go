package topology

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/kubewharf/katalyst-api/pkg/apis/node/v1alpha1"
	corev1 "k8s.io/api/core/v1"
)

const (
	// maxSyntheticNICs bounds the NICs invented for a node whose RDMA
	// capacity is known only from its Node object.
	maxSyntheticNICs = 64
	// maxNUMAID bounds the NUMA ids accepted from zone names.
	maxNUMAID = 1 << 16
	// maxResourceValue bounds any single quantity read from cluster data, so
	// sums never overflow int64.
	maxResourceValue = 1e12
	// syntheticNICPrefix prefixes the ids of NICs invented from a Node's RDMA
	// allocatable when the node has no usable KCNR.
	syntheticNICPrefix = SyntheticNICPrefix
)

// BuildNode reads one node's fabric view from its Node and its KCNR. It is
// pure and never panics; either argument may be nil:
//   - node nil: the KCNR alone is read and S1 is unknown;
//   - cnr nil: the node gets ReasonNoKCNR and one synthetic zone of
//     topology-unknown NICs if its Node shows RDMA allocatable, else no zones.
//
// It returns nil only when both are nil. Problems in the data become Reasons
// on the returned Node (sorted); the affected zones are skipped and the
// affected NICs get a synthetic leaf (UnknownS0).
func BuildNode(cfg Config, node *corev1.Node, cnr *v1alpha1.CustomNodeResource) *Node {
	return (&nodeBuilder{}).build(cfg.WithDefaults(), node, cnr)
}

// build is BuildNode on a reusable builder (cfg already defaulted); Build
// reads a whole cluster with one builder.
func (b *nodeBuilder) build(cfg Config, node *corev1.Node, cnr *v1alpha1.CustomNodeResource) *Node {
	if node == nil && cnr == nil {
		return nil
	}
	b.reset(cfg)
	out := &Node{Policy: PolicySpanning, Generation: 1}
	if node != nil {
		out.Name = node.Name
		switch {
		case b.cfg.S1Source == S1FromHyperNode:
			s1, r := b.hyper.S1Of(node)
			out.S1 = s1
			if r != nil {
				b.reasons = append(b.reasons, *r)
			}
		case b.cfg.S1NodeLabel != "":
			out.S1 = S1ID(node.Labels[b.cfg.S1NodeLabel])
		}
	} else {
		out.Name = cnr.Name
		out.KCNROnly = true
	}
	b.node = out.Name

	switch {
	case cnr == nil:
		if b.synthesize(out, node) {
			b.add(ReasonNoKCNR, "", "node has %s allocatable but no CustomNodeResource", b.cfg.RDMAResource)
		}
	default:
		if node != nil && cnr.Name != node.Name {
			b.add(ReasonNameMismatch, "", "CustomNodeResource %q is read for node %q", cnr.Name, node.Name)
		}
		pol, known := ParsePolicy(cnr.Status.TopologyPolicy)
		if !known {
			b.add(ReasonUnknownPolicy, "", "status.topologyPolicy=%q is not a katalyst topology policy; read as %s",
				cnr.Status.TopologyPolicy, v1alpha1.TopologyPolicySingleNUMANodePodLevel)
		}
		out.Policy = pol
		b.collectConsumers(cnr.Status.TopologyZone)
		b.zones = make([]Zone, 0, len(cnr.Status.TopologyZone))
		b.readTop(cnr.Status.TopologyZone)
		switch {
		case len(b.zones) == 0:
			b.add(ReasonNoTopology, "", "status.topologyZone has no usable Numa zone")
			b.synthesize(out, node)
		case len(b.nicSeen.keys) == 0 && b.synthesize(out, node):
			// The zones are real but say nothing about the NICs the Node
			// reports: treat the node like one without topology.
			b.add(ReasonNoTopology, "", "status.topologyZone lists no NIC although the node has %s allocatable", b.cfg.RDMAResource)
		default:
			out.Zones = b.zones
			b.assignLeaves(out, node, cnr)
		}
	}

	out.Known = true
	for zi := range out.Zones {
		z := &out.Zones[zi]
		slices.SortFunc(z.NICs, func(a, b NIC) int { return strings.Compare(string(a.ID), string(b.ID)) })
		for _, n := range z.NICs {
			if n.S0.IsUnknown() {
				out.Known = false
			}
		}
	}
	slices.SortFunc(out.Zones, func(a, b Zone) int { return a.ID - b.ID })
	SortReasons(b.reasons)
	out.Reasons = b.reasons
	out.Consumers = b.consumers
	return out
}

// nodeBuilder accumulates the state of one BuildNode call.
type nodeBuilder struct {
	cfg Config
	// hyper answers the S1 of a node under S1FromHyperNode (nil: no
	// HyperNodes known, every node in the default S1).
	hyper   *HyperNodeIndex
	node    string
	reasons []Reason
	// consumers is nil until a consumer is seen.
	consumers map[string]bool
	zones     []Zone
	// numaSeen maps a NUMA id to the path of the zone that declared it.
	numaSeen smallIndex[int, zpath]
	// nicSeen maps a NIC to the path of the zone that declared it first.
	nicSeen smallIndex[NICID, zpath]
	// leaves maps a NIC to the leaf its RDMATOR property names.
	leaves smallIndex[NICID, S0ID]
	// badNames lists the NIC zones skipped for a name that cannot be handed
	// out (ReasonBadNICName); their RDMATOR properties are not reported again.
	badNames []NICID
}

// reset readies the builder for another node. Slices handed to the previous
// Node are dropped, not reused.
func (b *nodeBuilder) reset(cfg Config) {
	b.cfg, b.node = cfg, ""
	b.reasons, b.consumers, b.zones, b.badNames = nil, nil, nil, nil
	b.numaSeen.reset()
	b.nicSeen.reset()
	b.leaves.reset()
}

func (b *nodeBuilder) add(code ReasonCode, nic NICID, format string, args ...any) {
	b.reasons = append(b.reasons, Reason{Node: b.node, NIC: nic, Code: code, Message: fmt.Sprintf(format, args...)})
}

// synthesize gives the node one zone (id 0) of topology-unknown NICs when its
// Node object shows RDMA allocatable. It reports whether it did.
func (b *nodeBuilder) synthesize(out *Node, node *corev1.Node) bool {
	if node == nil {
		return false
	}
	field := field{node: true}
	n := b.quantity(node.Status.Allocatable, corev1.ResourceName(b.cfg.RDMAResource), false, field)
	if n <= 0 {
		return false
	}
	if n > maxSyntheticNICs {
		b.add(ReasonBadQuantity, "", "%s[%s]=%d exceeds %d NICs; using %d", field, b.cfg.RDMAResource, n, maxSyntheticNICs, maxSyntheticNICs)
		n = maxSyntheticNICs
	}
	z := Zone{
		ID:           0,
		FreeGPU:      b.quantity(node.Status.Allocatable, corev1.ResourceName(b.cfg.GPUResource), false, field),
		FreeCPUMilli: b.quantity(node.Status.Allocatable, corev1.ResourceCPU, true, field),
		NICs:         make([]NIC, 0, n),
	}
	for i := int64(0); i < n; i++ {
		id := NICID(syntheticNICPrefix + strconv.FormatInt(i, 10))
		z.NICs = append(z.NICs, NIC{ID: id, NUMA: 0, S0: UnknownS0(out.Name, id), Free: true, Units: 1, FreeUnits: 1})
	}
	out.Zones = []Zone{z}
	out.Policy = PolicySpanning
	return true
}

// quantity reads list[name] as a whole number (or millis), 0 if absent. A
// negative or absurdly large value is reported and clamped.
func (b *nodeBuilder) quantity(list corev1.ResourceList, name corev1.ResourceName, milli bool, at field) int64 {
	q, ok := list[name]
	if !ok {
		return 0
	}
	if q.Sign() < 0 {
		b.add(ReasonBadQuantity, "", "%s[%s]=%s is negative; using 0", at, name, q.String())
		return 0
	}
	f := q.AsApproximateFloat64()
	if milli {
		f *= 1000
	}
	if f > maxResourceValue {
		b.add(ReasonBadQuantity, "", "%s[%s]=%s is out of range; using %d", at, name, q.String(), int64(maxResourceValue))
		return maxResourceValue
	}
	if milli {
		return q.MilliValue()
	}
	return q.Value()
}

// listOf dereferences an optional resource list.
func listOf(l *corev1.ResourceList) corev1.ResourceList {
	if l == nil {
		return nil
	}
	return *l
}

// collectConsumers records every allocation consumer in the zone tree, also
// in zones that are otherwise skipped: the agent saw those pods.
func (b *nodeBuilder) collectConsumers(zones []*v1alpha1.TopologyZone) {
	for _, z := range zones {
		if z == nil {
			continue
		}
		for _, a := range z.Allocations {
			if a != nil && a.Consumer != "" {
				if b.consumers == nil {
					b.consumers = map[string]bool{}
				}
				b.consumers[a.Consumer] = true
			}
		}
		b.collectConsumers(z.Children)
	}
}

// readTop reads the top level of status.topologyZone: Sockets, and Numa
// zones listed without a Socket.
func (b *nodeBuilder) readTop(zones []*v1alpha1.TopologyZone) {
	for i, z := range zones {
		path := zpath{}.child(i)
		switch {
		case z == nil:
			b.add(ReasonMalformedZone, "", "%s is null", path)
		case z.Type == v1alpha1.TopologyTypeSocket:
			for j, c := range z.Children {
				cpath := path.child(j)
				switch {
				case c == nil:
					b.add(ReasonMalformedZone, "", "%s is null", cpath)
				case c.Type == v1alpha1.TopologyTypeNuma:
					b.readNUMA(c, cpath)
				default:
					b.misplaced(c, cpath, "a Socket")
				}
			}
		case z.Type == v1alpha1.TopologyTypeNuma:
			b.readNUMA(z, path)
		default:
			b.misplaced(z, path, "the top level")
		}
	}
}

// misplaced reports a zone whose type is unknown or not allowed where it is.
func (b *nodeBuilder) misplaced(z *v1alpha1.TopologyZone, path zpath, where string) {
	switch z.Type {
	case v1alpha1.TopologyTypeSocket, v1alpha1.TopologyTypeNuma, v1alpha1.TopologyTypeNIC, v1alpha1.TopologyTypeGPU:
		b.add(ReasonMalformedZone, "", "%s (%s %q) is not allowed under %s; skipped", path, z.Type, z.Name, where)
	default:
		b.add(ReasonMalformedZone, "", "%s (name %q) has unknown type %q; skipped", path, z.Name, z.Type)
	}
}

// parseNUMAID accepts a plain decimal NUMA id.
func parseNUMAID(name string) (int, bool) {
	if name == "" || len(name) > 6 {
		return 0, false
	}
	for i := 0; i < len(name); i++ {
		if name[i] < '0' || name[i] > '9' {
			return 0, false
		}
	}
	id, err := strconv.Atoi(name)
	if err != nil || id > maxNUMAID {
		return 0, false
	}
	return id, true
}

// readNUMA reads one Numa zone: free GPUs and CPUs, and its NIC children.
func (b *nodeBuilder) readNUMA(z *v1alpha1.TopologyZone, path zpath) {
	id, ok := parseNUMAID(z.Name)
	if !ok {
		b.add(ReasonMalformedZone, "", "%s.name=%q is not a decimal NUMA id; zone skipped", path, z.Name)
		return
	}
	if prev, dup := b.numaSeen.get(id); dup {
		b.add(ReasonDuplicateNUMA, "", "%s.name=%q repeats NUMA %d of %s; zone skipped", path, z.Name, id, prev)
		return
	}
	b.numaSeen.put(id, path)

	alloc := listOf(z.Resources.Allocatable)
	afield := field{zone: path, alloc: -1}
	gpu := b.quantity(alloc, corev1.ResourceName(b.cfg.GPUResource), false, afield)
	cpu := b.quantity(alloc, corev1.ResourceCPU, true, afield)
	for i, a := range z.Allocations {
		if a == nil {
			continue
		}
		req := listOf(a.Requests)
		rfield := field{zone: path, alloc: i}
		gpu -= b.quantity(req, corev1.ResourceName(b.cfg.GPUResource), false, rfield)
		cpu -= b.quantity(req, corev1.ResourceCPU, true, rfield)
	}
	zone := Zone{ID: id, FreeGPU: max(gpu, 0), FreeCPUMilli: max(cpu, 0)}
	if len(z.Children) > 0 {
		zone.NICs = make([]NIC, 0, len(z.Children))
	}

	for j, c := range z.Children {
		cpath := path.child(j)
		switch {
		case c == nil:
			b.add(ReasonMalformedZone, "", "%s is null", cpath)
		case c.Type == v1alpha1.TopologyTypeNIC:
			if nic, ok := b.readNIC(c, cpath, id); ok {
				zone.NICs = append(zone.NICs, nic)
			}
		case c.Type == v1alpha1.TopologyTypeGPU:
			// GPU zones carry nothing placement needs; free GPUs are counted
			// on the Numa zone.
		default:
			b.misplaced(c, cpath, "a Numa zone")
		}
	}
	b.zones = append(b.zones, zone)
}

// readNIC reads one NIC zone: its name (see NormalizeNICName and
// CheckNICName) and its units (see NIC). The leaf is assigned later.
func (b *nodeBuilder) readNIC(z *v1alpha1.TopologyZone, path zpath, numa int) (NIC, bool) {
	if z.Name == "" {
		b.add(ReasonMalformedZone, "", "%s is a NIC with an empty name; skipped", path)
		return NIC{}, false
	}
	id := NormalizeNICName(z.Name)
	if err := CheckNICName(z.Name); err != nil {
		b.add(ReasonBadNICName, id, "%s.name=%q: %v; NIC skipped", path, z.Name, err)
		b.badNames = append(b.badNames, id)
		return NIC{}, false
	}
	if prev, dup := b.nicSeen.get(id); dup {
		b.add(ReasonDuplicateNIC, id, "%s lists the NIC again (first at %s); counted once", path, prev)
		return NIC{}, false
	}
	b.nicSeen.put(id, path)

	rdma := corev1.ResourceName(b.cfg.RDMAResource)
	afield := field{zone: path, alloc: -1}
	units := int64(1)
	if alloc := listOf(z.Resources.Allocatable); alloc != nil {
		if _, ok := alloc[rdma]; ok {
			units = b.quantity(alloc, rdma, false, afield)
		}
	}
	free, whole := units, false
	var consumers []string
	for i, a := range z.Allocations {
		if a == nil {
			continue
		}
		req := listOf(a.Requests)
		if _, ok := req[rdma]; ok {
			free -= b.quantity(req, rdma, false, field{zone: path, alloc: i})
		} else if a.Consumer != "" {
			// The agent gave the NIC to this consumer without counting
			// units: it holds the whole NIC.
			whole = true
		}
		if a.Consumer != "" {
			consumers = append(consumers, a.Consumer)
		}
	}
	if whole || free < 0 {
		free = 0
	}
	if len(consumers) > 1 {
		slices.Sort(consumers)
		consumers = compactStrings(consumers)
	}
	return NIC{ID: id, NUMA: numa, Free: free > 0, Consumers: consumers, Units: units, FreeUnits: free}, true
}

// compactStrings drops adjacent duplicates of a sorted slice.
func compactStrings(s []string) []string {
	out := s[:1]
	for _, v := range s[1:] {
		if v != out[len(out)-1] {
			out = append(out, v)
		}
	}
	return out
}

// assignLeaves sets every NIC's S0 from the RDMATOR/<pci> properties.
func (b *nodeBuilder) assignLeaves(out *Node, node *corev1.Node, cnr *v1alpha1.CustomNodeResource) {
	if node != nil && node.Labels[RDMAModeLabel] != RDMAModeShared {
		if len(b.nicSeen.keys) == 0 {
			return // nothing to place: a CPU/GPU-only node needs no label
		}
		b.add(ReasonNotShared, "", "node label %s=%q is not %q; every NIC is topology-unknown",
			RDMAModeLabel, node.Labels[RDMAModeLabel], RDMAModeShared)
		for zi := range out.Zones {
			for ni := range out.Zones[zi].NICs {
				n := &out.Zones[zi].NICs[ni]
				n.S0 = UnknownS0(out.Name, n.ID)
			}
		}
		return
	}
	failed := b.readLeaves(cnr)
	leaves := &b.leaves
	for zi := range out.Zones {
		for ni := range out.Zones[zi].NICs {
			n := &out.Zones[zi].NICs[ni]
			if s0, ok := leaves.get(n.ID); ok {
				n.S0 = s0
				continue
			}
			n.S0 = UnknownS0(out.Name, n.ID)
			if slices.Contains(failed, n.ID) {
				continue // reported once, with the property at fault
			}
			b.add(ReasonNICWithoutLeaf, n.ID, "no usable spec.nodeResourceProperties entry %s%s", RDMATorPrefix, n.ID)
		}
	}
	var reported []NICID
	for _, list := range [][]NICID{leaves.keys, failed} {
		for _, nic := range list {
			if _, ok := b.nicSeen.get(nic); ok || slices.Contains(reported, nic) {
				continue
			}
			reported = append(reported, nic)
			b.add(ReasonLeafWithoutNIC, nic, "property %s%s names a NIC that is in no Numa zone", RDMATorPrefix, nic)
		}
	}
}

// readLeaves reads the KCNR's RDMATOR/<pci> properties into b.leaves and
// returns the NICs whose property is unusable (each already reported,
// naming the property).
func (b *nodeBuilder) readLeaves(cnr *v1alpha1.CustomNodeResource) []NICID {
	leaves := &b.leaves
	var failed []NICID
	for i, p := range cnr.Spec.NodeResourceProperties {
		field := propPath(i)
		if p == nil {
			b.add(ReasonEmptyProperty, "", "%s is null", field)
			continue
		}
		if !strings.HasPrefix(p.PropertyName, RDMATorPrefix) {
			continue
		}
		nic := NormalizeNICName(strings.TrimPrefix(p.PropertyName, RDMATorPrefix))
		if slices.Contains(b.badNames, nic) {
			continue // the NIC zone is skipped and already reported
		}
		if len(p.PropertyValues) == 0 || p.PropertyValues[0] == "" {
			what := "an empty propertyValues[0]"
			if len(p.PropertyValues) == 0 {
				what = "no propertyValues"
			}
			b.add(ReasonEmptyProperty, nic, "%s (%s) has %s: it must name the leaf switch (S0) the NIC is cabled to; the NIC is a leaf of its own until it does",
				field, p.PropertyName, what)
			failed = append(failed, nic)
			continue
		}
		v := p.PropertyValues[0]
		if len(p.PropertyValues) > 1 {
			b.add(ReasonMultiplePropertyValues, nic, "%s (%s) has %d propertyValues %q; using propertyValues[0] %q",
				field, p.PropertyName, len(p.PropertyValues), p.PropertyValues, v)
		}
		if strings.TrimSpace(v) != v || strings.Contains(v, ",") || strings.HasPrefix(v, UnknownS0Prefix) {
			b.add(ReasonBadProperty, nic, "%s (%s) value %q has spaces, a comma or the reserved prefix %q",
				field, p.PropertyName, v, UnknownS0Prefix)
			failed = append(failed, nic)
			continue
		}
		if prev, dup := leaves.get(nic); dup {
			if prev != S0ID(v) {
				b.add(ReasonDuplicateProperty, nic, "%s (%s) says leaf %q, an earlier entry says %q; using %q",
					field, p.PropertyName, v, prev, prev)
			}
			continue
		}
		leaves.put(nic, S0ID(v))
	}
	return failed
}

// zpath locates a zone in status.topologyZone by child indexes; it is turned
// into text only when a reason is reported.
type zpath struct {
	depth int
	idx   [3]int
}

// child returns the path of the i-th child (the i-th top-level zone for the
// zero path).
func (p zpath) child(i int) zpath {
	if p.depth < len(p.idx) {
		p.idx[p.depth] = i
	}
	p.depth++
	return p
}

func (p zpath) String() string {
	var sb strings.Builder
	sb.WriteString("status.topologyZone")
	for d := 0; d < p.depth && d < len(p.idx); d++ {
		if d > 0 {
			sb.WriteString(".children")
		}
		sb.WriteString("[" + strconv.Itoa(p.idx[d]) + "]")
	}
	return sb.String()
}

// propPath locates spec.nodeResourceProperties[i] for messages.
type propPath int

func (p propPath) String() string {
	return "spec.nodeResourceProperties[" + strconv.Itoa(int(p)) + "]"
}

// field names a resource list: the Node's status.allocatable, or a zone's
// resources.allocatable (alloc < 0) or allocations[alloc].requests.
type field struct {
	node  bool
	zone  zpath
	alloc int
}

func (f field) String() string {
	switch {
	case f.node:
		return "status.allocatable"
	case f.alloc < 0:
		return f.zone.String() + ".resources.allocatable"
	default:
		return f.zone.String() + ".allocations[" + strconv.Itoa(f.alloc) + "].requests"
	}
}
