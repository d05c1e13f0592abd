package topologypreempt_test

import (
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/kubewharf/katalyst-api/pkg/apis/node/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	schedulingv1beta1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"
	_ "volcano.sh/volcano/pkg/scheduler/actions"
	_ "volcano.sh/volcano/pkg/scheduler/plugins"

	_ "github.com/rdmatopo/rdmatopo/actions/topologyallocate"
	"github.com/rdmatopo/rdmatopo/actions/topologypreempt"
	_ "github.com/rdmatopo/rdmatopo/actions/topologyreclaim"
	"github.com/rdmatopo/rdmatopo/config"
	"github.com/rdmatopo/rdmatopo/core/ledger"
	"github.com/rdmatopo/rdmatopo/core/preemption"
	"github.com/rdmatopo/rdmatopo/internal/sim"
	"github.com/rdmatopo/rdmatopo/internal/sim/simtest"
	"github.com/rdmatopo/rdmatopo/internal/testing/builders"
	"github.com/rdmatopo/rdmatopo/internal/workload"
)

var optionsOnce sync.Once

// Priority classes of the scenarios.
var priorityClasses = []*schedulingv1.PriorityClass{
	{ObjectMeta: metav1.ObjectMeta{Name: "low"}, Value: 10},
	{ObjectMeta: metav1.ObjectMeta{Name: "high"}, Value: 1000},
	{ObjectMeta: metav1.ObjectMeta{Name: "top"}, Value: 2000},
}

// epoch is when the scenarios' running pods were created (plus their index
// in minutes: later pods are younger).
var epoch = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)

// cluster is a scenario's input.
type cluster struct {
	nodes []*corev1.Node
	// cnrs build each node's KCNR afresh; uses are added per session.
	cnrs []func() *builders.CNRWrapper
	// uses are what the KCNRs list for running pods.
	uses []use
	pods []*corev1.Pod
	pgs  []*schedulingv1beta1.PodGroup
	// queues are the Queues besides "default".
	queues []*schedulingv1beta1.Queue
	// created counts running pods, for their creation times.
	created int
}

// addNode adds a provider-shaped node (2 NUMA zones of 4 GPUs and 2 NICs)
// whose NUMA-0 NICs go to leaf0 and NUMA-1 NICs to leaf1.
func (c *cluster) addNode(name, leaf0, leaf1 string) {
	c.nodes = append(c.nodes, builders.ProviderNode(name).
		Resource("pods", "110").Resource("memory", "512Gi").Obj())
	c.cnrs = append(c.cnrs, func() *builders.CNRWrapper {
		return builders.ProviderCNR(name, leaf0, leaf1)
	})
}

// use is a running pod as its node's KCNR lists it: its NUMA zone's GPUs
// and CPUs and the zone's two NICs.
type use struct {
	pod  *corev1.Pod
	numa int
}

// kcnrs returns the cluster's KCNRs, listing every use of a pod still in
// the cluster.
func (c *cluster) kcnrs() []*v1alpha1.CustomNodeResource {
	live := map[*corev1.Pod]bool{}
	for _, p := range c.pods {
		live[p] = true
	}
	out := make([]*v1alpha1.CustomNodeResource, 0, len(c.cnrs))
	for i, build := range c.cnrs {
		w := build()
		for _, u := range c.uses {
			if !live[u.pod] || u.pod.Spec.NodeName != c.nodes[i].Name {
				continue
			}
			consumer := builders.Consumer(u.pod.Namespace, u.pod.Name, string(u.pod.UID))
			w.Alloc(u.numa, consumer, corev1.ResourceList{builders.GPUResource: resource.MustParse("4"), "cpu": resource.MustParse("4")})
			for _, nic := range builders.NUMANICs[u.numa] {
				w.UseNIC(nic, consumer)
			}
		}
		out = append(out, w.Obj())
	}
	return out
}

// eightNodes adds n1..n4 (NUMA 0 on leaf A, NUMA 1 on B) and n5..n8 (C, D).
func (c *cluster) eightNodes() {
	for i := 1; i <= 4; i++ {
		c.addNode(fmt.Sprintf("n%d", i), "A", "B")
	}
	for i := 5; i <= 8; i++ {
		c.addNode(fmt.Sprintf("n%d", i), "C", "D")
	}
}

// podGroup adds a PodGroup in queue "default".
func (c *cluster) podGroup(name, class string, minMember int, phase schedulingv1beta1.PodGroupPhase, ann map[string]string) {
	c.pgs = append(c.pgs, builders.MakePodGroup("ns", name).MinMember(int32(minMember)).PriorityClass(class).
		Phase(phase).Annotations(ann).Obj())
}

// addQueue adds an open Queue of weight 1; reclaimable false keeps other
// queues from reclaiming its pods.
func (c *cluster) addQueue(name string, reclaimable bool) {
	c.queues = append(c.queues, workload.NewQueue(name, 1, reclaimable))
}

