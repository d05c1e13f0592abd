package rdmatopology

import (
	"github.com/rdmatopo/rdmatopo/core/ledger"
	"github.com/rdmatopo/rdmatopo/core/topology"
	"github.com/rdmatopo/rdmatopo/plugins/rdmatopology/schedmetrics"
)

var (
	// freeNICs is the number of free RDMA NICs per S1 after the last
	// session: free in the KCNRs and not reserved by the scheduler.
	freeNICs = schedmetrics.GaugeVec("free_nics",
		"RDMA NICs free after the last session (free in the CustomNodeResources and not reserved), by S1 (\"\" where S1 membership is unknown).", "s1")
	// leafFragmentation is the share of known leaves that are partly used
	// (a vector without labels: exported from the first session on, see
	// nicsUnconfirmed).
	leafFragmentation = schedmetrics.GaugeVec("leaf_fragmentation",
		"Share of S0 leaves of known topology that are partly used after the last session: some but not all of their NICs free.")
)

// fabricUse is what the fabric's NICs look like after a session.
type fabricUse struct {
	// free counts free NICs per S1.
	free map[topology.S1ID]int
	// leaves and partly count known leaves with NICs, and those of them
	// with some but not all NICs free.
	leaves, partly int
}

// measureFabric counts free NICs per S1 and partly used known leaves: a NIC
// is free when its KCNR shows a free unit and the ledger does not hold it.
// Topology-unknown NICs are leaves of their own, never partly used, and are
// left out of the fragmentation.
func measureFabric(f *topology.Fabric, l *ledger.Ledger) fabricUse {
	u := fabricUse{free: map[topology.S1ID]int{}}
	type count struct{ all, free int }
	perLeaf := map[topology.S0ID]*count{}
	for _, name := range f.NodeNames() {
		n, _ := f.Node(name)
		u.free[n.S1] += 0 // an S1 with no free NIC is reported as 0
		for _, z := range n.Zones {
			for _, nic := range z.NICs {
				// The ledger's NIC index, not a map of the node's held
				// NICs: this runs over every NIC of the cluster at the
				// close of every session.
				// A NIC of several units is free while it has a unit
				// beyond those its holders take.
				free := nic.Free && nic.FreeUnits > int64(l.HolderCount(name, nic.ID))
				if free {
					u.free[n.S1]++
				}
				if nic.S0.IsUnknown() {
					continue
				}
				c := perLeaf[nic.S0]
				if c == nil {
					c = &count{}
					perLeaf[nic.S0] = c
				}
				c.all++
				if free {
					c.free++
				}
			}
		}
	}
	for _, c := range perLeaf {
		u.leaves++
		if c.free > 0 && c.free < c.all {
			u.partly++
		}
	}
	return u
}

// observeFabric refreshes rdmatopo_free_nics and rdmatopo_leaf_fragmentation.
func observeFabric(f *topology.Fabric, l *ledger.Ledger) {
	u := measureFabric(f, l)
	freeNICs.Reset()
	for s1, n := range u.free {
		freeNICs.WithLabelValues(string(s1)).Set(float64(n))
	}
	if u.leaves == 0 {
		leafFragmentation.WithLabelValues().Set(0)
		return
	}
	leafFragmentation.WithLabelValues().Set(float64(u.partly) / float64(u.leaves))
}
