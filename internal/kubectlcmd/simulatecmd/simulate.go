// Package simulatecmd is the kubectl-rdmatopo-simulate plugin binary:
// `kubectl rdmatopo simulate` (kubectl runs this binary for it) and the
// hidden --next-session mode kubectl-rdmatopo runs for explain. It runs
// the real Volcano session in memory (internal/sim), which is why it is a
// binary of its own: kubectl-rdmatopo links no Volcano scheduler package.
package simulatecmd

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	schedulingv1beta1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"

	"github.com/rdmatopo/rdmatopo/internal/fabricmap"
	"github.com/rdmatopo/rdmatopo/internal/fabricmap/simmap"
	"github.com/rdmatopo/rdmatopo/internal/kubectlcmd"
	"github.com/rdmatopo/rdmatopo/internal/live"
	"github.com/rdmatopo/rdmatopo/internal/sim"
	"github.com/rdmatopo/rdmatopo/internal/sim/simjson"
	"github.com/rdmatopo/rdmatopo/internal/workload"
)

// SimulateResult is what `simulate -o json|yaml` prints: the outcome in the
// shape `rdmatopo simulate -o json` prints (pods, jobs, evictions), with
// the live cluster's context beside it.
type SimulateResult struct {
	// SchedulerConf says which conf ran (file, configmap or built-in).
	SchedulerConf kubectlcmd.ConfSource `json:"schedulerConf"`
	// Waiting lists the gangs already waiting in the cluster that the
	// simulation includes ("namespace/name").
	Waiting []string `json:"waiting"`
	Cycles  int      `json:"cycles"`
	simjson.Report

	report *sim.Report
}

// Main runs kubectl-rdmatopo-simulate with args (without the program
// name) and returns the exit code: 0, 2 for a wrong command line, 1 for
// any other error (one line on stderr).
func Main(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	return kubectlcmd.Execute(context.Background(), NewCommand(stdin, stdout, stderr), args, stderr)
}

