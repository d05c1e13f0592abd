// Package simtest runs scenario tests on the simulator: a cluster and its
// jobs are handed to a sim.Simulator running a scheduler conf, and each
// session's binds, evictions, Events, PodGroups and annotation patches are
// collected for the test to check. Volcano's process-wide settings are the
// simulator's (set each cycle as vc-scheduler sets them), so a scenario
// runs what production runs.
package simtest

import (
	"sort"
	"strings"
	"testing"

	"github.com/kubewharf/katalyst-api/pkg/apis/node/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	schedulingv1beta1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"

	"github.com/rdmatopo/rdmatopo/core/ledger"
	"github.com/rdmatopo/rdmatopo/core/placement"
	"github.com/rdmatopo/rdmatopo/core/topology"
	"github.com/rdmatopo/rdmatopo/internal/sim"
	"github.com/rdmatopo/rdmatopo/internal/workload"
)

// Cluster is a scenario's input.
type Cluster struct {
	Nodes []*corev1.Node
	CNRs  []*v1alpha1.CustomNodeResource
	// HyperNodes are read under the rdma-topology argument s1Source:
	// hypernode.
	HyperNodes []*topology.HyperNode
	// Queues are the Queues besides "default" (weight 1, open, which
	// Start always adds).
	Queues          []*schedulingv1beta1.Queue
	PriorityClasses []*schedulingv1.PriorityClass
	PodGroups       []*schedulingv1beta1.PodGroup
	// Pods are pending or bound (spec.nodeName set: they hold their node).
	Pods []*corev1.Pod
	// VolcanoJobTasks maps Volcano Jobs ("namespace/name") to their
	// spec.tasks names, in order.
	VolcanoJobTasks map[string][]string
	// Native maps PodGroups ("namespace/name") to their Volcano ≥ 1.12
	// spec.networkTopology and spec.subGroupPolicy.
	Native map[string]*placement.NativeTopology
}

// Scenario is a simulator running sessions over one cluster; binds,
// evictions, PodGroup status and KCNR releases are written back between
// sessions as the API server and the node agent would.
type Scenario struct {
	t testing.TB
	// Sim is the simulator, for what Scenario does not wrap.
	Sim *sim.Simulator
	// submitted are the PodGroups ("pg:ns/name") and pods ("ns/name")
	// handed to the simulator so far.
	submitted map[string]bool
	// native are the PodGroups' native topology fields (Cluster.Native).
	native map[string]*placement.NativeTopology
}

// Start builds a simulator running the scheduler conf (text) over the
// cluster, with the queue "default" and everything the cluster holds.
func Start(t testing.TB, conf string, c Cluster, opts sim.Options) *Scenario {
	t.Helper()
	parsed, err := sim.ParseConf(conf)
	if err != nil {
		t.Fatalf("scheduler conf: %v", err)
	}
	s, err := sim.New(parsed, &workload.Cluster{Nodes: c.Nodes, CNRs: c.CNRs, HyperNodes: c.HyperNodes}, opts)
	if err != nil {
		t.Fatalf("simulator: %v", err)
	}
	set := &workload.Set{Queues: append([]*schedulingv1beta1.Queue{workload.NewDefaultQueue()}, c.Queues...),
		PriorityClasses: c.PriorityClasses, VolcanoJobTasks: c.VolcanoJobTasks}
	if err := s.Submit(set); err != nil {
		t.Fatalf("submit: %v", err)
	}
	sc := &Scenario{t: t, Sim: s, submitted: map[string]bool{}, native: c.Native}
	sc.Submit(c.PodGroups, c.Pods)
	return sc
}

// Submit hands the simulator those of the PodGroups and pods it does not
// have yet (jobs added since the last session); the others are left as
// the simulator keeps them.
func (sc *Scenario) Submit(podGroups []*schedulingv1beta1.PodGroup, pods []*corev1.Pod) {
	sc.t.Helper()
	set := &workload.Set{Native: sc.native}
	for _, pg := range podGroups {
		if key := "pg:" + pg.Namespace + "/" + pg.Name; !sc.submitted[key] {
			sc.submitted[key] = true
			set.PodGroups = append(set.PodGroups, pg)
		}
	}
	for _, p := range pods {
		if key := p.Namespace + "/" + p.Name; !sc.submitted[key] {
			sc.submitted[key] = true
			set.Pods = append(set.Pods, p)
		}
	}
	if err := sc.Sim.Submit(set); err != nil {
		sc.t.Fatalf("submit: %v", err)
	}
}