// inQueue moves the jobs' PodGroups to a queue.
func (c *cluster) inQueue(queue string, jobs ...string) {
	for _, pg := range c.pgs {
		for _, j := range jobs {
			if pg.Name == j {
				pg.Spec.Queue = queue
			}
		}
	}
}

// setMeta sets key to value in the labels (label true) or the annotations
// of an object.
func setMeta(meta *metav1.ObjectMeta, label bool, key, value string) {
	m := &meta.Annotations
	if label {
		m = &meta.Labels
	}
	if *m == nil {
		*m = map[string]string{}
	}
	(*m)[key] = value
}

// podMeta sets an annotation (label false) or a label on every pod of a
// job.
func (c *cluster) podMeta(job string, label bool, key, value string) {
	for _, p := range c.pods {
		if strings.HasPrefix(p.Name, job+"-") {
			setMeta(&p.ObjectMeta, label, key, value)
		}
	}
}

// podGroupMeta sets an annotation (label false) or a label on a job's
// PodGroup.
func (c *cluster) podGroupMeta(job string, label bool, key, value string) {
	for _, pg := range c.pgs {
		if pg.Name == job {
			setMeta(&pg.ObjectMeta, label, key, value)
		}
	}
}

// slot is a NUMA zone of a node, where a running pod sits.
type slot struct {
	node string
	numa int
}

// addRunning adds a running job of priority class class: one pod of 4 GPUs
// and 2 NICs per slot, holding the slot's NICs (annotated as the scheduler
// binds them, not yet in the KCNR), minMember minMember.
func (c *cluster) addRunning(name, class string, minMember int, slots ...slot) {
	c.podGroup(name, class, minMember, schedulingv1beta1.PodGroupRunning, nil)
	for i, s := range slots {
		p := c.runningPod(name, i, s).
			Annotation(ledger.AnnotationNICs, builders.NUMANICs[s.numa][0]+","+builders.NUMANICs[s.numa][1]).
			Annotation(ledger.AnnotationNUMA, fmt.Sprint(s.numa)).Obj()
		c.pods = append(c.pods, p)
	}
}

// addListed adds a running job like addRunning whose pods carry no
// rdmatopo.io annotations (placed before rdmatopo ran, or by another
// scheduler): only their nodes' KCNRs list them, on the slot's NICs.
func (c *cluster) addListed(name, class string, minMember int, slots ...slot) {
	c.podGroup(name, class, minMember, schedulingv1beta1.PodGroupRunning, nil)
	for i, s := range slots {
		p := c.runningPod(name, i, s).Obj()
		c.pods = append(c.pods, p)
		c.uses = append(c.uses, use{pod: p, numa: s.numa})
	}
}

// runningPod starts the i-th pod of a running job on slot s, younger than
// every running pod added before it.
func (c *cluster) runningPod(job string, i int, s slot) *builders.PodWrapper {
	w := builders.MakePod("ns", fmt.Sprintf("%s-%d", job, i)).Node(s.node).Group(job).
		Req(builders.GPUResource, "4").Req(builders.RDMAResource, "2").Req("cpu", "4").Req("memory", "8Gi").
		Created(epoch.Add(time.Duration(c.created) * time.Minute)).SchedulerName("volcano")
	c.created++
	return w
}

// podPriority sets the pods' own priority (spec.priority) on a job.
func (c *cluster) podPriority(job string, prio int32) {
	for _, p := range c.pods {
		if strings.HasPrefix(p.Name, job+"-") {
			p.Spec.Priority = &prio
		}
	}
}

// addPending adds a pending gang of n pods of 4 GPUs and 2 NICs.
func (c *cluster) addPending(name, class string, n int, ann map[string]string) {
	c.podGroup(name, class, n, schedulingv1beta1.PodGroupInqueue, ann)
	for i := 0; i < n; i++ {
		c.pods = append(c.pods, builders.MakePod("ns", fmt.Sprintf("%s-%d", name, i)).Group(name).
			Req(builders.GPUResource, "4").Req(builders.RDMAResource, "2").Req("cpu", "4").Req("memory", "8Gi").
			SchedulerName("volcano").Obj())
	}
}

// run is a scenario on the simulator: sessions of the project's conf one
// after another over one cluster, whose binds, evictions, PodGroup status
// and KCNRs are written back between them as the API server and the node
// agent would.
type run struct {
	c  *cluster
	sc *simtest.Scenario
}

// start builds a simulator over the cluster as it is: its nodes, KCNRs,
// queues, priority classes, PodGroups and pods.
func start(t *testing.T, c *cluster) *run {
	t.Helper()
	return startWith(t, c, sim.Options{})
}

// startWith is start with simulator options.
func startWith(t *testing.T, c *cluster, opts sim.Options) *run {
	t.Helper()
	return &run{c: c, sc: simtest.Start(t, config.SchedulerConf, simtest.Cluster{Nodes: c.nodes, CNRs: c.kcnrs(),
		Queues: c.queues, PriorityClasses: priorityClasses, PodGroups: c.pgs, Pods: c.pods}, opts)}
}