// NewCommand builds `kubectl rdmatopo simulate` as the root command of
// kubectl-rdmatopo-simulate, with kubectl-rdmatopo's shared flags.
func NewCommand(stdin io.Reader, stdout, stderr io.Writer) *cobra.Command {
	o := kubectlcmd.NewOptions(stdin, stdout, stderr)
	var output, workloadFile, mapFile string
	var maxCycles int
	var noWaiting, next bool
	cmd := &cobra.Command{
		// A root command's usage line is its Use as written: the
		// command as kubectl-rdmatopo's help names it.
		Use:   "kubectl-rdmatopo simulate [--workload FILE]",
		Short: kubectlcmd.SimulateShort,
		Long: "simulate reads the live cluster (Nodes, KCNRs, bound pods, Queues, PriorityClasses), its scheduler conf\n" +
			"(ConfigMap " + live.SchedulerConfigMapNamespace + "/" + live.SchedulerConfigMapName + " when present) and the gangs\n" +
			"waiting there, adds the workload file's jobs, and runs the real Volcano scheduler in memory until nothing new binds.",
		Args:          cobra.NoArgs,
		SilenceUsage:  true,
		SilenceErrors: true,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if next {
				return runNextSession(stdin, stdout)
			}
			if err := kubectlcmd.CheckOutput(output, kubectlcmd.OutputTable, kubectlcmd.OutputJSON, kubectlcmd.OutputYAML); err != nil {
				return err
			}
			if maxCycles < 1 {
				return kubectlcmd.Usagef("--max-cycles must be at least 1")
			}
			var set *workload.Set
			if workloadFile != "" {
				data, err := os.ReadFile(workloadFile)
				if err != nil {
					return kubectlcmd.Usagef("--workload: %v", err)
				}
				if set, err = workload.LoadWorkload(workloadFile, data); err != nil {
					return kubectlcmd.Usagef("%v", err)
				}
				for _, w := range set.Warnings {
					fmt.Fprintf(cmd.ErrOrStderr(), "warning: %s\n", strings.Join(strings.Fields(w), " "))
				}
			}
			ctx, cancel := context.WithTimeout(cmd.Context(), kubectlcmd.LiveTimeout)
			defer cancel()
			snap, checked, src, err := o.Snapshot(ctx)
			if err != nil {
				return err
			}
			conf, err := sim.ParseConf(checked.Text)
			if err != nil {
				return kubectlcmd.ConfError(src, err)
			}
			res, s, err := simulate(conf, snap, set, !noWaiting, maxCycles)
			if err != nil {
				return err
			}
			res.SchedulerConf = src
			if mapFile != "" {
				svg := fabricmap.Render(s.Fabric(), simmap.FromSim(res.report, s.Pods()))
				if err := os.WriteFile(mapFile, svg, 0o644); err != nil {
					return fmt.Errorf("writing the map: %w", err)
				}
			}
			if output != kubectlcmd.OutputTable {
				return kubectlcmd.WriteStructured(o.Stdout(), output, res)
			}
			return writeSimTable(o.Stdout(), res)
		},
	}
	cmd.SetIn(stdin)
	cmd.SetOut(stdout)
	cmd.SetErr(stderr)
	o.AddFlags(cmd)
	kubectlcmd.OutputFlag(cmd, &output, kubectlcmd.OutputTable, kubectlcmd.OutputJSON, kubectlcmd.OutputYAML)
	cmd.Flags().StringVar(&workloadFile, "workload", "", "workload file to add: Queues, PodGroups, Pods, Volcano Jobs, PyTorchJobs")
	cmd.Flags().StringVar(&mapFile, "map", "", "also write an SVG map of the outcome to this file")
	cmd.Flags().IntVar(&maxCycles, "max-cycles", 1000, "stop with an error if the scheduler still binds after this many cycles")
	cmd.Flags().BoolVar(&noWaiting, "no-waiting", false, "leave out the gangs waiting in the cluster")
	// kubectl-rdmatopo's explain runs one session through it (kubectlcmd.NextSessionInput on stdin).
	cmd.Flags().BoolVar(&next, kubectlcmd.NextSessionFlag, false, "read a cluster snapshot and conf on stdin, run one session, print its outcome as JSON")
	_ = cmd.Flags().MarkHidden(kubectlcmd.NextSessionFlag)
	return cmd
}

// waitingSet is the workload of the gangs waiting in the cluster: every
// PodGroup that is not placed and has pending pods, with those pods.
func waitingSet(snap *live.Snapshot, rdmaResource string) (*workload.Set, []string) {
	set := &workload.Set{}
	var names []string
	for _, j := range snap.Jobs(rdmaResource) {
		if j.Placed || j.Bound == j.Pods {
			continue
		}
		var pg *schedulingv1beta1.PodGroup
		for _, g := range snap.PodGroups {
			if g.Namespace == j.Namespace && g.Name == j.Name {
				pg = g.DeepCopy()
			}
		}
		if pg == nil {
			continue
		}
		_, pending := snap.PodsOf(j.Namespace, j.Name)
		pg.ResourceVersion = ""
		pg.Status.Conditions = nil
		set.PodGroups = append(set.PodGroups, pg)
		for _, p := range pending {
			p = p.DeepCopy()
			p.ResourceVersion = ""
			p.Status = corev1.PodStatus{Phase: corev1.PodPending}
			set.Pods = append(set.Pods, p)
		}
		names = append(names, j.Key())
	}
	return set, names
}