// Complete marks bound pods ("namespace/name") Succeeded: they finished
// their work, and their gang is not owed a replacement.
func (sc *Scenario) Complete(pods ...string) {
	sc.t.Helper()
	for _, key := range pods {
		ns, name, _ := strings.Cut(key, "/")
		if err := sc.Sim.CompletePod(ns, name); err != nil {
			sc.t.Fatalf("complete %s: %v", key, err)
		}
	}
}

// Finish deletes pods ("namespace/name"): they leave their nodes and their
// nodes' KCNRs. A pod deleted while its gang runs is a lost pod its gang
// may get a replacement for; Complete is a pod that finished its work.
func (sc *Scenario) Finish(pods ...string) {
	sc.t.Helper()
	for _, key := range pods {
		ns, name, _ := strings.Cut(key, "/")
		if err := sc.Sim.DeletePod(ns, name); err != nil {
			sc.t.Fatalf("finish %s: %v", key, err)
		}
	}
}

// Outcome is what one session did.
type Outcome struct {
	// Binds are the session's binds by pod ("namespace/name").
	Binds Binds
	// Evicted are the pods ("namespace/name", sorted) the session evicted;
	// they are gone before the next session (terminating first, with
	// sim.Options.EvictionGrace).
	Evicted []string
	// Events are the session's Events as "type reason message".
	Events []string
	// PodGroups are every PodGroup ("namespace/name") as the session left
	// it.
	PodGroups map[string]*schedulingv1beta1.PodGroup
	// Patched are the annotations the scheduler patched on pods
	// ("namespace/name") during the session, merged.
	Patched map[string]map[string]string
}

// Binds are binds by pod ("namespace/name"). A job's pods are those of its
// namespace named "<job>-...", as the scenarios name them.
type Binds map[string]*sim.BindRecord

// Count is how many pods of the job bound.
func (b Binds) Count(namespace, job string) int {
	n := 0
	for name := range b {
		if strings.HasPrefix(name, namespace+"/"+job+"-") {
			n++
		}
	}
	return n
}

// Values returns the distinct values of over the binds of the job's pods,
// sorted (nil when there are none).
func (b Binds) Values(namespace, job string, of func(*sim.BindRecord) []string) []string {
	set := map[string]bool{}
	for name, r := range b {
		if strings.HasPrefix(name, namespace+"/"+job+"-") {
			for _, v := range of(r) {
				set[v] = true
			}
		}
	}
	var out []string
	for v := range set {
		out = append(out, v)
	}
	sort.Strings(out)
	return out
}

// Leaves returns the S0s (rdmatopo.io/s0) of the job's bound pods, sorted.
func (b Binds) Leaves(namespace, job string) []string {
	return b.Values(namespace, job, func(r *sim.BindRecord) []string {
		return strings.Split(r.Pod.Annotations[ledger.AnnotationS0], ",")
	})
}

// Nodes returns the nodes of the job's bound pods, sorted.
func (b Binds) Nodes(namespace, job string) []string {
	return b.Values(namespace, job, func(r *sim.BindRecord) []string { return []string{r.Node} })
}

// Session runs one scheduling session (a simulator cycle) and returns what
// it did. Failed binds (the simulator fails none unless a bind hook says
// so) and a broken ledger invariant fail the test.
func (sc *Scenario) Session() *Outcome {
	sc.t.Helper()
	rep, err := sc.Sim.RunCycle()
	if err != nil {
		sc.t.Fatal(err)
	}
	out := &Outcome{Binds: Binds{}, Evicted: append([]string(nil), rep.Evicted...),
		PodGroups: map[string]*schedulingv1beta1.PodGroup{}, Patched: map[string]map[string]string{}}
	sort.Strings(out.Evicted)
	for i := range rep.Binds {
		b := &rep.Binds[i]
		out.Binds[b.Pod.Namespace+"/"+b.Pod.Name] = b
	}
	for _, b := range rep.FailedBinds {
		sc.t.Errorf("bind of %s/%s to %s failed: %v", b.Pod.Namespace, b.Pod.Name, b.Node, b.Err)
	}
	for _, e := range sc.Sim.Events() {
		if e.Cycle == rep.Cycle {
			out.Events = append(out.Events, e.Type+" "+e.Reason+" "+e.Message)
		}
	}
	for _, pg := range sc.Sim.PodGroups() {
		out.PodGroups[pg.Namespace+"/"+pg.Name] = pg
	}
	for _, p := range rep.Patches {
		if out.Patched[p.Pod] == nil {
			out.Patched[p.Pod] = map[string]string{}
		}
		for k, v := range p.Annotations {
			out.Patched[p.Pod][k] = v
		}
	}
	if err := sc.Sim.Ledger().CheckInvariants(); err != nil {
		sc.t.Errorf("ledger invariants after cycle %d: %v", rep.Cycle, err)
	}
	return out
}
