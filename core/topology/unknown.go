package topology

// UnknownLeafReasons lists every code UnknownLeafReason returns, so that a
// count by reason can report each of them, 0 included.
var UnknownLeafReasons = []ReasonCode{
	ReasonNoKCNR, ReasonNotShared, ReasonNoTopology,
	ReasonEmptyProperty, ReasonBadProperty, ReasonNICWithoutLeaf,
}

// UnknownLeafReason returns why the node's NIC nic has an unknown leaf: the
// node-wide cause when there is one (ReasonNoKCNR, ReasonNotShared,
// ReasonNoTopology), else the NIC's unusable RDMATOR property
// (ReasonEmptyProperty, ReasonBadProperty), else ReasonNICWithoutLeaf. It
// returns "" when the NIC is not on the node or its leaf is known.
func (n *Node) UnknownLeafReason(nic NICID) ReasonCode {
	var s0 S0ID
	found := false
	for _, z := range n.Zones {
		for _, c := range z.NICs {
			if c.ID == nic {
				s0, found = c.S0, true
			}
		}
	}
	if !found || !s0.IsUnknown() {
		return ""
	}
	var prop ReasonCode
	for _, r := range n.Reasons {
		switch {
		case r.Code == ReasonNoKCNR || r.Code == ReasonNotShared || r.Code == ReasonNoTopology:
			return r.Code
		case r.NIC == nic && (r.Code == ReasonEmptyProperty || r.Code == ReasonBadProperty) && prop == "":
			prop = r.Code
		}
	}
	if prop != "" {
		return prop
	}
	return ReasonNICWithoutLeaf
}

// UnknownNICs counts the fabric's NICs whose leaf is unknown, by the code
// UnknownLeafReason gives each. Nodes without such NICs add nothing.
func (f *Fabric) UnknownNICs() map[ReasonCode]int {
	out := map[ReasonCode]int{}
	for _, n := range f.nodes {
		if n.Known {
			continue
		}
		for _, z := range n.Zones {
			for _, c := range z.NICs {
				if c.S0.IsUnknown() {
					out[n.UnknownLeafReason(c.ID)]++
				}
			}
		}
	}
	return out
}
