package main

import (
	"fmt"
	"io"
	"os"
	"time"

	"github.com/rdmatopo/rdmatopo/examples"
	"github.com/rdmatopo/rdmatopo/internal/fabricmap"
	"github.com/rdmatopo/rdmatopo/internal/fabricmap/simmap"
	"github.com/rdmatopo/rdmatopo/internal/sim"
	"github.com/rdmatopo/rdmatopo/internal/sim/nodeagent"
	"github.com/rdmatopo/rdmatopo/internal/workload"
)

// Output formats of simulate.
const (
	outputTable = "table"
	outputJSON  = "json"
	outputWide  = "wide"
)

// simulateOpts are simulate's flags.
type simulateOpts struct {
	cluster    string
	workload   string
	conf       string
	output     string
	mapFile    string
	kubeconfig string
	maxCycles  int
	nodeAgent  string
	period     time.Duration
}

// runSimulate implements `rdmatopo simulate`. Topology problems of the
// cluster's KCNRs are warning lines on stderr, never on stdout (which holds
// only the table or the one JSON object).
func runSimulate(args []string, stdout, stderr io.Writer) error {
	var o simulateOpts
	fs := newFlags("simulate", "[--cluster FILE] [--workload FILE] [--scheduler-conf FILE] [-o table|json] [--map FILE.svg] [--kubeconfig FILE] [--node-agent exact|numa|blind] [--period DURATION]", stdout)
	fs.StringVar(&o.cluster, "cluster", "", "cluster file: Nodes, CustomNodeResources and bound Pods (default: the built-in sample cluster)")
	fs.StringVar(&o.workload, "workload", "", "workload file: Queues, PodGroups, Pods, Volcano Jobs, PyTorchJobs (default: the built-in sample workload)")
	fs.StringVar(&o.conf, "scheduler-conf", "", "volcano-scheduler.conf (default: the built-in conf of config/)")
	fs.StringVarP(&o.output, "output", "o", outputTable, "output format: table, wide (the table and one line per pod with its rank) or json")
	fs.StringVar(&o.mapFile, "map", "", "also write an SVG map of the fabric and the placements to this file")
	fs.StringVar(&o.kubeconfig, "kubeconfig", "", "read the cluster (Nodes, CustomNodeResources, bound Pods) from a live cluster, read-only")
	fs.IntVar(&o.maxCycles, "max-cycles", 1000, "stop with an error if the scheduler still binds after this many cycles (and stop waiting for max-wait deadlines)")
	fs.DurationVar(&o.period, "period", sim.DefaultPeriod, "simulated time between two scheduling cycles (vc-scheduler's schedule period); max-wait deadlines are measured on this clock")
	fs.StringVar(&o.nodeAgent, "node-agent", string(nodeagent.Default),
		"how the simulated katalyst node agent hands out devices after each bind: exact (the annotated NICs), numa (the numa_bind_result zone, its free NICs by name) or blind (the first zone with room)")
	if err := fs.parse(args, 0); err != nil {
		return err
	}
	agent, err := o.check()
	if err != nil {
		return err
	}

	c, err := loadConf(o.conf)
	if err != nil {
		return err
	}
	cluster, clusterName, set, err := o.inputs(c)
	if err != nil {
		return err
	}

	s, err := sim.New(c, cluster, sim.Options{NodeAgent: agent, Period: o.period})
	if err != nil {
		return err
	}
	if err := s.Submit(set); err != nil {
		return badInput(err)
	}
	writeProblems(stderr, "warning", clusterName, topologyProblems(c.Topology, cluster))
	for _, w := range set.Warnings {
		fmt.Fprintf(stderr, "warning: %s\n", oneLine(w))
	}
	if _, err := s.Run(o.maxCycles); err != nil {
		return err
	}
	if deadline, ok := s.PendingDeadline(); ok {
		fmt.Fprintf(stderr, "warning: stopped after %d cycles (--max-cycles) with a max-wait deadline %s ahead; raise --max-cycles or --period to see it pass\n",
			s.Cycle(), deadline.Sub(s.Now()))
	}
	rep := sim.BuildReport(s)

	if o.mapFile != "" {
		svg := fabricmap.Render(s.Fabric(), simmap.FromSim(rep, s.Pods()))
		if err := os.WriteFile(o.mapFile, svg, 0o644); err != nil {
			return fmt.Errorf("writing the map: %w", err)
		}
	}
	if o.output == outputJSON {
		return writeJSON(stdout, rep)
	}
	return writeTable(stdout, rep, o.output == outputWide)
}

// check checks the flags that need no input read, and returns the node
// agent's mode.
func (o *simulateOpts) check() (nodeagent.Mode, error) {
	if o.output != outputTable && o.output != outputWide && o.output != outputJSON {
		return "", badInputf("simulate: -o %q: must be table, wide or json", o.output)
	}
	if o.cluster != "" && o.kubeconfig != "" {
		return "", badInputf("simulate: --cluster and --kubeconfig are exclusive (the live cluster is the cluster)")
	}
	if o.maxCycles < 1 {
		return "", badInputf("simulate: --max-cycles must be at least 1, got %d", o.maxCycles)
	}
	if o.period <= 0 {
		return "", badInputf("simulate: --period must be positive, got %s", o.period)
	}
	agent, err := nodeagent.ParseMode(o.nodeAgent)
	if err != nil {
		return "", badInputf("simulate: --node-agent: %v", err)
	}
	return agent, nil
}

// inputs reads the cluster (a file, the sample, or a live cluster) and the
// workload, and checks that they fit together.
func (o *simulateOpts) inputs(c *sim.Conf) (*workload.Cluster, string, *workload.Set, error) {
	var cluster *workload.Cluster
	clusterName := nameOr(o.cluster, examples.ClusterFile)
	var err error
	if o.kubeconfig != "" {
		clusterName = o.kubeconfig
		if cluster, err = loadLiveCluster(o.kubeconfig, c.Topology); err != nil {
			return nil, "", nil, err
		}
	} else if cluster, err = loadCluster(o.cluster); err != nil {
		return nil, "", nil, err
	}
	set, err := loadWorkload(o.workload)
	if err != nil {
		return nil, "", nil, err
	}
	if err := checkDisjoint(cluster, set, nameOr(o.workload, examples.WorkloadFile)); err != nil {
		return nil, "", nil, err
	}
	if err := workload.CheckRunning(cluster, set); err != nil {
		return nil, "", nil, badInput(err)
	}
	return cluster, clusterName, set, nil
}
