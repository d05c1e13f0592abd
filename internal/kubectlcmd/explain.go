package kubectlcmd

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	batchv1alpha1 "volcano.sh/apis/pkg/apis/batch/v1alpha1"
	schedulingv1beta1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"

	"github.com/rdmatopo/rdmatopo/internal/explain"
	"github.com/rdmatopo/rdmatopo/internal/live"
	"github.com/rdmatopo/rdmatopo/internal/schedconf"
)

// pytorchJobs is the Kubeflow training operator's PyTorchJob resource.
var pytorchJobs = schema.GroupVersionResource{Group: "kubeflow.org", Version: "v1", Resource: "pytorchjobs"}

func newExplainCommand(o *Options) *cobra.Command {
	var output string
	return outputCommand(&cobra.Command{
		Use:   "explain PODGROUP|podgroup/NAME|job/NAME|pytorchjob/NAME|pod/NAME",
		Short: "Say why a gang waits or where it sits: its tier, the best leaves and what blocks them",
		Long: "explain finds the gang's PodGroup (a Volcano Job's is <job>-<job uid>, a PyTorchJob's is named like the job,\n" +
			"a pod names its own) and runs the planner on the live state with the gang's contract.",
		Args: cobra.ExactArgs(1),
	}, &output, []string{OutputTable, OutputJSON, OutputYAML}, func(cmd *cobra.Command, args []string) error {
		ns, err := o.namespace()
		if err != nil {
			return err
		}
		return o.withView(cmd, func(ctx context.Context, c *live.Clients, conf *schedconf.Conf) error {
			snap, err := live.Fetch(ctx, c)
			if err != nil {
				return err
			}
			pg, err := resolve(ctx, c, snap, ns, args[0])
			if err != nil {
				return err
			}
			jobErr := readVolcanoJob(ctx, c, snap, pg)
			e := explain.Explain(conf.Topology, snap, pg)
			// Where the gang lands is the scheduler's answer: its next
			// session over every waiting gang (a conf it cannot run has
			// none; the planner's answer for the gang alone stays then).
			if conf.ActionNames != nil {
				if err := o.withNextSession(ctx, e, conf.Text, snap); err != nil {
					return err
				}
			}
			if jobErr != nil {
				e.Notes = append(e.Notes, jobErr.Error()+": ranks order the Job's tasks by name, not by spec.tasks")
			}
			if output != OutputTable {
				return WriteStructured(o.stdout, output, e)
			}
			return e.WriteText(o.stdout)
		})
	})
}

// resolve finds the PodGroup a target names in namespace ns.
func resolve(ctx context.Context, c *live.Clients, snap *live.Snapshot, ns, target string) (*schedulingv1beta1.PodGroup, error) {
	kind, name, ok := strings.Cut(target, "/")
	if !ok {
		kind, name = "podgroup", target
	}
	if name == "" {
		return nil, Usagef("explain %q: empty name", target)
	}
	find := func(pgName string) *schedulingv1beta1.PodGroup {
		for _, pg := range snap.PodGroups {
			if pg.Namespace == ns && pg.Name == pgName {
				return pg
			}
		}
		return nil
	}
	ownedBy := func(ownerKind, owner string) *schedulingv1beta1.PodGroup {
		for _, pg := range snap.PodGroups {
			for _, ref := range pg.OwnerReferences {
				if pg.Namespace == ns && ref.Kind == ownerKind && ref.Name == owner {
					return pg
				}
			}
		}
		return nil
	}
	switch strings.ToLower(kind) {
	case "podgroup", "podgroups", "pg", "podgroups.scheduling.volcano.sh":
		if pg := find(name); pg != nil {
			return pg, nil
		}
		return nil, fmt.Errorf("PodGroup %s/%s not found", ns, name)
	case "job", "jobs", "vcjob", "vcjobs", "jobs.batch.volcano.sh":
		job, err := c.Volcano.BatchV1alpha1().Jobs(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return nil, fmt.Errorf("Volcano Job %s/%s: %w", ns, name, err)
		}
		if pg := find(name + "-" + string(job.UID)); pg != nil {
			return pg, nil
		}
		if pg := ownedBy("Job", name); pg != nil {
			return pg, nil
		}
		return nil, fmt.Errorf("Volcano Job %s/%s has no PodGroup yet (want %s-%s; is vc-controller-manager running?)", ns, name, name, job.UID)
	case "pytorchjob", "pytorchjobs", "pytorchjobs.kubeflow.org":
		if _, err := c.Dynamic.Resource(pytorchJobs).Namespace(ns).Get(ctx, name, metav1.GetOptions{}); err != nil {
			if apierrors.IsNotFound(err) {
				return nil, fmt.Errorf("PyTorchJob %s/%s not found", ns, name)
			}
			return nil, fmt.Errorf("PyTorchJob %s/%s: %w", ns, name, err)
		}
		if pg := find(name); pg != nil {
			return pg, nil
		}
		return nil, fmt.Errorf("PyTorchJob %s/%s has no PodGroup %s yet (is the training operator running with Volcano gang scheduling?)", ns, name, name)
	case "pod", "pods", "po":
		pod, err := c.Kube.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return nil, fmt.Errorf("pod %s/%s: %w", ns, name, err)
		}
		group := pod.Annotations[schedulingv1beta1.KubeGroupNameAnnotationKey]
		if pg := find(group); group != "" && pg != nil {
			return pg, nil
		}
		return nil, fmt.Errorf("pod %s/%s belongs to no PodGroup (annotation %s is %q)", ns, name, schedulingv1beta1.KubeGroupNameAnnotationKey, group)
	}
	return nil, Usagef("explain %q: unknown kind %q (want podgroup, job, pytorchjob or pod)", target, kind)
}

// readVolcanoJob reads into the snapshot the task order of the Volcano Job
// whose pods the gang holds (their volcano.sh/job-name), which ranks
// depend on; nothing for a gang of another controller.
func readVolcanoJob(ctx context.Context, c *live.Clients, snap *live.Snapshot, pg *schedulingv1beta1.PodGroup) error {
	bound, pending := snap.PodsOf(pg.Namespace, pg.Name)
	for _, p := range append(bound, pending...) {
		if job := p.Annotations[batchv1alpha1.JobNameKey]; job != "" {
			return snap.FetchJobTasks(ctx, c, pg.Namespace, job)
		}
	}
	return nil
}

// withNextSession puts the scheduler's next session in a waiting gang's
// explanation (Explanation.WithSession), run by kubectl-rdmatopo-simulate;
// when that binary is missing, a note says so and how to install it, and
// the planner's answer for the gang alone stays.
func (o *Options) withNextSession(ctx context.Context, e *explain.Explanation, conf string, snap *live.Snapshot) error {
	if e.State != explain.StateWaiting {
		return nil
	}
	rep, err := o.nextSession(ctx, conf, snap)
	switch {
	case errors.Is(err, errNoSimulateBinary):
		e.Notes = append(e.Notes, fmt.Sprintf("the scheduler's next session (the cluster's conf over every waiting gang, in Volcano's order) is not shown: %s runs it and is not installed; %s. Shown instead: the planner's answer for the gang alone",
			SimulateBinary, installHint))
		return nil
	case err != nil:
		return err
	}
	e.WithSession(rep)
	return nil
}