// finish deletes pods ("ns/name") that finished: they leave their nodes
// and their nodes' KCNRs.
func (r *run) finish(pods ...string) { r.sc.Finish(pods...) }

// outcome is what one session produced.
type outcome struct {
	binds simtest.Binds // ns/name -> bind
	// evicted are the pods (ns/name, sorted) the session evicted; they are
	// gone before the next one (terminating first, with an eviction
	// grace).
	evicted []string
	// events are the session's Events as "type reason message".
	events []string
}

// session runs one scheduling session over the cluster, with the jobs
// added to it since the last one.
func (r *run) session() *outcome {
	r.sc.Submit(r.c.pgs, r.c.pods)
	o := r.sc.Session()
	return &outcome{binds: o.Binds, evicted: o.Evicted, events: o.Events}
}

func pods(job string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("ns/%s-%d", job, i)
	}
	return out
}

func sorted(s ...[]string) []string {
	var out []string
	for _, x := range s {
		out = append(out, x...)
	}
	sort.Strings(out)
	return out
}

// softGangFitsNowhere fills the eight nodes: "old" (low, n1 and n2),
// "hx" (high, n3 to n7) and "young" (low, n8, the youngest), with a pending
// soft high gang "soft" of 2 pods that fits nowhere.
func softGangFitsNowhere(c *cluster) {
	c.eightNodes()
	c.addRunning("old", "low", 1, slot{"n1", 0}, slot{"n1", 1}, slot{"n2", 0}, slot{"n2", 1})
	c.addRunning("hx", "high", 1, slot{"n3", 0}, slot{"n3", 1}, slot{"n4", 0}, slot{"n4", 1},
		slot{"n5", 0}, slot{"n5", 1}, slot{"n6", 0}, slot{"n6", 1}, slot{"n7", 0}, slot{"n7", 1})
	c.addRunning("young", "low", 1, slot{"n8", 0}, slot{"n8", 1})
	c.addPending("soft", "high", 2, nil)
}

// fewestEvictions: leaf A holds a gang of four, B two single pods and two
// free slots, C one pod of a gang of three whose other pods are on D, D
// the rest at the preemptor's priority; a hard-s0 gang of 4 waits.
func fewestEvictions(c *cluster) {
	c.eightNodes()
	// A: one gang of four (4 evictions).
	c.addRunning("wa", "low", 4, slot{"n1", 0}, slot{"n2", 0}, slot{"n3", 0}, slot{"n4", 0})
	// B: two single pods, two free slots (2 evictions).
	c.addRunning("sb1", "low", 1, slot{"n1", 1})
	c.addRunning("sb2", "low", 1, slot{"n2", 1})
	// C: one pod of a gang of three, three free slots (the whole
	// gang: 3 evictions).
	c.addRunning("wc", "low", 3, slot{"n5", 0}, slot{"n5", 1}, slot{"n6", 1})
	// D: the rest held at the preemptor's priority.
	c.addRunning("hd", "high", 1, slot{"n7", 1}, slot{"n8", 1})
	c.addPending("big", "high", 4, hardS0)
}

var hardS0 = map[string]string{ledger.AnnotationMode: "hard", ledger.AnnotationHighestTier: "s0"}

