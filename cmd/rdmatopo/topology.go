package main

import (
	"context"
	"io"

	"github.com/rdmatopo/rdmatopo/core/topology"
	"github.com/rdmatopo/rdmatopo/internal/fabricview"
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
	cluster, err := fetchCluster(ctx, lc, c.Topology)
	if err != nil {
		return err
	}
	return printTopology(stdout, c.Topology, cluster)
}

// printTopology prints, per S0 leaf (grouped by S1), its nodes, its free
// and used NICs and which jobs hold them (see internal/fabricview).
func printTopology(w io.Writer, cfg topology.Config, c *workload.Cluster) error {
	return fabricview.Build(cfg, c).WriteTable(w)
}
