package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/rdmatopo/rdmatopo/examples"
	"github.com/rdmatopo/rdmatopo/internal/workload"
)

// runValidate implements `rdmatopo validate`: it parses and checks a
// scheduler conf (the built-in one by default) and, when given, a cluster
// and a workload file, exactly as simulate would, without scheduling. Each
// topology problem of the cluster's Nodes and KCNRs is one warning line on
// stderr naming the node and the field; with --strict they are error lines
// and the input is unusable (exit 2).
func runValidate(args []string, stdout, stderr io.Writer) error {
	var confPath, clusterPath, workloadPath string
	var strict bool
	fs := newFlags("validate", "[--scheduler-conf FILE] [--cluster FILE] [--workload FILE] [--strict]", stdout)
	fs.StringVar(&confPath, "scheduler-conf", "", "volcano-scheduler.conf to check (default: the built-in conf)")
	fs.StringVar(&clusterPath, "cluster", "", "cluster file to check")
	fs.StringVar(&workloadPath, "workload", "", "workload file to check")
	fs.BoolVar(&strict, "strict", false, "treat topology problems of the cluster's CustomNodeResources as errors (exit 2)")
	if err := fs.parse(args, 0); err != nil {
		return err
	}
	c, err := loadConf(confPath)
	if err != nil {
		return err
	}
	var plugins []string
	for _, t := range c.Tiers {
		var names []string
		for _, p := range t.Plugins {
			names = append(names, p.Name)
		}
		plugins = append(plugins, strings.Join(names, ", "))
	}
	fmt.Fprintf(stdout, "%s: ok: actions %s; plugin tiers [%s]\n", nameOr(confPath, builtinConfName),
		strings.Join(c.ActionNames(), ", "), strings.Join(plugins, "] ["))
	var cl *workload.Cluster
	if clusterPath != "" {
		var err error
		cl, err = loadCluster(clusterPath)
		if err != nil {
			return err
		}
		problems := topologyProblems(c.Topology, cl)
		if strict && len(problems) > 0 {
			writeProblems(stderr, "error", clusterPath, problems)
			return badInputf("%s: %s (--strict)", clusterPath, plural(len(problems), "topology problem"))
		}
		writeProblems(stderr, "warning", clusterPath, problems)
		var warned string
		if len(problems) > 0 {
			warned = "; " + plural(len(problems), "topology warning")
		}
		fmt.Fprintf(stdout, "%s: ok: %d nodes, %d CustomNodeResources, %d bound pods%s\n", clusterPath, len(cl.Nodes), len(cl.CNRs), len(cl.Pods), warned)
	}
	if workloadPath != "" {
		set, err := loadWorkload(workloadPath)
		if err != nil {
			return err
		}
		if cl != nil {
			if err := checkDisjoint(cl, set, workloadPath); err != nil {
				return err
			}
			if err := workload.CheckRunning(cl, set); err != nil {
				return badInput(err)
			}
		}
		for _, w := range set.Warnings {
			fmt.Fprintf(stderr, "warning: %s\n", oneLine(w))
		}
		fmt.Fprintf(stdout, "%s: ok: %d PodGroups, %d pods, %d queues\n", nameOr(workloadPath, examples.WorkloadFile),
			len(set.PodGroups), len(set.Pods), len(set.Queues))
	}
	return nil
}
