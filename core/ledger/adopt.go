package ledger

import (
	"slices"
	"sort"

	"github.com/rdmatopo/rdmatopo/core/topology"
)

// Mismatch is a reservation whose pod the node's KCNR lists on other NICs
// than the scheduler reserved: the node agent chose differently.
type Mismatch struct {
	// Planned is the reservation as the scheduler made it.
	Planned Reservation
	// Realized is the reservation after adoption: the KCNR's NICs, grouped
	// by the NUMA zone the fabric shows each in.
	Realized Reservation
	// Contested lists NICs the KCNR gives this pod that another pod's
	// unconfirmed reservation held; they were taken from that reservation.
	Contested []topology.NICID
}

// Adopt makes the KCNR the truth for every pod it lists. For each
// reservation whose consumer its node's KCNR (in f) lists, the reservation is
// confirmed (as Confirm does) and, when the KCNR lists the consumer on NICs
// other than the reserved ones, replaced by what the KCNR lists: the KCNR's
// NICs, grouped by NUMA zone, with the pod's GPUs and CPUs split evenly over
// those zones (SplitEvenly, the rule Rebuild uses). What the KCNR does not
// list is freed. A KCNR that lists the consumer on no NIC at all (zone-level
// allocations only) says nothing about NICs: the reservation stays.
//
// Pods whose agent swapped NICs or zones between them each end with what
// the KCNR lists. A NIC the KCNR gives the pod that another pod's
// unconfirmed reservation holds (the scheduler planned it for a pod the
// agent has not reported yet) moves to the adopting pod: the KCNR shows it
// taken, so the other pod will not get it; that pod keeps the rest of its
// reservation until its own KCNR entry arrives. A NIC serves as many pods as
// it has units (UseFabric): pods the KCNR lists on one NIC of several units
// all hold it, and an unconfirmed reservation loses a NIC only when the
// NIC has no unit left for the adopting pod. When the KCNR lists more pods
// on a NIC than it has units (an over-allocation), the confirmed pods
// listed there first by UID keep it and the others do not hold it (their
// zones keep their GPUs and CPUs). A consumer listed with several units of
// one NIC holds the NIC once; the KCNR's free units count what it lists.
//
// A pod that lost a NIC that way is still bound and still needs it: its
// node must give it one. In place of each NIC it lost it takes a NIC that
// no reservation holds and that the KCNR shows free, or lists only for
// consumers gone reports as gone (a deleted pod's allocation the KCNR has
// not dropped yet: the node has freed it, and no live pod holds it). It
// takes the first such NIC by name of the zone it was planned in (the hint
// the node got), else of the lowest other zone that has one (the node can
// put the pod nowhere else; its GPUs and CPUs then follow its NICs). So the
// planner does not count that NIC as free while the pod waits for its KCNR
// entry, which, once it lists the pod, corrects the guess. On a node with
// no such NIC (over-committed) the pod keeps its zones without it, and the
// KCNR will say what the node did.
//
// A node whose fabric node and reservations are those Adopt left there
// last time is not walked again: it would change nothing there. Adopt
// makes f the fabric whose NIC units the ledger counts (UseFabric).
//
// It returns the mismatches, sorted by UID, and the unconfirmed
// reservations that lost NICs (Planned as they were, Realized after the
// substitution, Contested empty), sorted by UID: their pods' annotations no
// longer match them. A nil fabric adopts nothing; a nil gone takes every
// consumer a KCNR lists as live.
func (l *Ledger) Adopt(f *topology.Fabric, gone func(consumer string) bool) ([]Mismatch, []Mismatch) {
	if f == nil {
		return nil, nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.fabric = f
	all, walked := l.toAdopt(f)
	defer l.markAdopted(f, walked)
	// Confirm first, so a NIC two listed pods share is seen as held by a
	// confirmed holder whatever the UID order.
	for _, e := range all {
		if e.node.Consumers[e.consumer] && !e.r.Confirmed {
			l.touch(e.r.Node)
			e.r.Confirmed = true
		}
	}
	// What each confirmed pod's KCNR entry lists.
	listedBy := map[string][]listedNIC{}
	for _, e := range all {
		if e.r.Confirmed {
			if listed := listedNICs(e.node, e.consumer); len(listed) > 0 {
				listedBy[e.r.UID] = listed
			}
		}
	}
	diff := l.differing(all, listedBy)
	// Their planned NICs are freed first, so pods whose agent swapped NICs
	// or zones between them each get what the KCNR lists.
	planned := make([]Reservation, len(diff))
	for i, d := range diff {
		l.touch(d.r.Node)
		planned[i] = d.r.clone()
		for _, z := range d.r.Zones {
			for _, n := range z.NICs {
				l.dropHolder(nicKey{d.r.Node, n}, d.r.UID)
			}
		}
	}
	out := make([]Mismatch, 0, len(diff))
	// lost maps each displaced unconfirmed reservation to the NUMA zones of
	// the NICs taken from it, one entry per NIC.
	lost := map[string][]int{}
	before := map[string]Reservation{}
	for i, d := range diff {
		out = append(out, l.realize(d, planned[i], listedBy, lost, before))
	}
	displaced := l.substitute(f, lost, before, gone)
	if len(out) == 0 {
		return nil, displaced
	}
	return out, displaced
}

// adoptEntry is a reservation Adopt walks, with its consumer id and its
// node in the fabric, looked up once: Adopt runs in every session.
type adoptEntry struct {
	r        *Reservation
	consumer string
	node     *topology.Node
}

// toAdopt returns the reservations on the nodes of f whose KCNR or
// reservations changed since the last Adopt, by UID, and those nodes: on
// the others Adopt would find what it left (adoptMark).
func (l *Ledger) toAdopt(f *topology.Fabric) ([]adoptEntry, []string) {
	var all []adoptEntry
	var walked []string
	for name, uids := range l.byNode {
		node, _ := f.Node(name)
		if node == nil || l.adopted[name] == (adoptMark{node: node, changes: l.changes[name]}) {
			continue
		}
		walked = append(walked, name)
		for uid := range uids {
			r := l.byUID[uid]
			all = append(all, adoptEntry{r: r, consumer: r.Consumer(), node: node})
		}
	}
	sort.Slice(all, func(i, j int) bool { return all[i].r.UID < all[j].r.UID })
	return all, walked
}

// adoptDiff is a confirmed reservation whose KCNR entry lists other NICs:
// what it lists, and of that what the pod can hold (expected).
type adoptDiff struct {
	r        *Reservation
	listed   []listedNIC
	expected []listedNIC
}

// listedHolders counts the confirmed pods other than uid that hold nic on
// node and that their KCNR lists there.
func (l *Ledger) listedHolders(node string, nic topology.NICID, uid string, listedBy map[string][]listedNIC) int {
	n := 0
	for _, h := range l.holder[nicKey{node, nic}] {
		if h != uid && l.byUID[h].Confirmed && listsNIC(listedBy[h], nic) {
			n++
		}
	}
	return n
}

// differing returns the listed reservations that differ from what their
// KCNR lists. A listed NIC that as many other confirmed pods, listed on it
// too, hold as it has units stays with them.
func (l *Ledger) differing(all []adoptEntry, listedBy map[string][]listedNIC) []adoptDiff {
	var diff []adoptDiff
	for _, e := range all {
		listed, ok := listedBy[e.r.UID]
		if !ok {
			continue
		}
		r := e.r
		var expected []listedNIC
		for _, n := range listed {
			if l.listedHolders(r.Node, n.id, r.UID, listedBy) >= l.units(r.Node, n.id) {
				continue
			}
			expected = append(expected, n)
		}
		if !sameNICs(expected, r) {
			diff = append(diff, adoptDiff{r: r, listed: listed, expected: expected})
		}
	}
	return diff
}

// realize replaces d's reservation (planned, as it was) by what its KCNR
// lists, taking each NIC it keeps from unconfirmed reservations while the
// NIC has no unit left for it (recorded in lost and before), and returns
// the mismatch.
func (l *Ledger) realize(d adoptDiff, planned Reservation, listedBy map[string][]listedNIC, lost map[string][]int, before map[string]Reservation) Mismatch {
	r := d.r
	m := Mismatch{Planned: planned}
	var kept []listedNIC
	for _, n := range d.expected {
		// Pods adopted before this one (by UID) that the KCNR lists
		// there may have taken every unit: an over-allocation, which
		// the earlier pods keep.
		if l.listedHolders(r.Node, n.id, r.UID, listedBy) >= l.units(r.Node, n.id) {
			continue
		}
		kept = append(kept, n)
		// While the NIC has no unit left for the pod, the last (by
		// UID) of the pods planned there that the agent has not
		// reported yet loses it: the KCNR shows the unit taken, so
		// that pod will not get it.
		for l.full(r.Node, n.id, r.UID) {
			holder := ""
			for _, h := range l.holder[nicKey{r.Node, n.id}] {
				if !l.byUID[h].Confirmed {
					holder = h
				}
			}
			if holder == "" {
				break
			}
			if _, seen := before[holder]; !seen {
				before[holder] = l.byUID[holder].clone()
			}
			if numa, ok := l.dropNIC(l.byUID[holder], n.id); ok {
				lost[holder] = append(lost[holder], numa)
			}
			if !slices.Contains(m.Contested, n.id) {
				m.Contested = append(m.Contested, n.id)
			}
		}
	}
	realized := *r
	realized.Zones = zonesOf(d.listed, kept, r)
	// The KCNR lists the pod's zones, not its containers': the
	// planned split no longer says where each container is.
	realized.Containers = nil
	l.replace(r, realized)
	m.Realized = l.byUID[r.UID].clone()
	return m
}

// adoptMark is what Adopt last saw of a node: its fabric node (the fabric
// cache replaces a node it rebuilds, never modifies it) and the count of
// writes to its reservations once it was done. Adopt reads nothing else of
// a node (what its KCNR lists, the reservations there and their NICs), and
// with those unchanged it would change nothing there.
type adoptMark struct {
	node    *topology.Node
	changes uint64
}

// markAdopted records the nodes Adopt walked as it left them. l.mu must be
// held for writing.
func (l *Ledger) markAdopted(f *topology.Fabric, walked []string) {
	if l.adopted == nil {
		l.adopted = map[string]adoptMark{}
	}
	for _, name := range walked {
		if node, ok := f.Node(name); ok {
			l.adopted[name] = adoptMark{node: node, changes: l.changes[name]}
		}
	}
}

// substitute gives each displaced reservation, for every NIC it lost, a
// free NIC of its node (see Adopt) and returns the displaced reservations
// (before: as they were), sorted by UID. l.mu must be held for writing.
func (l *Ledger) substitute(f *topology.Fabric, lost map[string][]int, before map[string]Reservation, gone func(string) bool) []Mismatch {
	if len(lost) == 0 {
		return nil
	}
	uids := make([]string, 0, len(lost))
	for uid := range lost {
		uids = append(uids, uid)
	}
	sort.Strings(uids)
	out := make([]Mismatch, 0, len(uids))
	for _, uid := range uids {
		r := l.byUID[uid]
		if node, ok := f.Node(r.Node); ok {
			var got []listedNIC
			for _, numa := range lost[uid] {
				if nic, found := l.freeNIC(node, uid, numa, gone); found {
					l.touch(r.Node)
					l.addHolder(nicKey{r.Node, nic.id}, uid)
					got = append(got, nic)
				}
			}
			if len(got) > 0 {
				l.replace(r, withNICs(*r, got))
			}
		}
		out = append(out, Mismatch{Planned: before[uid], Realized: l.byUID[uid].clone()})
	}
	return out
}

// withNICs returns r with the NICs added, each in its zone. When that
// changes which zones hold NICs (a NIC from a zone the pod did not use, a
// zone left without any), the pod's GPUs and CPUs follow its NICs: the
// zones become those holding NICs, with the GPUs and CPUs split evenly
// over them (SplitEvenly, as Rebuild derives them from the annotations).
// The container split, if any, is dropped.
func withNICs(r Reservation, add []listedNIC) Reservation {
	r = r.clone()
	// The substitutes belong to no planned container.
	r.Containers = nil
	var gpu, cpu int64
	before := map[int]bool{}
	for _, z := range r.Zones {
		gpu += z.GPU
		cpu += z.CPUMilli
		if len(z.NICs) > 0 {
			before[z.NUMA] = true
		}
	}
	byNUMA := map[int][]topology.NICID{}
	for _, z := range r.Zones {
		byNUMA[z.NUMA] = append(byNUMA[z.NUMA], z.NICs...)
	}
	for _, n := range add {
		byNUMA[n.numa] = append(byNUMA[n.numa], n.id)
	}
	same := true
	for numa, nics := range byNUMA {
		if (len(nics) > 0) != before[numa] {
			same = false
		}
	}
	var zones []ZoneUse
	for _, z := range r.Zones {
		if same || len(byNUMA[z.NUMA]) > 0 {
			zones = append(zones, ZoneUse{NUMA: z.NUMA, GPU: z.GPU, CPUMilli: z.CPUMilli})
		}
	}
	for numa := range byNUMA {
		found := false
		for _, z := range zones {
			found = found || z.NUMA == numa
		}
		if !found && len(byNUMA[numa]) > 0 {
			zones = append(zones, ZoneUse{NUMA: numa})
		}
	}
	sort.Slice(zones, func(i, j int) bool { return zones[i].NUMA < zones[j].NUMA })
	for i := range zones {
		nics := append([]topology.NICID(nil), byNUMA[zones[i].NUMA]...)
		sort.Slice(nics, func(a, b int) bool { return nics[a] < nics[b] })
		zones[i].NICs = nics
	}
	if !same {
		gpus, cpus := SplitEvenly(gpu, len(zones)), SplitEvenly(cpu, len(zones))
		for i := range zones {
			zones[i].GPU, zones[i].CPUMilli = gpus[i], cpus[i]
		}
	}
	r.Zones = zones
	return r
}

// freeNIC returns a NIC of the node that pod uid does not hold and that
// has a unit left: fewer reservations hold it than it has units, and the
// KCNR shows a free unit beyond those of the holders it does not list yet,
// or lists only gone consumers there. It is the first (by name) of zone
// numa, else the first of the lowest other zone that has one. l.mu must
// be held.
func (l *Ledger) freeNIC(node *topology.Node, uid string, numa int, gone func(string) bool) (listedNIC, bool) {
	available := func(nic topology.NIC) bool {
		hs := l.holder[nicKey{node.Name, nic.ID}]
		if slices.Contains(hs, uid) || len(hs) >= l.units(node.Name, nic.ID) {
			return false
		}
		unlisted := int64(0)
		for _, h := range hs {
			if !slices.Contains(nic.Consumers, l.byUID[h].Consumer()) {
				unlisted++
			}
		}
		if nic.FreeUnits > unlisted {
			return true
		}
		if gone == nil || len(nic.Consumers) == 0 {
			return false
		}
		for _, c := range nic.Consumers {
			if !gone(c) {
				return false
			}
		}
		return true
	}
	first := func(z topology.Zone) (listedNIC, bool) {
		for _, nic := range z.NICs {
			if available(nic) {
				return listedNIC{id: nic.ID, numa: z.ID}, true
			}
		}
		return listedNIC{}, false
	}
	for _, z := range node.Zones {
		if z.ID == numa {
			if n, ok := first(z); ok {
				return n, true
			}
		}
	}
	for _, z := range node.Zones {
		if z.ID != numa {
			if n, ok := first(z); ok {
				return n, true
			}
		}
	}
	return listedNIC{}, false
}

// listsNIC reports whether a KCNR entry lists the NIC.
func listsNIC(listed []listedNIC, id topology.NICID) bool {
	for _, n := range listed {
		if n.id == id {
			return true
		}
	}
	return false
}

// listedNIC is a NIC the KCNR lists a consumer on, with its zone.
type listedNIC struct {
	id   topology.NICID
	numa int
}

// listedNICs returns the node's NICs whose KCNR allocations name consumer,
// sorted by NUMA id, then NIC.
func listedNICs(n *topology.Node, consumer string) []listedNIC {
	var out []listedNIC
	for _, z := range n.Zones {
		for _, nic := range z.NICs {
			for _, c := range nic.Consumers {
				if c == consumer {
					out = append(out, listedNIC{id: nic.ID, numa: z.ID})
					break
				}
			}
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].numa != out[j].numa {
			return out[i].numa < out[j].numa
		}
		return out[i].id < out[j].id
	})
	return out
}

