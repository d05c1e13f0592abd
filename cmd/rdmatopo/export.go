package main

import (
	"fmt"
	"io"
	"slices"
	"text/tabwriter"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"

	"github.com/rdmatopo/rdmatopo/internal/companion"
	"github.com/rdmatopo/rdmatopo/internal/workload"
)

// runExport implements `rdmatopo export hypernodes|topology-labels`: what
// the companion publishes for a cluster file (default: the sample) or a
// live cluster, printed instead of written.
func runExport(args []string, stdout io.Writer) error {
	var clusterPath, kubeconfig, confPath, output string
	fs := newFlags("export", "hypernodes|topology-labels [--cluster FILE | --kubeconfig FILE] [--scheduler-conf FILE] [-o yaml|table]", stdout)
	fs.StringVar(&clusterPath, "cluster", "", "cluster file (Nodes and KCNRs); default: the built-in sample cluster")
	fs.StringVar(&kubeconfig, "kubeconfig", "", "read a live cluster instead of a file (nothing is written)")
	fs.StringVar(&confPath, "scheduler-conf", "", "volcano-scheduler.conf whose rdma-topology arguments (resources, S1 label) apply (default: the built-in conf)")
	fs.StringVarP(&output, "output", "o", "yaml", "yaml (objects to apply) or table")
	if err := fs.parse(args, 1); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return badInputf("export: name what to export: hypernodes or topology-labels")
	}
	what := fs.Arg(0)
	if what != "hypernodes" && what != "topology-labels" {
		return badInputf("export: unknown export %q: hypernodes or topology-labels", what)
	}
	if output != "yaml" && output != "table" {
		return badInputf("export: -o %q: yaml or table", output)
	}
	if clusterPath != "" && kubeconfig != "" {
		return badInputf("export: --cluster and --kubeconfig exclude each other")
	}
	c, err := loadConf(confPath)
	if err != nil {
		return err
	}
	if err := companion.CheckConfig(c.Topology); err != nil {
		return badInputf("%s: %v", nameOr(confPath, builtinConfName), err)
	}
	var cluster *workload.Cluster
	if kubeconfig != "" {
		cluster, err = loadLiveCluster(kubeconfig, c.Topology)
	} else {
		cluster, err = loadCluster(clusterPath)
	}
	if err != nil {
		return err
	}
	pub := companion.Publish(cluster.Fabric(c.Topology))
	if what == "hypernodes" {
		return printHyperNodes(stdout, pub, output)
	}
	return printTopologyLabels(stdout, pub, output)
}

// printHyperNodes writes the HyperNodes as multi-document YAML, or a table
// of name, tier, members and leaves.
func printHyperNodes(w io.Writer, pub *companion.Publication, output string) error {
	if output == "table" {
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "HYPERNODE\tTIER\tMEMBERS\tLEAVES / S1")
		for _, hn := range pub.HyperNodes {
			what := hn.Annotations[companion.LeavesAnnotation]
			if hn.Spec.Tier == companion.TierS1 {
				what = hn.Annotations[companion.S1Annotation]
			}
			fmt.Fprintf(tw, "%s\t%d\t%d\t%s\n", hn.Name, hn.Spec.Tier, len(hn.Spec.Members), what)
		}
		return tw.Flush()
	}
	for i, hn := range pub.HyperNodes {
		obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(hn)
		if err != nil {
			return fmt.Errorf("HyperNode %s: %w", hn.Name, err)
		}
		unstructured.RemoveNestedField(obj, "metadata", "creationTimestamp")
		data, err := yaml.Marshal(obj)
		if err != nil {
			return fmt.Errorf("HyperNode %s: %w", hn.Name, err)
		}
		if i > 0 {
			fmt.Fprintln(w, "---")
		}
		if _, err := w.Write(data); err != nil {
			return err
		}
	}
	return nil
}

// labelledNode is the part of a Node the companion owns: its name and
// labels, to apply with server-side apply.
type labelledNode struct {
	metav1.TypeMeta `json:",inline"`
	Metadata        struct {
		Name   string            `json:"name"`
		Labels map[string]string `json:"labels"`
	} `json:"metadata"`
}

// printTopologyLabels writes, per node with RDMA NICs, the labels naming
// its leaf group and S1: Node fragments for `kubectl apply --server-side`,
// or a table.
func printTopologyLabels(w io.Writer, pub *companion.Publication, output string) error {
	names := make([]string, 0, len(pub.Labels))
	for n := range pub.Labels {
		names = append(names, n)
	}
	slices.Sort(names)
	if output == "table" {
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintf(tw, "NODE\t%s\t%s\n", companion.S1GroupLabel, companion.LeafGroupLabel)
		for _, n := range names {
			fmt.Fprintf(tw, "%s\t%s\t%s\n", n, pub.Labels[n][companion.S1GroupLabel], pub.Labels[n][companion.LeafGroupLabel])
		}
		return tw.Flush()
	}
	for i, n := range names {
		var obj labelledNode
		obj.APIVersion, obj.Kind = corev1.SchemeGroupVersion.String(), "Node"
		obj.Metadata.Name, obj.Metadata.Labels = n, pub.Labels[n]
		data, err := yaml.Marshal(obj)
		if err != nil {
			return fmt.Errorf("node %s: %w", n, err)
		}
		if i > 0 {
			fmt.Fprintln(w, "---")
		}
		if _, err := w.Write(data); err != nil {
			return err
		}
	}
	return nil
}
