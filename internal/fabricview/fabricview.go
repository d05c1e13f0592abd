// Package fabricview computes the RDMA fabric of a cluster as an operator
// reads it: per S0 leaf (grouped by S1) its nodes, its free and used NICs
// and which jobs hold them. It backs `rdmatopo topology`, `kubectl rdmatopo
// topology`, the live fabric map and the dashboard.
//
// A NIC is used when its KCNR lists an allocation on it or a bound pod
// holds it by its rdmatopo.io annotations, read as the scheduler rebuilds
// its reservations (ledger.Rebuild: a reservation the KCNR may not show
// yet, kept even when the annotations cannot be fully read). On
// topology-unknown NICs, which no KCNR allocation covers, a bound pod also
// holds as many NICs as it requests beyond those its annotations name.
package fabricview

import (
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"
	"text/tabwriter"

	corev1 "k8s.io/api/core/v1"
	schedulingv1beta1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"

	"github.com/rdmatopo/rdmatopo/core/ledger"
	"github.com/rdmatopo/rdmatopo/core/topology"
	"github.com/rdmatopo/rdmatopo/internal/workload"
)

// UnknownS0 is the S0 column of a topology-unknown node's row.
const UnknownS0 = "(unknown)"

// Leaf is one row of the view: an S0 leaf, or the topology-unknown NICs of
// one node.
type Leaf struct {
	// S1 is the leaf's miniPod ("" when unknown).
	S1 string `json:"s1"`
	// S0 is the leaf's hash, or UnknownS0.
	S0 string `json:"s0"`
	// Nodes have a NIC under the leaf, sorted.
	Nodes []string `json:"nodes"`
	// NICs counts the leaf's NICs; Free those with an RDMA unit left (on
	// NICs of one unit: those nobody holds).
	NICs int `json:"nics"`
	Free int `json:"free"`
	// Holders maps each holding job ("namespace/podgroup", or the pod
	// for pods without a PodGroup) to the number of the leaf's NICs it
	// holds.
	Holders map[string]int `json:"holders"`
}

// Used is the number of the leaf's NICs that are held.
func (l Leaf) Used() int { return l.NICs - l.Free }

// View is the fabric of a cluster with who holds what.
type View struct {
	Leaves []Leaf `json:"leaves"`
	// Nodes counts the nodes of the fabric; S0Leaves the known leaves;
	// UnknownNodes the nodes with topology-unknown NICs.
	Nodes        int `json:"nodes"`
	S0Leaves     int `json:"s0Leaves"`
	UnknownNodes int `json:"unknownNodes"`
	NICs         int `json:"nics"`
	FreeNICs     int `json:"freeNICs"`
	// AnnotationProblems are pod annotations that cannot be fully read
	// (the NICs they name on their node count as used).
	AnnotationProblems []string `json:"annotationProblems"`
	// TopologyProblems are KCNR problems (those NICs count as leaves of
	// their own).
	TopologyProblems []string `json:"topologyProblems"`

	fabric  *topology.Fabric
	holders map[string]string
}

// Fabric returns the fabric the view was built on.
func (v *View) Fabric() *topology.Fabric { return v.fabric }

// HolderOf returns the job holding a node's NIC, if any.
func (v *View) HolderOf(node string, nic topology.NICID) (string, bool) {
	job, ok := v.holders[node+"/"+string(nic)]
	return job, ok
}

// JobOf returns the job of a pod: "namespace/podgroup", or "namespace/pod"
// for a pod without a PodGroup.
func JobOf(p *corev1.Pod) string {
	if g := p.Annotations[schedulingv1beta1.KubeGroupNameAnnotationKey]; g != "" {
		return p.Namespace + "/" + g
	}
	return p.Namespace + "/" + p.Name
}