// simulate runs the scheduler over the live cluster, its waiting gangs
// (when withWaiting) and the extra workload.
func simulate(conf *sim.Conf, snap *live.Snapshot, extra *workload.Set, withWaiting bool, maxCycles int) (*SimulateResult, *sim.Simulator, error) {
	set := &workload.Set{Queues: snap.Queues, PriorityClasses: snap.PriorityClasses}
	res := &SimulateResult{Waiting: []string{}}
	if withWaiting {
		w, names := waitingSet(snap, conf.Topology.WithDefaults().RDMAResource)
		set.PodGroups = append(set.PodGroups, w.PodGroups...)
		set.Pods = append(set.Pods, w.Pods...)
		res.Waiting = append(res.Waiting, names...)
	}
	if extra != nil {
		exists := map[string]bool{}
		for _, p := range snap.Cluster.Pods {
			exists["pod "+p.Namespace+"/"+p.Name] = true
		}
		for _, p := range set.Pods {
			exists["pod "+p.Namespace+"/"+p.Name] = true
		}
		for _, pg := range set.PodGroups {
			exists["PodGroup "+pg.Namespace+"/"+pg.Name] = true
		}
		for _, pg := range extra.PodGroups {
			if exists["PodGroup "+pg.Namespace+"/"+pg.Name] {
				return nil, nil, kubectlcmd.Usagef("workload: PodGroup %s/%s already waits in the cluster (use --no-waiting, or rename it)", pg.Namespace, pg.Name)
			}
		}
		for _, p := range extra.Pods {
			if exists["pod "+p.Namespace+"/"+p.Name] {
				return nil, nil, kubectlcmd.Usagef("workload: pod %s/%s already exists in the cluster", p.Namespace, p.Name)
			}
		}
		set.Queues = append(set.Queues, extra.Queues...)
		set.PriorityClasses = append(set.PriorityClasses, extra.PriorityClasses...)
		set.PodGroups = append(set.PodGroups, extra.PodGroups...)
		set.Pods = append(set.Pods, extra.Pods...)
	}
	if len(set.Queues) == 0 {
		set.Queues = []*schedulingv1beta1.Queue{defaultQueue()}
	}
	s, err := sim.New(conf, snap.Cluster, sim.Options{})
	if err != nil {
		return nil, nil, err
	}
	if err := s.Submit(set); err != nil {
		return nil, nil, err
	}
	if _, err := s.Run(maxCycles); err != nil {
		return nil, nil, err
	}
	rep := sim.BuildReport(s)
	res.Cycles, res.report = rep.Cycles, rep
	res.Report = sim.JSONReport(rep)
	return res, s, nil
}

// defaultQueue is Volcano's default Queue, for clusters that list none.
func defaultQueue() *schedulingv1beta1.Queue {
	q := &schedulingv1beta1.Queue{}
	q.Name = "default"
	q.Spec.Weight = 1
	q.Status.State = schedulingv1beta1.QueueStateOpen
	return q
}

// writeSimTable prints one line per job and a summary. RING is the leaf
// changes along the ring over the job's ranks ("-" when it holds no NICs).
func writeSimTable(w io.Writer, res *SimulateResult) error {
	waiting := map[string]bool{}
	for _, k := range res.Waiting {
		waiting[k] = true
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "JOB\tSOURCE\tPLACED\tTIER\tS0\tS1\tPODS\tRING\tREASON")
	for _, j := range res.Jobs {
		key := j.Namespace + "/" + j.Name
		source := "workload"
		if waiting[key] {
			source = "waiting in cluster"
		}
		yes, tier, reason := "no", j.Tier, j.Reason
		if j.Placed {
			yes = "yes"
		}
		if tier == "" {
			tier = "-"
		}
		if reason == "" {
			reason = "-"
		}
		ring := "-"
		if len(j.S0) > 0 {
			ring = fmt.Sprint(j.RingCrossings)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%d/%d\t%s\t%s\n", key, source, yes, tier,
			list(j.S0, fabricmap.ShortID), list(j.S1, func(s string) string { return s }), j.BoundPods, j.MinMember, ring, reason)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err := fmt.Fprintf(w, "\n%s\nScheduler conf: %s.\n", sim.Summary(res.report), res.SchedulerConf)
	return err
}

// list renders up to three items and a count of the rest.
func list(items []string, short func(string) string) string {
	if len(items) == 0 {
		return "-"
	}
	var parts []string
	for i, it := range items {
		if i == 3 {
			parts = append(parts, fmt.Sprintf("+%d", len(items)-3))
			break
		}
		parts = append(parts, short(it))
	}
	return strings.Join(parts, ",")
}
