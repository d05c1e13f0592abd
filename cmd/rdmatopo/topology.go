package main

import (
	"context"
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"

	corev1 "k8s.io/api/core/v1"
	schedulingv1beta1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"

	"github.com/rdmatopo/rdmatopo/framework/ledger"
	"github.com/rdmatopo/rdmatopo/framework/topology"
	"github.com/rdmatopo/rdmatopo/internal/workload"
)

// runTopology implements `rdmatopo topology --kubeconfig FILE`: a
// read-only view of a live cluster's RDMA fabric.
func runTopology(args []string, stdout io.Writer) error {
	var kubeconfig, confPath string
	fs := newFlags("topology", "--kubeconfig FILE [--scheduler-conf FILE]", stdout)
	fs.StringVar(&kubeconfig, "kubeconfig", "", "kubeconfig of the cluster to read (required; nothing is written)")
	fs.StringVar(&confPath, "scheduler-conf", "", "volcano-scheduler.conf whose rdma-topology arguments (resources, S1 label) apply (default: the built-in conf)")
	if err := fs.parse(args, 0); err != nil {
		return err
	}
	if kubeconfig == "" {
		return badInputf("topology: --kubeconfig is required")
	}
	c, err := loadConf(confPath)
	if err != nil {
		return err
	}
	lc, err := dial(kubeconfig)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), liveTimeout)
	defer cancel()
	cluster, err := fetchCluster(ctx, lc)
	if err != nil {
		return err
	}
	return printTopology(stdout, c.Topology, cluster)
}

// leafRow is one line of the topology table.
type leafRow struct {
	s1, s0     string
	nodes      []string
	nics, free int
	holders    map[string]int
}

// printTopology prints, per S0 leaf (grouped by S1), its nodes, its free
// and used NICs and which jobs hold them. A NIC is used when its KCNR lists
// an allocation on it or a bound pod holds it by its rdmatopo.io
// annotations, read as the scheduler rebuilds its reservations
// (ledger.Rebuild: a reservation the KCNR may not show yet, kept even when
// the annotations cannot be fully read). On topology-unknown NICs, which no
// KCNR allocation covers, a bound pod also holds as many NICs as it requests
// beyond those its annotations name. Leaves of topology-unknown NICs are
// shown one line per node.
func printTopology(w io.Writer, cfg topology.Config, c *workload.Cluster) error {
	cfg = cfg.WithDefaults()
	f := topology.Build(cfg, c.Nodes, c.CNRs)

	// Who holds each NIC: by annotation, then by KCNR consumer.
	jobOf := map[string]string{} // namespace/name -> job
	byUID := map[string]string{} // namespace/name/uid consumer -> job
	for _, p := range c.Pods {
		key := p.Namespace + "/" + p.Name
		job := key
		if g := p.Annotations[schedulingv1beta1.KubeGroupNameAnnotationKey]; g != "" {
			job = p.Namespace + "/" + g
		}
		jobOf[key] = job
		byUID[key+"/"+string(p.UID)] = job
	}
	held := map[string]string{} // node/nic -> job
	reserved, annotationErrs := ledger.Rebuild(cfg, c.Pods, f)
	for _, r := range reserved.All() {
		for _, nic := range r.NICs() {
			held[r.Node+"/"+string(nic)] = jobOf[r.Namespace+"/"+r.Name]
		}
	}
	holdUnannotated(cfg, f, c.Pods, reserved, jobOf, held)
	holderOf := func(node string, nic topology.NIC) (string, bool) {
		if job, ok := held[node+"/"+string(nic.ID)]; ok {
			return job, true
		}
		if nic.Free {
			return "", false
		}
		for _, consumer := range nic.Consumers {
			if job, ok := byUID[consumer]; ok {
				return job, true
			}
			parts := strings.SplitN(consumer, "/", 3)
			if len(parts) >= 2 {
				if job, ok := jobOf[parts[0]+"/"+parts[1]]; ok {
					return job, true
				}
				return parts[0] + "/" + parts[1] + " (pod gone)", true
			}
		}
		return "(unknown holder)", true
	}

	var rows []*leafRow
	unknownRows := map[string]*leafRow{}
	add := func(r *leafRow, node string, nic topology.NIC) {
		r.nics++
		if job, used := holderOf(node, nic); used {
			r.holders[job]++
		} else {
			r.free++
		}
	}
	for _, id := range f.LeafIDs() {
		l, _ := f.Leaf(id)
		if id.IsUnknown() {
			for _, s := range l.Slots {
				r, ok := unknownRows[s.Node.Name]
				if !ok {
					r = &leafRow{s1: string(l.S1), s0: "(unknown)", nodes: []string{s.Node.Name}, holders: map[string]int{}}
					unknownRows[s.Node.Name] = r
				}
				for _, nic := range nicsOf(s) {
					add(r, s.Node.Name, nic)
				}
			}
			continue
		}
		r := &leafRow{s1: string(l.S1), s0: string(id), holders: map[string]int{}}
		seen := map[string]bool{}
		for _, s := range l.Slots {
			if !seen[s.Node.Name] {
				seen[s.Node.Name] = true
				r.nodes = append(r.nodes, s.Node.Name)
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
	sort.SliceStable(rows, func(i, j int) bool {
		a, b := rows[i], rows[j]
		if a.s1 != b.s1 {
			return a.s1 < b.s1
		}
		if (a.s0 == "(unknown)") != (b.s0 == "(unknown)") {
			return b.s0 == "(unknown)"
		}
		if a.s0 != b.s0 {
			return a.s0 < b.s0
		}
		return a.nodes[0] < b.nodes[0]
	})

	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "S1\tS0\tNODES\tNICS\tFREE\tUSED\tHOLDERS")
	totalNICs, totalFree := 0, 0
	for _, r := range rows {
		s1 := r.s1
		if s1 == "" {
			s1 = "-"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%d\t%d\t%s\n", s1, r.s0, strings.Join(r.nodes, ","),
			r.nics, r.free, r.nics-r.free, holderList(r.holders))
		totalNICs += r.nics
		totalFree += r.free
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	leaves := 0
	for _, id := range f.LeafIDs() {
		if !id.IsUnknown() {
			leaves++
		}
	}
	fmt.Fprintf(w, "\n%d nodes, %d S0 leaves, %d topology-unknown nodes; %d of %d RDMA NICs free.\n",
		f.Len(), leaves, len(unknownRows), totalFree, totalNICs)
	if len(annotationErrs) > 0 {
		fmt.Fprintln(w, "\nPod annotations (the NICs they name on their node count as used):")
		for _, err := range annotationErrs {
			fmt.Fprintln(w, "  "+err.Error())
		}
	}
	if reasons := f.Reasons(); len(reasons) > 0 {
		fmt.Fprintln(w, "\nTopology problems (these NICs count as leaves of their own):")
		for _, r := range reasons {
			fmt.Fprintln(w, "  "+r.String())
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
		if !ok || p.DeletionTimestamp != nil || node.Consumers[p.Namespace+"/"+p.Name+"/"+string(p.UID)] {
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

// holderList renders "job (n), job (n)" sorted by job, or "-".
func holderList(h map[string]int) string {
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
