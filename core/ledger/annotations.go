package ledger

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/rdmatopo/rdmatopo/core/topology"
)

// Annotation keys. The scheduler writes the pod and PodGroup placement keys;
// users set the job contract keys (mode, highest-tier) on their job.
const (
	// AnnotationNICs (Pod): comma-separated names of the NICs reserved for
	// the pod, as the node's KCNR names them (PCI addresses or otherwise).
	AnnotationNICs = "rdmatopo.io/nics"
	// AnnotationNUMA (Pod): comma-separated NUMA ids of those NICs.
	AnnotationNUMA = "rdmatopo.io/numa"
	// AnnotationS0 (Pod): comma-separated S0 ids of those NICs.
	AnnotationS0 = "rdmatopo.io/s0"
	// AnnotationContainers (Pod): where each container is, for a pod whose
	// containers a container-level NUMA policy put in different zones: a
	// JSON list of {"containers": [names], "numa": id, "nics": [names]}
	// (FormatContainers). Absent, or empty, when the pod takes its zones
	// as a whole; AnnotationNICs, AnnotationNUMA and AnnotationS0 always
	// cover the whole pod.
	AnnotationContainers = "rdmatopo.io/containers"
	// AnnotationPlacement (PodGroup): JSON summary of the gang's placement.
	AnnotationPlacement = "rdmatopo.io/placement"
	// AnnotationMode (PodGroup): "hard" or "soft".
	AnnotationMode = "rdmatopo.io/mode"
	// AnnotationHighestTier (PodGroup): widest tier a hard-mode job accepts.
	AnnotationHighestTier = "rdmatopo.io/highest-tier"
	// GroupNameAnnotation names a pod's PodGroup (the key Volcano uses).
	GroupNameAnnotation = "scheduling.k8s.io/group-name"
)

// GangPlacement is where a gang sits, as AnnotationPlacement says: its
// tier and the S0 leaves and S1s its pods span. The scheduler writes it
// (with the keys of its own beside these), and the CLI and the simulator
// report it in the same JSON shape.
type GangPlacement struct {
	Tier string   `json:"tier"`
	S0   []string `json:"s0"`
	S1   []string `json:"s1"`
}

// ErrBadAnnotation marks a malformed annotation value.
var ErrBadAnnotation = errors.New("malformed annotation value")

// maxNUMAID bounds NUMA ids accepted in annotations.
const maxNUMAID = 1 << 16

// FormatNICs joins NIC ids with commas, in the given order. Any id that
// holds neither the separator nor whitespace survives FormatNICs then
// ParseNICs unchanged (ids are lower case, as the topology package reads
// every NIC name of a KCNR).
func FormatNICs(nics []topology.NICID) string {
	parts := make([]string, len(nics))
	for i, n := range nics {
		parts[i] = string(n)
	}
	return strings.Join(parts, ",")
}

// ParseNICs splits a comma-separated list of NIC ids, as FormatNICs writes
// them. A NIC keeps the name its KCNR gives it: a PCI address
// ("0000:1a:00.0"), a short bus address ("1a:00.0"), a device name
// ("mlx5_0") or the synthetic "rdma-<n>" of a node without NIC topology.
// Names are returned lower case, the form the topology package gives every
// NIC name it reads from a KCNR, so PCI addresses compare in lower case.
// An item must be non-empty, hold no whitespace (the scheduler never writes
// any) and appear once. An empty string is an empty list.
func ParseNICs(s string) ([]topology.NICID, error) {
	if s == "" {
		return nil, nil
	}
	items := strings.Split(s, ",")
	out := make([]topology.NICID, 0, len(items))
	seen := make(map[topology.NICID]bool, len(items))
	for i, item := range items {
		switch {
		case item == "":
			return nil, fmt.Errorf("%w: empty item %d in %q", ErrBadAnnotation, i, s)
		case strings.IndexFunc(item, unicode.IsSpace) >= 0:
			return nil, fmt.Errorf("%w: NIC name %q holds whitespace", ErrBadAnnotation, item)
		case !utf8.ValidString(item):
			return nil, fmt.Errorf("%w: NIC name %q is not valid UTF-8", ErrBadAnnotation, item)
		}
		id := NormalizeNIC(item)
		if seen[id] {
			return nil, fmt.Errorf("%w: NIC %s is listed twice", ErrBadAnnotation, id)
		}
		seen[id] = true
		out = append(out, id)
	}
	return out, nil
}

// NormalizeNIC returns the form a NIC name takes in the fabric and in the
// ledger, the one the topology package gives names it reads from a KCNR
// (topology.NormalizeNICName): PCI addresses in lower case, any other name
// as it is.
func NormalizeNIC(name string) topology.NICID {
	return topology.NormalizeNICName(name)
}

// salvageNICs reads what it can of a NIC list ParseNICs refused: items are
// trimmed of whitespace, empty ones dropped, repeats counted once.
func salvageNICs(s string) []topology.NICID {
	var out []topology.NICID
	seen := map[topology.NICID]bool{}
	for _, item := range strings.Split(s, ",") {
		id := NormalizeNIC(strings.TrimSpace(item))
		if id == "" || seen[id] {
			continue
		}
		seen[id] = true
		out = append(out, id)
	}
	return out
}