// Build computes the view of a cluster under a fabric configuration.
func Build(cfg topology.Config, c *workload.Cluster) *View {
	cfg = cfg.WithDefaults()
	f := c.Fabric(cfg)
	v := &View{fabric: f, holders: map[string]string{}, AnnotationProblems: []string{}, TopologyProblems: []string{}}
	h, annotationErrs := readHolders(cfg, f, c.Pods)

	var rows []*Leaf
	unknownRows := map[string]*Leaf{}
	add := func(r *Leaf, node string, nic topology.NIC) {
		r.NICs++
		if job, used := h.of(node, nic); used {
			r.Holders[job]++
			v.holders[node+"/"+string(nic.ID)] = job
		} else {
			r.Free++
		}
	}
	for _, id := range f.LeafIDs() {
		l, _ := f.Leaf(id)
		if id.IsUnknown() {
			for _, s := range l.Slots {
				r, ok := unknownRows[s.Node.Name]
				if !ok {
					r = &Leaf{S1: string(l.S1), S0: UnknownS0, Nodes: []string{s.Node.Name}, Holders: map[string]int{}}
					unknownRows[s.Node.Name] = r
				}
				for _, nic := range nicsOf(s) {
					add(r, s.Node.Name, nic)
				}
			}
			continue
		}
		v.S0Leaves++
		r := &Leaf{S1: string(l.S1), S0: string(id), Holders: map[string]int{}}
		seen := map[string]bool{}
		for _, s := range l.Slots {
			if !seen[s.Node.Name] {
				seen[s.Node.Name] = true
				r.Nodes = append(r.Nodes, s.Node.Name)
			}
			for _, nic := range nicsOf(s) {
				add(r, s.Node.Name, nic)
			}
		}
		rows = append(rows, r)
	}
	for _, r := range unknownRows {
		rows = append(rows, r)
	}
	sortRows(rows)
	v.Leaves = make([]Leaf, 0, len(rows))
	for _, r := range rows {
		v.Leaves = append(v.Leaves, *r)
		v.NICs += r.NICs
		v.FreeNICs += r.Free
	}
	v.Nodes = f.Len()
	v.UnknownNodes = len(unknownRows)
	for _, err := range annotationErrs {
		v.AnnotationProblems = append(v.AnnotationProblems, err.Error())
	}
	for _, r := range f.Reasons() {
		v.TopologyProblems = append(v.TopologyProblems, r.String())
	}
	return v
}

// sortRows orders the rows by S1, the known leaves first by name, then
// the nodes of unknown topology by name.
func sortRows(rows []*Leaf) {
	sort.SliceStable(rows, func(i, j int) bool {
		a, b := rows[i], rows[j]
		if a.S1 != b.S1 {
			return a.S1 < b.S1
		}
		if (a.S0 == UnknownS0) != (b.S0 == UnknownS0) {
			return b.S0 == UnknownS0
		}
		if a.S0 != b.S0 {
			return a.S0 < b.S0
		}
		return a.Nodes[0] < b.Nodes[0]
	})
}

// nicHolders tells who holds each NIC: by annotation, then by KCNR
// consumer.
type nicHolders struct {
	jobOf map[string]string // namespace/name -> job
	byUID map[string]string // namespace/name/uid consumer -> job
	held  map[string]string // node/nic -> job (the first reservation by UID)
	// unlisted and count count, per node/nic, the reservations the KCNR
	// does not list there and all of them: a NIC of several units is
	// free while it has a unit beyond them.
	unlisted, count map[string]int64
}

// readHolders reads the holders of every NIC from the pods' annotations
// (ledger.Rebuild, whose problems it returns) and the pods the KCNRs list.
func readHolders(cfg topology.Config, f *topology.Fabric, pods []*corev1.Pod) (*nicHolders, []error) {
	h := &nicHolders{jobOf: map[string]string{}, byUID: map[string]string{}, held: map[string]string{},
		unlisted: map[string]int64{}, count: map[string]int64{}}
	for _, p := range pods {
		key := p.Namespace + "/" + p.Name
		h.jobOf[key] = JobOf(p)
		h.byUID[ledger.ConsumerID(p.Namespace, p.Name, string(p.UID))] = JobOf(p)
	}
	reserved, annotationErrs := ledger.Rebuild(cfg, pods, f)
	for _, r := range reserved.All() {
		for _, nic := range r.NICs() {
			key := r.Node + "/" + string(nic)
			if _, ok := h.held[key]; !ok {
				h.held[key] = h.jobOf[r.Namespace+"/"+r.Name]
			}
			h.count[key]++
			if n, ok := f.NIC(r.Node, nic); ok && !slices.Contains(n.Consumers, r.Consumer()) {
				h.unlisted[key]++
			}
		}
	}
	holdUnannotated(cfg, f, pods, reserved, h.jobOf, h.held)
	return h, annotationErrs
}

