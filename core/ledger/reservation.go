package ledger

import (
	"fmt"
	"sort"

	"github.com/rdmatopo/rdmatopo/core/topology"
)

// ZoneUse is what a pod takes from one NUMA zone of its node.
type ZoneUse struct {
	// NUMA is the zone id.
	NUMA int
	// GPU and CPUMilli are the GPUs and CPU millicores taken from the zone.
	GPU      int64
	CPUMilli int64
	// NICs are the zone's NICs reserved for the pod, sorted.
	NICs []topology.NICID
}

// Reservation is one pod's hold on a node's NICs and zone resources.
type Reservation struct {
	// UID, Namespace and Name identify the pod.
	UID, Namespace, Name string
	// Job is the pod's gang as "namespace/podgroup"; may be empty.
	Job string
	// Node is the node the pod is placed on.
	Node string
	// Zones lists one entry per NUMA zone used, sorted by NUMA.
	Zones []ZoneUse
	// Containers says which zone and NICs each of the pod's containers
	// takes, when a container-level NUMA policy puts the containers in
	// different zones (AnnotationContainers); nil when the pod takes its
	// zones as a whole. Its NICs and zones are those of Zones, split by
	// container.
	Containers []ContainerUse
	// Confirmed is true once the node's KCNR lists Consumer().
	Confirmed bool
}

// ContainerUse is the zone and NICs one group of a pod's containers takes
// under a container-level NUMA policy. A group holds one container, or
// several that are planned together in one zone.
type ContainerUse struct {
	// Names are the containers' names, in the pod's order.
	Names []string `json:"containers"`
	// NUMA is the zone id.
	NUMA int `json:"numa"`
	// NICs are the group's NICs, sorted (none for a group without RDMA).
	NICs []topology.NICID `json:"nics,omitempty"`
}

// ConsumerID is a pod's KCNR consumer id as katalyst's agent writes it,
// "namespace/name/uid".
func ConsumerID(namespace, name, uid string) string {
	return namespace + "/" + name + "/" + uid
}

// Consumer is the pod's KCNR consumer id (ConsumerID).
func (r Reservation) Consumer() string { return ConsumerID(r.Namespace, r.Name, r.UID) }

// NICs returns every NIC of the reservation, sorted.
func (r Reservation) NICs() []topology.NICID {
	var out []topology.NICID
	for _, z := range r.Zones {
		out = append(out, z.NICs...)
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

// NUMAs returns the NUMA ids of the reservation's zones, sorted.
func (r Reservation) NUMAs() []int {
	out := make([]int, len(r.Zones))
	for i, z := range r.Zones {
		out[i] = z.NUMA
	}
	return out
}

// String names the pod for messages: "namespace/name (uid)".
func (r Reservation) String() string {
	return fmt.Sprintf("%s/%s (%s)", r.Namespace, r.Name, r.UID)
}

// clone deep-copies the reservation so callers never share slices with the
// ledger.
func (r Reservation) clone() Reservation {
	if r.Zones != nil {
		zones := make([]ZoneUse, len(r.Zones))
		for i, z := range r.Zones {
			z.NICs = append([]topology.NICID(nil), z.NICs...)
			zones[i] = z
		}
		r.Zones = zones
	}
	if r.Containers != nil {
		cs := make([]ContainerUse, len(r.Containers))
		for i, c := range r.Containers {
			c.Names = append([]string(nil), c.Names...)
			c.NICs = append([]topology.NICID(nil), c.NICs...)
			cs[i] = c
		}
		r.Containers = cs
	}
	return r
}

// validate checks the reservation's own shape.
func (r Reservation) validate() error {
	if r.UID == "" {
		return fmt.Errorf("%w: pod %s/%s has no UID", ErrInvalidReservation, r.Namespace, r.Name)
	}
	if r.Node == "" {
		return fmt.Errorf("%w: pod %s has no node", ErrInvalidReservation, r)
	}
	seen := map[topology.NICID]bool{}
	for i, z := range r.Zones {
		if i > 0 && z.NUMA <= r.Zones[i-1].NUMA {
			return fmt.Errorf("%w: pod %s: zones not strictly sorted by NUMA (%d after %d)",
				ErrInvalidReservation, r, z.NUMA, r.Zones[i-1].NUMA)
		}
		if z.NUMA < 0 || z.GPU < 0 || z.CPUMilli < 0 {
			return fmt.Errorf("%w: pod %s: zone %d has a negative value", ErrInvalidReservation, r, z.NUMA)
		}
		for j, n := range z.NICs {
			if n == "" || topology.NormalizeNICName(string(n)) != n {
				return fmt.Errorf("%w: pod %s: NIC %q is empty or not in the fabric's form (PCI addresses in lower case)", ErrInvalidReservation, r, n)
			}
			if j > 0 && n <= z.NICs[j-1] {
				return fmt.Errorf("%w: pod %s: NICs of NUMA %d not strictly sorted", ErrInvalidReservation, r, z.NUMA)
			}
			if seen[n] {
				return fmt.Errorf("%w: pod %s: NIC %s listed in two zones", ErrInvalidReservation, r, n)
			}
			seen[n] = true
		}
	}
	return r.validateContainers(seen)
}

// validateContainers checks that the container split, if any, names each
// container once, only zones of the reservation, and each NIC of the
// reservation once, in the zone that holds it (zoneNICs: every NIC of
// Zones).
func (r Reservation) validateContainers(zoneNICs map[topology.NICID]bool) error {
	if r.Containers == nil {
		return nil
	}
	zoneOf := map[topology.NICID]int{}
	hasZone := map[int]bool{}
	for _, z := range r.Zones {
		hasZone[z.NUMA] = true
		for _, n := range z.NICs {
			zoneOf[n] = z.NUMA
		}
	}
	names := map[string]bool{}
	nics := map[topology.NICID]bool{}
	for _, c := range r.Containers {
		if len(c.Names) == 0 {
			return fmt.Errorf("%w: pod %s: a container group names no container", ErrInvalidReservation, r)
		}
		for _, name := range c.Names {
			if name == "" || names[name] {
				return fmt.Errorf("%w: pod %s: container %q is empty or listed twice", ErrInvalidReservation, r, name)
			}
			names[name] = true
		}
		if !hasZone[c.NUMA] {
			return fmt.Errorf("%w: pod %s: containers %v are in NUMA %d, which the pod does not use", ErrInvalidReservation, r, c.Names, c.NUMA)
		}
		for _, n := range c.NICs {
			if z, ok := zoneOf[n]; !ok || z != c.NUMA || nics[n] {
				return fmt.Errorf("%w: pod %s: NIC %s of containers %v is not a NIC of NUMA %d of the pod, or is listed twice", ErrInvalidReservation, r, n, c.Names, c.NUMA)
			}
			nics[n] = true
		}
	}
	if len(nics) != len(zoneNICs) {
		return fmt.Errorf("%w: pod %s: the containers hold %d of its %d NICs", ErrInvalidReservation, r, len(nics), len(zoneNICs))
	}
	return nil
}

// dropContainerNIC removes a NIC from the container split, if any.
func (r *Reservation) dropContainerNIC(nic topology.NICID) {
	for i := range r.Containers {
		c := &r.Containers[i]
		for j, n := range c.NICs {
			if n == nic {
				c.NICs = append(c.NICs[:j:j], c.NICs[j+1:]...)
				return
			}
		}
	}
}