// FormatNUMA joins NUMA ids with commas, in the given order.
func FormatNUMA(ids []int) string {
	parts := make([]string, len(ids))
	for i, id := range ids {
		parts[i] = strconv.Itoa(id)
	}
	return strings.Join(parts, ",")
}

// ParseNUMA splits a comma-separated list of decimal NUMA ids (digits only,
// no duplicates). An empty string is an empty list.
func ParseNUMA(s string) ([]int, error) {
	items, err := splitList(s)
	if err != nil || items == nil {
		return nil, err
	}
	out := make([]int, 0, len(items))
	seen := make(map[int]bool, len(items))
	for _, item := range items {
		id, ok := parseDecimal(item)
		if !ok {
			return nil, fmt.Errorf("%w: %q is not a NUMA id (0..%d)", ErrBadAnnotation, item, maxNUMAID)
		}
		if seen[id] {
			return nil, fmt.Errorf("%w: NUMA %d is listed twice", ErrBadAnnotation, id)
		}
		seen[id] = true
		out = append(out, id)
	}
	return out, nil
}

func parseDecimal(s string) (int, bool) {
	if s == "" || len(s) > 6 {
		return 0, false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, false
		}
	}
	v, err := strconv.Atoi(s)
	return v, err == nil && v <= maxNUMAID
}

// FormatS0 joins leaf ids with commas, in the given order.
func FormatS0(ids []topology.S0ID) string {
	parts := make([]string, len(ids))
	for i, id := range ids {
		parts[i] = string(id)
	}
	return strings.Join(parts, ",")
}

// ParseS0 splits a comma-separated list of leaf ids. Items must be non-empty;
// repeats are allowed (one item per NIC). An empty string is an empty list.
func ParseS0(s string) ([]topology.S0ID, error) {
	items, err := splitList(s)
	if err != nil || items == nil {
		return nil, err
	}
	out := make([]topology.S0ID, len(items))
	for i, item := range items {
		out[i] = topology.S0ID(item)
	}
	return out, nil
}

// FormatContainers encodes a container split as AnnotationContainers holds
// it (JSON, in the given order); "" for none.
func FormatContainers(cs []ContainerUse) string {
	if len(cs) == 0 {
		return ""
	}
	// ContainerUse holds only strings and ints, which always encode.
	b, _ := json.Marshal(cs)
	return string(b)
}

// ParseContainers reads AnnotationContainers: a JSON list of container
// groups, each naming at least one container and a NUMA id, with NIC names
// read as ParseNICs reads them (sorted on return). No container may be
// named twice, no NIC listed twice. "" is no split.
func ParseContainers(s string) ([]ContainerUse, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	var raw []struct {
		Containers []string `json:"containers"`
		NUMA       *int     `json:"numa"`
		NICs       []string `json:"nics"`
	}
	dec := json.NewDecoder(strings.NewReader(s))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&raw); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrBadAnnotation, err)
	}
	if dec.More() {
		return nil, fmt.Errorf("%w: text after the JSON list", ErrBadAnnotation)
	}
	out := make([]ContainerUse, 0, len(raw))
	names := map[string]bool{}
	nics := map[topology.NICID]bool{}
	for i, g := range raw {
		if len(g.Containers) == 0 {
			return nil, fmt.Errorf("%w: group %d names no container", ErrBadAnnotation, i)
		}
		if g.NUMA == nil || *g.NUMA < 0 || *g.NUMA > maxNUMAID {
			return nil, fmt.Errorf("%w: group %d has no NUMA id in 0..%d", ErrBadAnnotation, i, maxNUMAID)
		}
		c := ContainerUse{NUMA: *g.NUMA}
		for _, name := range g.Containers {
			if name == "" || names[name] {
				return nil, fmt.Errorf("%w: container %q is empty or named twice", ErrBadAnnotation, name)
			}
			names[name] = true
			c.Names = append(c.Names, name)
		}
		for _, raw := range g.NICs {
			ids, err := ParseNICs(raw)
			if err != nil || len(ids) != 1 {
				return nil, fmt.Errorf("%w: NIC %q of group %d is not one NIC name", ErrBadAnnotation, raw, i)
			}
			if nics[ids[0]] {
				return nil, fmt.Errorf("%w: NIC %s is listed twice", ErrBadAnnotation, ids[0])
			}
			nics[ids[0]] = true
			c.NICs = append(c.NICs, ids[0])
		}
		slices.Sort(c.NICs)
		out = append(out, c)
	}
	return out, nil
}

// splitList splits s at commas and trims spaces around items. It returns nil
// for an empty (or all-space) s and an error for an empty item.
func splitList(s string) ([]string, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	items := strings.Split(s, ",")
	for i, item := range items {
		items[i] = strings.TrimSpace(item)
		if items[i] == "" {
			return nil, fmt.Errorf("%w: empty item %d in %q", ErrBadAnnotation, i, s)
		}
	}
	return items, nil
}