// sameNICs reports whether the listed NICs are exactly the reservation's, in
// the same zones.
func sameNICs(listed []listedNIC, r *Reservation) bool {
	n := 0
	for _, z := range r.Zones {
		for _, id := range z.NICs {
			found := false
			for _, x := range listed {
				if x.id == id && x.numa == z.NUMA {
					found = true
					break
				}
			}
			if !found {
				return false
			}
			n++
		}
	}
	return n == len(listed)
}

// zonesOf builds the realized zones: one per NUMA zone the KCNR lists the
// pod in (sorted), holding the kept NICs of that zone (sorted), with the
// reservation's GPUs and CPUs split evenly over them.
func zonesOf(listed, kept []listedNIC, r *Reservation) []ZoneUse {
	var gpu, cpu int64
	for _, z := range r.Zones {
		gpu += z.GPU
		cpu += z.CPUMilli
	}
	var zones []ZoneUse
	for _, n := range listed {
		if len(zones) == 0 || zones[len(zones)-1].NUMA != n.numa {
			zones = append(zones, ZoneUse{NUMA: n.numa})
		}
		if listsNIC(kept, n.id) {
			z := &zones[len(zones)-1]
			z.NICs = append(z.NICs, n.id)
		}
	}
	gpus, cpus := SplitEvenly(gpu, len(zones)), SplitEvenly(cpu, len(zones))
	for i := range zones {
		zones[i].GPU, zones[i].CPUMilli = gpus[i], cpus[i]
	}
	return zones
}