func TestPreemptionScenarios(t *testing.T) {
	cases := map[string]struct {
		build func(c *cluster)
		// wantEvicted are the pods evicted in the first session.
		wantEvicted []string
		// wantBound and wantLeaves: the preemptor's pods bound and their
		// leaves, in the first session, or in the second when victims were
		// evicted (they are gone by then).
		preemptor  string
		wantBound  int
		wantLeaves []string
	}{
		"hard-s0 gang frees the leaf of fewest evictions, whole victim gangs counted": {
			build:       fewestEvictions,
			wantEvicted: sorted(pods("sb1", 1), pods("sb2", 1)),
			preemptor:   "big", wantBound: 4, wantLeaves: []string{"B"},
		},
		"a pod with volcano.sh/preemptable false is never a victim": {
			build: func(c *cluster) {
				fewestEvictions(c)
				c.podMeta("sb1", false, schedulingv1beta1.PodPreemptable, "false")
			},
			// B is out: the whole gang of three on C goes instead.
			wantEvicted: pods("wc", 3),
			preemptor:   "big", wantBound: 4, wantLeaves: []string{"C"},
		},
		"pods labelled preemptable false and PodGroups saying so are never victims": {
			build: func(c *cluster) {
				fewestEvictions(c)
				c.podMeta("sb1", true, schedulingv1beta1.PodPreemptable, "false")
				c.podGroupMeta("wc", false, schedulingv1beta1.PodPreemptable, "false")
			},
			wantEvicted: pods("wa", 4),
			preemptor:   "big", wantBound: 4, wantLeaves: []string{"A"},
		},
		"a PodGroup labelled preemptable false is never a victim; one saying true is": {
			build: func(c *cluster) {
				fewestEvictions(c)
				c.podGroupMeta("sb1", true, schedulingv1beta1.PodPreemptable, "false")
				c.podGroupMeta("wc", false, schedulingv1beta1.PodPreemptable, "true")
			},
			wantEvicted: pods("wc", 3),
			preemptor:   "big", wantBound: 4, wantLeaves: []string{"C"},
		},
		"low pods of another queue are not preempted": {
			build: func(c *cluster) {
				fewestEvictions(c)
				c.addQueue("other", false)
				c.inQueue("other", "sb1", "sb2", "wc")
			},
			wantEvicted: pods("wa", 4),
			preemptor:   "big", wantBound: 4, wantLeaves: []string{"A"},
		},
		"every node carries the GPU taint and every pod tolerates it": {
			build: func(c *cluster) {
				c.eightNodes()
				c.addRunning("sb1", "low", 1, slot{"n1", 1})
				c.addRunning("sb2", "low", 1, slot{"n2", 1})
				c.addRunning("ha", "high", 1, slot{"n1", 0})
				c.addRunning("hc", "high", 1, slot{"n5", 0}, slot{"n5", 1})
				c.addPending("big", "high", 4, hardS0)
				taint := corev1.Taint{Key: "nvidia.com/gpu", Value: "present", Effect: corev1.TaintEffectNoSchedule}
				for _, n := range c.nodes {
					n.Spec.Taints = []corev1.Taint{taint}
				}
				for _, p := range c.pods {
					p.Spec.Tolerations = []corev1.Toleration{{Key: "nvidia.com/gpu", Operator: corev1.TolerationOpExists,
						Effect: corev1.TaintEffectNoSchedule}}
				}
			},
			wantEvicted: sorted(pods("sb1", 1), pods("sb2", 1)),
			preemptor:   "big", wantBound: 4, wantLeaves: []string{"B"},
		},
		"a gang that cannot fit after every allowed eviction evicts nothing": {
			build: func(c *cluster) {
				c.eightNodes()
				c.addRunning("wa", "low", 4, slot{"n1", 0}, slot{"n2", 0}, slot{"n3", 0}, slot{"n4", 0})
				c.addRunning("sb", "low", 1, slot{"n1", 1})
				// No leaf holds five pods.
				c.addPending("huge", "high", 5, hardS0)
			},
			preemptor: "huge",
		},
		"a leaf blocked only by equal or higher priority pods is not freed": {
			build: func(c *cluster) {
				c.eightNodes()
				// Leaves A and B: one pod of the preemptor's priority each,
				// then low pods; C: a higher class; D: low pods whose own
				// priority is the preemptor's.
				c.addRunning("peer", "high", 1, slot{"n1", 0}, slot{"n1", 1})
				c.addRunning("la", "low", 1, slot{"n2", 0}, slot{"n3", 1})
				c.addRunning("topc", "top", 1, slot{"n5", 0})
				c.addRunning("ld", "low", 1, slot{"n6", 1}, slot{"n7", 1}, slot{"n8", 1})
				c.podPriority("ld", 1000)
				c.addPending("big", "high", 4, hardS0)
			},
			preemptor: "big",
		},
		"equal or higher priority pods are never evicted; low ones elsewhere are": {
			build: func(c *cluster) {
				c.eightNodes()
				c.addRunning("peer", "high", 1, slot{"n1", 0}, slot{"n1", 1})
				c.addRunning("topc", "top", 1, slot{"n5", 0})
				c.addRunning("ld", "low", 1, slot{"n5", 1}, slot{"n6", 1}, slot{"n7", 1}, slot{"n8", 1})
				c.addRunning("la", "low", 1, slot{"n2", 0}, slot{"n3", 0}, slot{"n4", 0})
				c.addPending("big", "high", 4, hardS0)
			},
			// A needs peer-0 (equal priority): D's four low pods go instead
			// of A's three.
			wantEvicted: pods("ld", 4),
			preemptor:   "big", wantBound: 4, wantLeaves: []string{"D"},
		},
		"a soft gang that fits somewhere does not preempt": {
			build: func(c *cluster) {
				c.eightNodes()
				c.addRunning("la", "low", 1, slot{"n1", 0}, slot{"n2", 0}, slot{"n3", 1}, slot{"n4", 1},
					slot{"n5", 0}, slot{"n6", 0}, slot{"n7", 1}, slot{"n8", 1})
				c.addPending("soft", "high", 4, nil)
			},
			preemptor: "soft", wantBound: 4,
		},
		"a victim gang that would fall below minMember is evicted whole": {
			build: func(c *cluster) {
				c.eightNodes()
				// Two pods of a six-pod gang on A, two free slots there;
				// every other leaf keeps a pod of the preemptor's priority.
				c.addRunning("w6", "low", 6, slot{"n1", 0}, slot{"n2", 0},
					slot{"n3", 1}, slot{"n6", 1}, slot{"n7", 1}, slot{"n8", 1})
				c.addRunning("hb", "high", 1, slot{"n1", 1})
				c.addRunning("hc", "high", 1, slot{"n5", 0})
				c.addRunning("hd", "high", 1, slot{"n5", 1})
				c.addPending("big", "high", 4, hardS0)
			},
			wantEvicted: pods("w6", 6),
			preemptor:   "big", wantBound: 4, wantLeaves: []string{"A"},
		},
		"a victim gang above minMember loses only pods beyond it": {
			build: func(c *cluster) {
				c.eightNodes()
				c.addRunning("w6", "low", 4, slot{"n1", 0}, slot{"n2", 0},
					slot{"n3", 1}, slot{"n6", 1}, slot{"n7", 1}, slot{"n8", 1})
				c.addRunning("hb", "high", 1, slot{"n1", 1})
				c.addRunning("hc", "high", 1, slot{"n5", 0})
				c.addRunning("hd", "high", 1, slot{"n5", 1})
				c.addPending("big", "high", 4, hardS0)
			},
			wantEvicted: pods("w6", 2),
			preemptor:   "big", wantBound: 4, wantLeaves: []string{"A"},
		},
		"a soft gang that fits nowhere preempts the cheapest pods": {
			build: softGangFitsNowhere,
			// Two pods of one node are the tightest, and the youngest go.
			wantEvicted: pods("young", 2),
			preemptor:   "soft", wantBound: 2, wantLeaves: []string{"C", "D"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			c := &cluster{}
			tc.build(c)
			r := start(t, c)
			o := r.session()
			if diff := cmp.Diff(tc.wantEvicted, o.evicted); diff != "" {
				t.Errorf("evicted (-want,+got):\n%s", diff)
			}
			if len(o.evicted) > 0 {
				if got := o.binds.Count("ns", tc.preemptor); got != 0 {
					t.Errorf("preemptor bound %d pods while its victims terminate, want 0", got)
				}
				checkEvents(t, o, tc.preemptor)
				// The victims are gone: the gang binds where it was held.
				o = r.session()
				if len(o.evicted) > 0 {
					t.Errorf("second session evicted %v, want none", o.evicted)
				}
			}
			if got := o.binds.Count("ns", tc.preemptor); got != tc.wantBound {
				t.Errorf("preemptor: %d pods bound, want %d", got, tc.wantBound)
			}
			if tc.wantLeaves != nil {
				if diff := cmp.Diff(tc.wantLeaves, o.binds.Leaves("ns", tc.preemptor)); diff != "" {
					t.Errorf("preemptor leaves (-want,+got):\n%s", diff)
				}
			}
		})
	}
}