// of returns the job holding a NIC, or false when it is free.
func (h *nicHolders) of(node string, nic topology.NIC) (string, bool) {
	key := node + "/" + string(nic.ID)
	if nic.Units > 1 && min(nic.FreeUnits-h.unlisted[key], nic.Units-h.count[key]) > 0 {
		return "", false
	}
	if job, ok := h.held[key]; ok {
		return job, true
	}
	if nic.Free {
		return "", false
	}
	for _, consumer := range nic.Consumers {
		if job, ok := h.byUID[consumer]; ok {
			return job, true
		}
		parts := strings.SplitN(consumer, "/", 3)
		if len(parts) >= 2 {
			if job, ok := h.jobOf[parts[0]+"/"+parts[1]]; ok {
				return job, true
			}
			return parts[0] + "/" + parts[1] + " (pod gone)", true
		}
	}
	return "(unknown holder)", true
}

// WriteTable prints the view: one line per leaf, a summary line and the
// problems found.
func (v *View) WriteTable(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "S1\tS0\tNODES\tNICS\tFREE\tUSED\tHOLDERS (NICS HELD)")
	for _, r := range v.Leaves {
		s1 := r.S1
		if s1 == "" {
			s1 = "-"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%d\t%d\t%s\n", s1, r.S0, strings.Join(r.Nodes, ","),
			r.NICs, r.Free, r.Used(), HolderList(r.Holders))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(w, "\n%d nodes, %d S0 leaves, %d topology-unknown nodes; %d of %d RDMA NICs free.\n",
		v.Nodes, v.S0Leaves, v.UnknownNodes, v.FreeNICs, v.NICs)
	if len(v.AnnotationProblems) > 0 {
		fmt.Fprintln(w, "\nPod annotations (the NICs they name on their node count as used):")
		for _, p := range v.AnnotationProblems {
			fmt.Fprintln(w, "  "+p)
		}
	}
	if len(v.TopologyProblems) > 0 {
		fmt.Fprintln(w, "\nTopology problems (these NICs count as leaves of their own):")
		for _, p := range v.TopologyProblems {
			fmt.Fprintln(w, "  "+p)
		}
	}
	return nil
}

// holdUnannotated marks, on each node, topology-unknown NICs as held by the
// bound pods that request more RDMA NICs than they hold in reserved and that
// their node's KCNR does not list: no KCNR allocation shows such NICs taken
// (a node without KCNR status, a pod bound without rdmatopo.io annotations),
// yet the pods hold them. The lowest free unknown NICs of the node are taken,
// pods in namespace/name order.
func holdUnannotated(cfg topology.Config, f *topology.Fabric, pods []*corev1.Pod, reserved *ledger.Ledger,
	jobOf map[string]string, held map[string]string) {
	for _, p := range pods {
		node, ok := f.Node(p.Spec.NodeName)
		if !ok || p.DeletionTimestamp != nil || node.Consumers[ledger.ConsumerID(p.Namespace, p.Name, string(p.UID))] {
			continue
		}
		want := workload.PodRequests(&p.Spec)[corev1.ResourceName(cfg.RDMAResource)]
		units := want.Value()
		if r, ok := reserved.Get(string(p.UID)); ok {
			units -= int64(len(r.NICs()))
		}
		for _, z := range node.Zones {
			for _, nic := range z.NICs {
				key := node.Name + "/" + string(nic.ID)
				if units <= 0 {
					break
				}
				if _, taken := held[key]; taken || !nic.Free || !nic.S0.IsUnknown() {
					continue
				}
				held[key] = jobOf[p.Namespace+"/"+p.Name]
				units--
			}
		}
	}
}

// nicsOf returns the NIC records of a slot's NICs.
func nicsOf(s topology.Slot) []topology.NIC {
	want := map[topology.NICID]bool{}
	for _, id := range s.NICs {
		want[id] = true
	}
	var out []topology.NIC
	for _, n := range s.Node.Zones[s.Zone].NICs {
		if want[n.ID] {
			out = append(out, n)
		}
	}
	return out
}

// HolderList renders "job (n), job (n)" sorted by job, n being the NICs
// held, or "-".
func HolderList(h map[string]int) string {
	if len(h) == 0 {
		return "-"
	}
	keys := make([]string, 0, len(h))
	for k := range h {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s (%d)", k, h[k])
	}
	return strings.Join(parts, ", ")
}

// Holders maps every held NIC, as "node/nic", to its holding job.
func (v *View) Holders() map[string]string {
	out := make(map[string]string, len(v.holders))
	for k, job := range v.holders {
		out[k] = job
	}
	return out
}