// replace swaps r's stored reservation for next (same UID and node),
// keeping the NIC index exact. l.mu must be held for writing.
func (l *Ledger) replace(r *Reservation, next Reservation) {
	l.touch(r.Node)
	for _, z := range r.Zones {
		for _, n := range z.NICs {
			l.dropHolder(nicKey{r.Node, n}, r.UID)
		}
	}
	next = next.clone()
	l.byUID[r.UID] = &next
	for _, z := range next.Zones {
		for _, n := range z.NICs {
			l.addHolder(nicKey{next.Node, n}, next.UID)
		}
	}
}

// dropNIC removes one NIC from a reservation (a zone left without NICs
// keeps its GPUs and CPUs) and returns the NUMA zone it was in. l.mu must
// be held for writing.
func (l *Ledger) dropNIC(r *Reservation, nic topology.NICID) (int, bool) {
	for i := range r.Zones {
		z := &r.Zones[i]
		for j, n := range z.NICs {
			if n == nic {
				l.touch(r.Node)
				z.NICs = append(z.NICs[:j:j], z.NICs[j+1:]...)
				r.dropContainerNIC(nic)
				l.dropHolder(nicKey{r.Node, nic}, r.UID)
				return z.NUMA, true
			}
		}
	}
	return 0, false
}

// ReserveUncontested reserves r without the NICs that as many other pods
// as they have units already hold on its node, for a reservation restored from a bound pod's annotations (after
// a restart): the pod keeps every NIC that is not contested, so none of them
// can be handed out again. It returns the contested NICs; the error is
// Reserve's for anything but a held NIC.
func (l *Ledger) ReserveUncontested(r Reservation) ([]topology.NICID, error) {
	l.mu.RLock()
	var contested []topology.NICID
	r = r.clone()
	for i := range r.Zones {
		z := &r.Zones[i]
		kept := z.NICs[:0]
		for _, n := range z.NICs {
			if l.full(r.Node, n, r.UID) {
				contested = append(contested, n)
				r.dropContainerNIC(n)
				continue
			}
			kept = append(kept, n)
		}
		z.NICs = kept
	}
	l.mu.RUnlock()
	return contested, l.Reserve(r)
}