// checkEvents checks the PodGroup Events naming preemptor and victims.
func checkEvents(t *testing.T, o *outcome, preemptor string) {
	t.Helper()
	checkEventsOf(t, o, preemptor, topologypreempt.ReasonPreempting, topologypreempt.ReasonPreempted)
}

// checkEventsOf checks one Event of reason acting on the gang's PodGroup
// and at least one of reason victim, each naming the gang.
func checkEventsOf(t *testing.T, o *outcome, preemptor, acting, victim string) {
	t.Helper()
	var preempting, preempted int
	for _, e := range o.events {
		switch {
		case strings.Contains(e, acting):
			preempting++
		case strings.Contains(e, victim):
			preempted++
			if !strings.Contains(e, "ns/"+preemptor) {
				t.Errorf("victim Event does not name the preemptor: %s", e)
			}
		}
	}
	if preempting != 1 || preempted == 0 {
		t.Errorf("events: %d %s, %d %s; want 1 and at least 1:\n%s", preempting, acting,
			preempted, victim, strings.Join(o.events, "\n"))
	}
}

// createdAt sets a PodGroup's creation time (minutes after epoch).
func (c *cluster) createdAt(name string, minutes int) {
	for _, pg := range c.pgs {
		if pg.Name == name {
			pg.CreationTimestamp = metav1.NewTime(epoch.Add(time.Duration(minutes) * time.Minute))
		}
	}
}

// TestClaimedRoom: a hard-s0 gang that no evictions place (every leaf holds
// a pod of its priority) claims the leaf with the fewest such pods. From
// the next session a younger gang of its priority, which fits that leaf's
// free slots, is kept out of it, while a lower-priority job may still use
// it. Once the blocker finishes, the claiming gang evicts the low job and
// binds in its leaf, ahead of the younger gang.
func TestClaimedRoom(t *testing.T) {
	c := &cluster{}
	c.eightNodes()
	c.addRunning("peera", "high", 1, slot{"n1", 0})
	c.addRunning("peerb", "high", 1, slot{"n1", 1}, slot{"n2", 1}, slot{"n3", 1}, slot{"n4", 1})
	c.addRunning("peerc", "high", 1, slot{"n5", 0}, slot{"n6", 0}, slot{"n7", 0}, slot{"n8", 0})
	c.addRunning("peerd", "high", 1, slot{"n5", 1}, slot{"n6", 1}, slot{"n7", 1}, slot{"n8", 1})
	c.addPending("old", "high", 4, hardS0)
	c.createdAt("old", 100)
	r := start(t, c)

	o := r.session()
	if len(o.evicted) > 0 || o.binds.Count("ns", "old") > 0 {
		t.Fatalf("session 1: evicted %v, old bound %d; want nothing (no eviction places it)", o.evicted, o.binds.Count("ns", "old"))
	}

	// A younger gang of the same priority fits leaf A's three free slots;
	// a low job of one pod fits anywhere there is room.
	c.addPending("young", "high", 3, hardS0)
	c.createdAt("young", 101)
	c.addPending("lowjob", "low", 1, nil)
	c.createdAt("lowjob", 102)
	o = r.session()
	if got := o.binds.Count("ns", "young"); got != 0 {
		t.Errorf("session 2: young bound %d pods in the leaf old claims, want 0", got)
	}
	if got := o.binds.Leaves("ns", "lowjob"); !cmp.Equal(got, []string{"A"}) {
		t.Fatalf("session 2: lowjob on leaves %v, want [A] (lower priority may use a claimed leaf)", got)
	}

	// peera finishes: old fits A once lowjob is evicted, and takes it.
	r.finish("ns/peera-0")
	o = r.session()
	if diff := cmp.Diff(pods("lowjob", 1), o.evicted); diff != "" {
		t.Fatalf("session 3 evicted (-want,+got):\n%s", diff)
	}
	if got := o.binds.Count("ns", "young"); got != 0 {
		t.Errorf("session 3: young bound %d pods, want 0", got)
	}
	// lowjob is gone.
	o = r.session()
	if got := o.binds.Count("ns", "old"); got != 4 {
		t.Fatalf("session 4: old bound %d pods, want 4", got)
	}
	if got := o.binds.Leaves("ns", "old"); !cmp.Equal(got, []string{"A"}) {
		t.Errorf("session 4: old on leaves %v, want [A]", got)
	}
	if got := o.binds.Count("ns", "young"); got != 0 {
		t.Errorf("session 4: young bound %d pods, want 0", got)
	}
}

// claimedLeafA is one leaf, A, of four slots (n1 and n2, both NUMA
// zones' NICs under A). peera, of priority high, holds one slot (listed
// only by n1's KCNR); old (hard-s0, four pods, created at minute 100)
// waits for it, and its first session claims leaf A. young, of the same
// priority and younger, fits the three free slots.
func claimedLeafA(t *testing.T) (*cluster, *run) {
	t.Helper()
	c := &cluster{}
	c.addNode("n1", "A", "A")
	c.addNode("n2", "A", "A")
	c.addListed("peera", "high", 1, slot{"n1", 0})
	c.addPending("old", "high", 4, hardS0)
	c.createdAt("old", 100)
	r := start(t, c)
	if o := r.session(); len(o.evicted) > 0 || o.binds.Count("ns", "old") > 0 {
		t.Fatalf("session 1: evicted %v, old bound %d; want nothing (no eviction places it)", o.evicted, o.binds.Count("ns", "old"))
	}
	c.addPending("young", "high", 3, hardS0)
	c.createdAt("young", 101)
	return c, r
}

// TestClaimSurvivesRestart: the scheduler restarts while old's claim on
// leaf A keeps young out; the new process's first session, whose
// topology-allocate runs before topology-preempt names any claim, keeps
// young out too, as do the next ones.
func TestClaimSurvivesRestart(t *testing.T) {
	_, r := claimedLeafA(t)
	if o := r.session(); o.binds.Count("ns", "young") != 0 {
		t.Fatalf("session 2: young bound %d pods in the leaf old claims, want 0", o.binds.Count("ns", "young"))
	}
	r.sc.Sim.Restart()
	for i := 3; i <= 5; i++ {
		if o := r.session(); o.binds.Count("ns", "young") != 0 {
			t.Fatalf("session %d, after the restart: young bound %d pods in the leaf old claims, want 0", i, o.binds.Count("ns", "young"))
		}
	}
}

// TestClaimGraceWhileANodeAgentLags: peera finishes, but n1's KCNR still
// lists it (its node agent has not reported yet), so old fits no room and
// claims none. Its claim on leaf A lasts preemption.ClaimGrace from its
// last renewal: young stays out meanwhile, and once the grace is over
// with the KCNR still stale, the claim lapses and young may use the leaf.
func TestClaimGraceWhileANodeAgentLags(t *testing.T) {
	c, r := claimedLeafA(t)
	if o := r.session(); o.binds.Count("ns", "young") != 0 {
		t.Fatalf("session 2: young bound %d pods in the leaf old claims, want 0", o.binds.Count("ns", "young"))
	}
	stale := c.kcnrs()[0] // n1's, listing peera
	r.finish("ns/peera-0")
	r.sc.Sim.UpsertCNR(stale)
	start := r.sc.Sim.Now()
	// At least three sessions, however short the grace.
	for i := 0; i < 3 || r.sc.Sim.Now().Sub(start) < preemption.ClaimGrace-2*r.sc.Sim.Period(); i++ {
		if o := r.session(); o.binds.Count("ns", "young") != 0 || o.binds.Count("ns", "old") != 0 {
			t.Fatalf("%v after peera finished: young bound %d, old %d; want both waiting (old's claim holds for its grace)",
				r.sc.Sim.Now().Sub(start), o.binds.Count("ns", "young"), o.binds.Count("ns", "old"))
		}
	}
	placed := false
	for i := 0; i < 10 && !placed; i++ {
		o := r.session()
		placed = o.binds.Count("ns", "young") == 3
	}
	if !placed {
		t.Fatalf("young not placed in the 10 sessions after old's claim outlived its grace")
	}
}

// TestClaimedNodeRoom: on nodes whose NICs all hang off one leaf of their
// own, a hard node-tier gang that no eviction places claims a node room; a
// younger gang of its priority is kept off that node while it has room
// elsewhere, and the claiming gang binds there once the node frees. (On
// topology-unknown NICs, each a leaf of its own, a pod of two NICs is
// never at the node tier.)
func TestClaimedNodeRoom(t *testing.T) {
	hardNode := map[string]string{ledger.AnnotationMode: "hard", ledger.AnnotationHighestTier: "node"}
	c := &cluster{}
	for _, n := range []string{"u1", "u2", "u3"} {
		c.addNode(n, "L-"+n, "L-"+n)
	}
	c.addRunning("peera", "high", 1, slot{"u1", 0})
	c.addRunning("peerb", "high", 1, slot{"u2", 1})
	c.addRunning("peerc", "high", 1, slot{"u3", 0})
	c.addPending("old", "high", 2, hardNode)
	c.createdAt("old", 100)
	r := start(t, c)

	o := r.session()
	if len(o.evicted) > 0 || o.binds.Count("ns", "old") > 0 {
		t.Fatalf("session 1: evicted %v, old bound %d; want nothing (no node has two free zones)", o.evicted, o.binds.Count("ns", "old"))
	}

	// Two younger one-pod gangs of the same priority: each fits a free
	// zone of any node, and neither goes to the node old claims (u1, the
	// first of the equally blocked nodes).
	for _, name := range []string{"young1", "young2"} {
		c.addPending(name, "high", 1, hardNode)
		c.createdAt(name, 101)
	}
	o = r.session()
	for _, name := range []string{"young1", "young2"} {
		if got := o.binds.Nodes("ns", name); len(got) != 1 || got[0] == "u1" {
			t.Errorf("session 2: %s on nodes %v, want one node other than u1", name, got)
		}
	}

	// peera finishes: old takes u1.
	r.finish("ns/peera-0")
	o = r.session()
	if got := o.binds.Nodes("ns", "old"); !cmp.Equal(got, []string{"u1"}) || o.binds.Count("ns", "old") != 2 {
		t.Errorf("session 3: old bound %d pods on %v, want 2 on [u1]", o.binds.Count("ns", "old"), got)
	}
	if len(o.evicted) > 0 {
		t.Errorf("session 3: evicted %v, want nothing", o.evicted)
	}
}

// TestUnannotatedVictims: running pods that carry no rdmatopo.io
// annotations (placed before rdmatopo was installed), known only from their
// nodes' KCNRs, are victims like any other. Leaf A and C each keep a pod of
// the preemptor's priority; B and D each hold two low single-pod jobs, B's
// the younger: the hard-s0 gang evicts B's two and binds there.
func TestUnannotatedVictims(t *testing.T) {
	c := &cluster{}
	c.eightNodes()
	c.addListed("ld1", "low", 1, slot{"n7", 1})
	c.addListed("ld2", "low", 1, slot{"n8", 1})
	c.addListed("sb1", "low", 1, slot{"n1", 1})
	c.addListed("sb2", "low", 1, slot{"n2", 1})
	c.addListed("peer", "high", 1, slot{"n1", 0})
	c.addListed("hc", "high", 1, slot{"n5", 0})
	c.addPending("big", "high", 4, hardS0)
	r := start(t, c)

	o := r.session()
	if diff := cmp.Diff(sorted(pods("sb1", 1), pods("sb2", 1)), o.evicted); diff != "" {
		t.Fatalf("evicted (-want,+got):\n%s", diff)
	}
	checkEvents(t, o, "big")
	// The victims are gone, from their nodes' KCNRs too.
	o = r.session()
	if len(o.evicted) > 0 {
		t.Errorf("second session evicted %v, want none", o.evicted)
	}
	if got := o.binds.Count("ns", "big"); got != 4 {
		t.Fatalf("big: %d pods bound, want 4", got)
	}
	if diff := cmp.Diff([]string{"B"}, o.binds.Leaves("ns", "big")); diff != "" {
		t.Errorf("big leaves (-want,+got):\n%s", diff)
	}
}

// TestClaimedNodesFollowTheJob: a job without RDMA, younger than a gang
// that claims leaf A's nodes and of its priority, is kept off those nodes
// only while it has no pod placed. Its first pod goes elsewhere; its
// second, which only the claimed nodes can hold, may then go there in the
// same session (a job with pods placed is kept out of nothing).
func TestClaimedNodesFollowTheJob(t *testing.T) {
	c := &cluster{}
	c.eightNodes()
	c.addRunning("peera", "high", 1, slot{"n1", 0})
	c.addRunning("peerb", "high", 1, slot{"n1", 1}, slot{"n2", 1}, slot{"n3", 1}, slot{"n4", 1})
	c.addRunning("peerc", "high", 1, slot{"n5", 0}, slot{"n6", 0}, slot{"n7", 0}, slot{"n8", 0})
	c.addRunning("peerd", "high", 1, slot{"n5", 1}, slot{"n6", 1}, slot{"n7", 1}, slot{"n8", 1})
	// n5..n8 keep 20 CPUs free.
	c.podGroup("fill", "high", 1, schedulingv1beta1.PodGroupRunning, nil)
	for i, n := range []string{"n5", "n6", "n7", "n8"} {
		c.pods = append(c.pods, builders.MakePod("ns", fmt.Sprintf("fill-%d", i)).Node(n).Group("fill").
			Req("cpu", "100").SchedulerName("volcano").Obj())
	}
	c.addPending("old", "high", 4, hardS0)
	c.createdAt("old", 100)
	r := start(t, c)
	if o := r.session(); len(o.evicted) > 0 || o.binds.Count("ns", "old") > 0 {
		t.Fatalf("session 1: evicted %v, old bound %d; want nothing", o.evicted, o.binds.Count("ns", "old"))
	}

	// cpu-0 fits anywhere with 10 CPUs free, cpu-1 only on n1..n4.
	c.podGroup("cpu", "high", 1, schedulingv1beta1.PodGroupInqueue, nil)
	c.createdAt("cpu", 101)
	for i, req := range []string{"10", "110"} {
		c.pods = append(c.pods, builders.MakePod("ns", fmt.Sprintf("cpu-%d", i)).Group("cpu").Req("cpu", req).
			Created(epoch.Add(time.Duration(i)*time.Minute)).SchedulerName("volcano").Obj())
	}
	o := r.session()
	first, second := o.binds["ns/cpu-0"], o.binds["ns/cpu-1"]
	if first == nil || second == nil {
		t.Fatalf("session 2: cpu-0 bound %v, cpu-1 bound %v; want both", first != nil, second != nil)
	}
	if n := first.Node; n == "n1" || n == "n2" || n == "n3" || n == "n4" {
		t.Errorf("cpu-0 on %s, in the room old claims", n)
	}
}

// TestHeldGangWaitsForItsVictims: a gang preempts; while its victims
// terminate, other capacity appears (old finishes). The gang is not placed
// there: it waits for the nodes it evicted for, so the evictions are not
// futile (nobody else takes what they free), and binds there once its
// victims are gone.
func TestHeldGangWaitsForItsVictims(t *testing.T) {
	c := &cluster{}
	softGangFitsNowhere(c)
	// Evicted pods terminate for one session before they are gone.
	r := startWith(t, c, sim.Options{EvictionGrace: 1})
	o := r.session()
	if diff := cmp.Diff(pods("young", 2), o.evicted); diff != "" {
		t.Fatalf("evicted (-want,+got):\n%s", diff)
	}
	r.finish(pods("old", 4)...)
	o = r.session()
	if got := o.binds.Count("ns", "soft"); got != 0 {
		t.Errorf("soft: %d pods bound while its victims terminate, want 0 (nodes %v)", got, o.binds.Nodes("ns", "soft"))
	}
	if len(o.evicted) != 0 {
		t.Errorf("evicted %v while the victims terminate, want none", o.evicted)
	}
	o = r.session()
	if got := o.binds.Count("ns", "soft"); got != 2 {
		t.Fatalf("soft: %d pods bound once its victims are gone, want 2", got)
	}
	if diff := cmp.Diff([]string{"n8"}, o.binds.Nodes("ns", "soft")); diff != "" {
		t.Errorf("soft's nodes (-want,+got):\n%s", diff)
	}
	for name, b := range o.binds {
		if b.Node == "" || b.Pod.Spec.NodeName != b.Node {
			t.Errorf("%s bound to node %q (pod's nodeName %q), want one node", name, b.Node, b.Pod.Spec.NodeName)
		}
	}
	for _, res := range r.sc.Sim.Ledger().All() {
		if strings.HasPrefix(res.Name, "soft-") && res.Node != "n8" {
			t.Errorf("ledger keeps %s on %s, off the node it bound to", res.Name, res.Node)
		}
	}
}
