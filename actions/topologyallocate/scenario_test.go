package topologyallocate_test

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/kubewharf/katalyst-api/pkg/apis/node/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	schedulingv1beta1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"

	"github.com/rdmatopo/rdmatopo/actions/topologyallocate"
	"github.com/rdmatopo/rdmatopo/config"
	"github.com/rdmatopo/rdmatopo/core/ledger"
	"github.com/rdmatopo/rdmatopo/core/placement"
	"github.com/rdmatopo/rdmatopo/core/topology"
	"github.com/rdmatopo/rdmatopo/internal/sim"
	"github.com/rdmatopo/rdmatopo/internal/sim/simtest"
	"github.com/rdmatopo/rdmatopo/internal/testing/builders"
	"github.com/rdmatopo/rdmatopo/plugins/rdmatopology"
)

// cluster is a scenario's input.
type cluster struct {
	nodes []*corev1.Node
	cnrs  []*v1alpha1.CustomNodeResource
	pods  []*corev1.Pod
	pgs   []*schedulingv1beta1.PodGroup
	// hyperNodes are Volcano HyperNodes, read under s1Source: hypernode.
	hyperNodes []*topology.HyperNode
	// tasks maps Volcano Jobs ("namespace/name") to their spec.tasks
	// names, in order.
	tasks map[string][]string
	// native maps PodGroups ("namespace/name") to their Volcano ≥ 1.12
	// spec.networkTopology and spec.subGroupPolicy.
	native map[string]*placement.NativeTopology
}

// addNode adds a provider-shaped node whose NUMA-0 NICs go to leaf0 and
// NUMA-1 NICs to leaf1.
func (c *cluster) addNode(name, leaf0, leaf1 string) {
	c.nodes = append(c.nodes, builders.ProviderNode(name).
		Resource("pods", "110").Resource("memory", "512Gi").Obj())
	c.cnrs = append(c.cnrs, builders.ProviderCNR(name, leaf0, leaf1).Obj())
}

// addRailNode adds a rail-cabled single-NUMA node: 2 NICs per NUMA zone,
// NIC i cabled to leaf "rail<i>" (so each zone spans two leaves).
func (c *cluster) addRailNode(name string) {
	c.nodes = append(c.nodes, builders.ProviderNode(name).
		Resource("pods", "110").Resource("memory", "512Gi").Obj())
	w := builders.MakeCNR(name).Policy(v1alpha1.TopologyPolicySingleNUMANodeContainerLevel).
		Zone(0, 4, 64000).Zone(1, 4, 64000)
	for i, pci := range []string{builders.NUMANICs[0][0], builders.NUMANICs[0][1], builders.NUMANICs[1][0], builders.NUMANICs[1][1]} {
		w.NIC(pci, i/2, fmt.Sprintf("rail%d", i))
	}
	c.cnrs = append(c.cnrs, w.Obj())
}

// addUnknownNode adds a single-NUMA node whose KCNR names no leaf for its
// NICs (topology-unknown: each NIC is a leaf of its own); with shared false
// the node also lacks the vke.node.rdma.mode=shared label.
func (c *cluster) addUnknownNode(name string, shared bool) {
	nw := builders.MakeNode(name).GPU(8).RDMA(4).CPU("128").Resource("pods", "110").Resource("memory", "512Gi")
	if shared {
		nw = nw.Shared()
	}
	c.nodes = append(c.nodes, nw.Obj())
	c.cnrs = append(c.cnrs, builders.ProviderCNR(name, "", "").Obj())
}

// addJob adds a PodGroup and n pods of gpu GPUs and nics NICs each.
func (c *cluster) addJob(name string, n, gpu, nics int, ann map[string]string) {
	c.pgs = append(c.pgs, builders.MakePodGroup("ns", name).MinMember(int32(n)).Annotations(ann).
		Phase(schedulingv1beta1.PodGroupInqueue).Obj())
	for i := 0; i < n; i++ {
		w := builders.MakePod("ns", fmt.Sprintf("%s-%d", name, i)).Group(name).Req("cpu", "4").Req("memory", "8Gi").
			SchedulerName("volcano")
		if gpu > 0 {
			w = w.Req(builders.GPUResource, fmt.Sprint(gpu))
		}
		if nics > 0 {
			w = w.Req(builders.RDMAResource, fmt.Sprint(nics))
		}
		c.pods = append(c.pods, w.Obj())
	}
}

// setup is how a scenario's simulator is built besides its cluster: the
// project's scheduler conf, and simulator options.
type setup struct {
	conf string
	opts sim.Options
}

// option changes a setup.
type option func(t *testing.T, s *setup)

// startAt runs the first session at now on the simulated clock, which
// max-wait deadlines are measured on.
func startAt(now time.Time) option {
	return func(_ *testing.T, s *setup) { s.opts.Start = now }
}

// confS1NodeLabel is the rdma-topology argument line of the project's conf
// that pluginArgs replaces.
const confS1NodeLabel = "      s1NodeLabel: rdmatopo.io/minipod\n"

// pluginArgs runs the project's conf with the rdma-topology arguments
// given ("key: value") in place of its own.
func pluginArgs(args ...string) option {
	return func(t *testing.T, s *setup) {
		t.Helper()
		if !strings.Contains(s.conf, confS1NodeLabel) {
			t.Fatalf("the project's conf has no line %q to replace", confS1NodeLabel)
		}
		var lines strings.Builder
		for _, a := range args {
			lines.WriteString("      " + a + "\n")
		}
		s.conf = strings.Replace(s.conf, confS1NodeLabel, lines.String(), 1)
	}
}

// outcome is what one session produced.
type outcome struct {
	binds simtest.Binds // ns/name -> bind
	// pgs are the PodGroups (ns/name) as the session wrote them back.
	pgs map[string]*schedulingv1beta1.PodGroup
	// patched are the annotations the scheduler patched on running pods
	// (ns/name), merged over the session.
	patched map[string]map[string]string
	ledger  *ledger.Ledger
	// units are the RDMA units of each NIC ("node/nic") whose KCNR NIC
	// zone lists more than one, read from the cluster's KCNRs.
	units map[string]int64
	// refused is how many planned nodes were refused when the plan was
	// applied.
	refused int64
}

// runSession runs one session of the project's conf over the cluster on
// the simulator and returns what it did.
func runSession(t *testing.T, c *cluster, opts ...option) *outcome {
	t.Helper()
	st := &setup{conf: config.SchedulerConf}
	for _, o := range opts {
		o(t, st)
	}
	sc := simtest.Start(t, st.conf, simtest.Cluster{Nodes: c.nodes, CNRs: c.cnrs, HyperNodes: c.hyperNodes,
		PodGroups: c.pgs, Pods: c.pods, VolcanoJobTasks: c.tasks, Native: c.native}, st.opts)
	o := sc.Session()
	return &outcome{binds: o.Binds, pgs: o.PodGroups, patched: o.Patched, ledger: sc.Sim.Ledger(), units: nicUnits(c.cnrs), refused: sc.Sim.PlanRefused()}
}

// nicUnits reads the RDMA allocatable of every NIC zone of the KCNRs
// that lists more than one unit, by "node/nic" (PCI addresses lower case).
func nicUnits(cnrs []*v1alpha1.CustomNodeResource) map[string]int64 {
	out := map[string]int64{}
	var walk func(node string, zs []*v1alpha1.TopologyZone)
	walk = func(node string, zs []*v1alpha1.TopologyZone) {
		for _, z := range zs {
			if z == nil {
				continue
			}
			if z.Type == v1alpha1.TopologyTypeNIC && z.Resources.Allocatable != nil {
				if q, ok := (*z.Resources.Allocatable)[builders.RDMAResource]; ok && q.Value() > 1 {
					out[node+"/"+strings.ToLower(z.Name)] = q.Value()
				}
			}
			walk(node, z.Children)
		}
	}
	for _, c := range cnrs {
		walk(c.Name, c.Status.TopologyZone)
	}
	return out
}

func TestGangScenarios(t *testing.T) {
	hardS0 := map[string]string{ledger.AnnotationMode: "hard", ledger.AnnotationHighestTier: "s0"}
	cases := map[string]struct {
		build      func(c *cluster)
		wantBound  map[string]int
		wantLeaves map[string][]string
		wantReason map[string]string
	}{
		"gang committed whole under one S0": {
			build: func(c *cluster) {
				for i := 1; i <= 4; i++ {
					c.addNode(fmt.Sprintf("n%d", i), "A", "B")
				}
				c.addJob("train", 4, 4, 2, hardS0)
			},
			wantBound:  map[string]int{"train": 4},
			wantLeaves: map[string][]string{"train": {"A"}},
		},
		"gang that does not fit leaves nothing bound": {
			build: func(c *cluster) {
				for i := 1; i <= 4; i++ {
					c.addNode(fmt.Sprintf("n%d", i), "A", "B")
				}
				c.addJob("big", 5, 4, 2, hardS0)
			},
			wantBound:  map[string]int{"big": 0},
			wantReason: map[string]string{"big": "no S0 can hold 5 pods of 4 GPU + 2 RDMA; the largest holds 4"},
		},
		"non-RDMA job is scheduled as stock Volcano would": {
			build: func(c *cluster) {
				c.addNode("n1", "A", "B")
				c.addJob("cpu", 2, 0, 0, nil)
			},
			wantBound: map[string]int{"cpu": 2},
		},
		"rail cabling: a soft 3-pod gang on the two rails of one zone": {
			build: func(c *cluster) {
				for i := 1; i <= 3; i++ {
					c.addRailNode(fmt.Sprintf("r%d", i))
				}
				c.addJob("rails", 3, 4, 2, nil)
			},
			wantBound:  map[string]int{"rails": 3},
			wantLeaves: map[string][]string{"rails": {"rail0", "rail1"}},
		},
		"topology-unknown shared nodes take a soft 3-pod gang": {
			build: func(c *cluster) {
				for i := 1; i <= 3; i++ {
					c.addUnknownNode(fmt.Sprintf("u%d", i), true)
				}
				c.addJob("unknown", 3, 4, 2, nil)
			},
			wantBound: map[string]int{"unknown": 3},
		},
		"nodes not labelled shared take a soft 3-pod gang": {
			build: func(c *cluster) {
				for i := 1; i <= 3; i++ {
					c.addUnknownNode(fmt.Sprintf("u%d", i), false)
				}
				c.addJob("unlabelled", 3, 4, 2, nil)
			},
			wantBound: map[string]int{"unlabelled": 3},
		},
		"two gangs share the fabric without sharing NICs": {
			build: func(c *cluster) {
				for i := 1; i <= 4; i++ {
					c.addNode(fmt.Sprintf("n%d", i), "A", "B")
				}
				c.addJob("one", 3, 4, 2, hardS0)
				c.addJob("two", 3, 4, 2, hardS0)
			},
			wantBound:  map[string]int{"one": 3, "two": 3},
			wantLeaves: map[string][]string{"one": {"A"}, "two": {"B"}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			c := &cluster{}
			tc.build(c)
			o := runSession(t, c)
			for job, want := range tc.wantBound {
				if got := o.binds.Count("ns", job); got != want {
					t.Errorf("job %s: %d pods bound, want %d", job, got, want)
				}
			}
			for job, want := range tc.wantLeaves {
				if diff := cmp.Diff(want, o.binds.Leaves("ns", job)); diff != "" {
					t.Errorf("job %s leaves (-want,+got):\n%s", job, diff)
				}
			}
			for job, want := range tc.wantReason {
				if got := condition(o.pgs["ns/"+job]); got != want {
					t.Errorf("job %s condition message = %q, want %q", job, got, want)
				}
			}
			checkBinds(t, o)
		})
	}
}

// condition returns the message of the plugin's PodGroup condition.
func condition(pg *schedulingv1beta1.PodGroup) string {
	if pg == nil {
		return "<PodGroup not written>"
	}
	for _, c := range pg.Status.Conditions {
		if string(c.Type) == string(rdmatopology.ConditionType) {
			return c.Message
		}
	}
	return ""
}

// checkBindsPlanned is checkBinds for a session whose plans were applied as
// planned: no planned node was refused when its plan was applied.
func checkBindsPlanned(t *testing.T, o *outcome) {
	t.Helper()
	checkBinds(t, o)
	if o.refused != 0 {
		t.Errorf("%v planned nodes refused when the plan was applied, want 0", o.refused)
	}
}

// checkBinds checks every bound RDMA pod: its annotations match its ledger
// reservation, NICs are on one NUMA zone, and no NIC is given to more pods
// than its KCNR lists RDMA units.
func checkBinds(t *testing.T, o *outcome) {
	t.Helper()
	seen := map[string][]string{}
	for name, task := range o.binds {
		ann := task.Pod.Annotations
		nicsAnn, ok := ann[ledger.AnnotationNICs]
		r, held := o.ledger.Get(string(task.Pod.UID))
		if !ok {
			if held {
				t.Errorf("%s holds NICs %v but carries no %s annotation", name, r.NICs(), ledger.AnnotationNICs)
			}
			continue
		}
		if !held {
			t.Errorf("%s carries %s=%s without a reservation", name, ledger.AnnotationNICs, nicsAnn)
			continue
		}
		nics, err := ledger.ParseNICs(nicsAnn)
		if err != nil {
			t.Errorf("%s: %v", name, err)
		}
		if diff := cmp.Diff(r.NICs(), nics); diff != "" {
			t.Errorf("%s annotation vs ledger (-ledger,+annotation):\n%s", name, diff)
		}
		switch {
		case r.Containers != nil:
			// Split by container: one zone per container group, every
			// zone in the pod's annotations.
			if ann[ledger.AnnotationNUMA] != ledger.FormatNUMA(r.NUMAs()) || ann[ledger.AnnotationContainers] != ledger.FormatContainers(r.Containers) {
				t.Errorf("%s: NUMA annotation %q, containers %q; ledger zones %+v, containers %+v", name,
					ann[ledger.AnnotationNUMA], ann[ledger.AnnotationContainers], r.Zones, r.Containers)
			}
		case len(r.Zones) != 1 || ann[ledger.AnnotationNUMA] != fmt.Sprint(r.Zones[0].NUMA):
			t.Errorf("%s: NUMA annotation %q, zones %+v: want one zone", name, ann[ledger.AnnotationNUMA], r.Zones)
		case ann[ledger.AnnotationContainers] != "":
			t.Errorf("%s: in one zone, but annotated with containers %q", name, ann[ledger.AnnotationContainers])
		}
		for _, nic := range nics {
			key := task.Node + "/" + string(nic)
			seen[key] = append(seen[key], name)
			if units := max(o.units[key], 1); int64(len(seen[key])) > units {
				sort.Strings(seen[key])
				t.Errorf("NIC %s (%d units) given to %v", key, units, seen[key])
			}
		}
	}
}

func TestForgedAnnotationsIgnored(t *testing.T) {
	c := &cluster{}
	c.addNode("n1", "A", "B")
	// A bound pod holds NUMA-0's NICs (the KCNR does not list it yet).
	holder := builders.MakePod("ns", "holder").Node("n1").Phase(corev1.PodRunning).
		Req(builders.GPUResource, "4").Req(builders.RDMAResource, "2").Req("cpu", "4").
		Annotation(ledger.AnnotationNICs, builders.NUMANICs[0][0]+","+builders.NUMANICs[0][1]).
		Annotation(ledger.AnnotationNUMA, "0").SchedulerName("volcano").Obj()
	c.addJob("forged", 1, 4, 2, map[string]string{ledger.AnnotationPlacement: `{"tier":"node"}`})
	c.pods[0].Annotations[ledger.AnnotationNICs] = builders.NUMANICs[0][0] + "," + builders.NUMANICs[0][1]
	c.pods[0].Annotations[ledger.AnnotationNUMA] = "0"
	c.pods = append(c.pods, holder)
	c.addJob("cpu", 1, 0, 0, nil)
	c.pods[len(c.pods)-1].Annotations[ledger.AnnotationNICs] = builders.NUMANICs[1][0]

	o := runSession(t, c)
	task := o.binds["ns/forged-0"]
	if task == nil {
		t.Fatalf("forged pod not bound; binds: %v", keys(o.binds))
	}
	want := builders.NUMANICs[1][0] + "," + builders.NUMANICs[1][1]
	if got := task.Pod.Annotations[ledger.AnnotationNICs]; got != want {
		t.Errorf("forged pod got NICs %q, want %q (the free NUMA-1 pair)", got, want)
	}
	if cpu := o.binds["ns/cpu-0"]; cpu == nil {
		t.Errorf("CPU pod not bound")
	} else if v, ok := cpu.Pod.Annotations[ledger.AnnotationNICs]; ok {
		t.Errorf("CPU pod kept forged %s=%q", ledger.AnnotationNICs, v)
	}
	var pl rdmatopology.PlacementAnnotation
	if err := json.Unmarshal([]byte(o.pgs["ns/forged"].Annotations[ledger.AnnotationPlacement]), &pl); err != nil {
		t.Fatalf("placement annotation: %v", err)
	}
	zero := 0
	if diff := cmp.Diff(rdmatopology.PlacementAnnotation{GangPlacement: ledger.GangPlacement{Tier: "node", S0: []string{"B"}, S1: []string{}}, RingCrossings: &zero}, pl); diff != "" {
		t.Errorf("placement (-want,+got):\n%s", diff)
	}
	checkBinds(t, o)
}

func TestRestartRebuildsLedgerFromAnnotations(t *testing.T) {
	c := &cluster{}
	c.addNode("n1", "A", "B")
	c.addNode("n2", "A", "B")
	// Two bound pods from before the restart hold NUMA 0 of n1 and n2.
	for i, n := range []string{"n1", "n2"} {
		c.pods = append(c.pods, builders.MakePod("ns", fmt.Sprintf("old-%d", i)).Node(n).Phase(corev1.PodRunning).Group("old").
			Req(builders.GPUResource, "4").Req(builders.RDMAResource, "2").Req("cpu", "4").
			Annotation(ledger.AnnotationNICs, builders.NUMANICs[0][0]+","+builders.NUMANICs[0][1]).
			Annotation(ledger.AnnotationNUMA, "0").SchedulerName("volcano").Obj())
	}
	c.addRunningGroup("old", 2, nil)
	c.addJob("new", 2, 4, 2, map[string]string{ledger.AnnotationMode: "hard", ledger.AnnotationHighestTier: "s0"})
	o := runSession(t, c)
	if got := o.binds.Count("ns", "new"); got != 2 {
		t.Fatalf("new gang: %d bound, want 2", got)
	}
	if diff := cmp.Diff([]string{"B"}, o.binds.Leaves("ns", "new")); diff != "" {
		t.Errorf("new gang leaves (-want,+got):\n%s", diff)
	}
	if got := o.ledger.Len(); got != 4 {
		t.Errorf("ledger holds %d reservations, want 4 (2 restored + 2 new)", got)
	}
	checkBinds(t, o)
}

func keys(m map[string]*sim.BindRecord) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

var _ = topologyallocate.ActionName

// TestNodeAgentChoseOtherNICs: three running pods were reserved NUMA-0 NICs
// (leaf A) but their KCNRs list them on NUMA 1 (leaf B). The scheduler
// adopts the KCNR's NICs, frees leaf A for a hard-s0 gang of four, patches
// the pods' annotations and shows the planned placement on their PodGroup.
func TestNodeAgentChoseOtherNICs(t *testing.T) {
	c := &cluster{}
	for i := 1; i <= 4; i++ {
		c.addNode(fmt.Sprintf("n%d", i), "A", "B")
	}
	for i := 0; i < 3; i++ {
		name, uid, node := fmt.Sprintf("old-%d", i), fmt.Sprintf("u-old-%d", i), fmt.Sprintf("n%d", i+1)
		c.pods = append(c.pods, builders.MakePod("ns", name).UID(uid).Node(node).Phase(corev1.PodRunning).Group("old").
			Req(builders.GPUResource, "4").Req(builders.RDMAResource, "2").Req("cpu", "4").
			Annotation(ledger.AnnotationNICs, builders.NUMANICs[0][0]+","+builders.NUMANICs[0][1]).
			Annotation(ledger.AnnotationNUMA, "0").SchedulerName("volcano").Obj())
		consumer := builders.Consumer("ns", name, uid)
		c.cnrs[i] = builders.ProviderCNR(node, "A", "B").
			UseNIC(builders.NUMANICs[1][0], consumer).UseNIC(builders.NUMANICs[1][1], consumer).
			Alloc(1, consumer, corev1.ResourceList{builders.GPUResource: resource.MustParse("4")}).Obj()
	}
	c.addRunningGroup("old", 3, nil)
	c.addJob("new", 4, 4, 2, map[string]string{ledger.AnnotationMode: "hard", ledger.AnnotationHighestTier: "s0"})

	o := runSession(t, c)
	if got := o.binds.Count("ns", "new"); got != 4 {
		t.Fatalf("new gang: %d bound, want 4 (leaf A is truly free)", got)
	}
	if diff := cmp.Diff([]string{"A"}, o.binds.Leaves("ns", "new")); diff != "" {
		t.Errorf("new gang leaves (-want,+got):\n%s", diff)
	}
	want := map[string]map[string]string{}
	for i := 0; i < 3; i++ {
		want[fmt.Sprintf("ns/old-%d", i)] = map[string]string{
			ledger.AnnotationNICs: builders.NUMANICs[1][0] + "," + builders.NUMANICs[1][1],
			ledger.AnnotationNUMA: "1",
			ledger.AnnotationS0:   "B",
		}
	}
	if diff := cmp.Diff(want, o.patched); diff != "" {
		t.Errorf("patched annotations (-want,+got):\n%s", diff)
	}
	for i := 0; i < 3; i++ {
		r, ok := o.ledger.Get(fmt.Sprintf("u-old-%d", i))
		if !ok || !r.Confirmed || r.Zones[0].NUMA != 1 {
			t.Errorf("old-%d reservation = %+v, want confirmed on NUMA 1", i, r)
		}
	}
	pg := o.pgs["ns/old"]
	if pg == nil {
		t.Fatalf("PodGroup ns/old was not written back")
	}
	wantPlacement := `{"tier":"s0","s0":["B"],"s1":[],"ringCrossings":0,"planned":{"tier":"s0","s0":["A"],"s1":[]}}`
	if got := pg.Annotations[ledger.AnnotationPlacement]; got != wantPlacement {
		t.Errorf("old placement = %s, want %s", got, wantPlacement)
	}
	checkBinds(t, o)
}

func TestContractScenarios(t *testing.T) {
	now := time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)
	since := func(ago time.Duration) string { return now.Add(-ago).Format(time.RFC3339) }
	waitHard := func(extra map[string]string) map[string]string {
		ann := map[string]string{ledger.AnnotationMode: "hard", ledger.AnnotationHighestTier: "s0"}
		for k, v := range extra {
			ann[k] = v
		}
		return ann
	}
	hardS0 := func(int) map[string]string {
		return map[string]string{ledger.AnnotationMode: "hard", ledger.AnnotationHighestTier: "s0"}
	}
	cases := map[string]struct {
		ann map[string]string
		// podAnn gives pod i's annotations (nil: none).
		podAnn      func(i int) map[string]string
		wantBound   int
		wantReason  string
		wantMessage string
		// wantSince is the waiting-since the PodGroup carries afterwards
		// ("": unchanged from the input).
		wantSince string
	}{
		"upper-case mode: pending, never widened": {
			ann:         map[string]string{ledger.AnnotationMode: "HARD", ledger.AnnotationHighestTier: "s0"},
			wantReason:  "InvalidAnnotation",
			wantMessage: `PodGroup ns/big: invalid job contract: annotation rdmatopo.io/mode: "HARD" is not a mode (want hard or soft)`,
		},
		"misspelt key: pending": {
			ann:         map[string]string{"rdmatopo.io/Mode": "hard"},
			wantReason:  "InvalidAnnotation",
			wantMessage: "PodGroup ns/big: invalid job contract: annotation rdmatopo.io/Mode: unknown key (the job contract has rdmatopo.io/mode, rdmatopo.io/highest-tier, rdmatopo.io/max-wait, rdmatopo.io/segment-size and rdmatopo.io/segment-tier)",
		},
		"hard without max-wait waits for its tier": {
			ann:         waitHard(map[string]string{ledger.AnnotationWaitingSince: since(time.Hour)}),
			wantReason:  "TierLimit",
			wantMessage: "no S0 can hold 5 pods of 4 GPU + 2 RDMA; the largest holds 4",
		},
		"max-wait not reached: waits, says how long is left": {
			ann:         waitHard(map[string]string{ledger.AnnotationMaxWait: "30s", ledger.AnnotationWaitingSince: since(10 * time.Second)}),
			wantReason:  "TierLimit",
			wantMessage: "no S0 can hold 5 pods of 4 GPU + 2 RDMA; the largest holds 4; placed as soft (best available) in 20s if still waiting (max-wait 30s)",
		},
		"first failure starts the wait": {
			ann:         waitHard(map[string]string{ledger.AnnotationMaxWait: "30s"}),
			wantReason:  "TierLimit",
			wantMessage: "no S0 can hold 5 pods of 4 GPU + 2 RDMA; the largest holds 4; placed as soft (best available) in 30s if still waiting (max-wait 30s)",
			wantSince:   since(0),
		},
		"max-wait passed: placed as soft": {
			ann:       waitHard(map[string]string{ledger.AnnotationMaxWait: "30s", ledger.AnnotationWaitingSince: since(35 * time.Second)}),
			wantBound: 5,
		},
		"a bare PodGroup: the pods' contract holds": {
			podAnn:      hardS0,
			wantReason:  "TierLimit",
			wantMessage: "no S0 can hold 5 pods of 4 GPU + 2 RDMA; the largest holds 4",
		},
		"the PodGroup's contract wins over its pods'": {
			ann:       map[string]string{ledger.AnnotationMode: "soft"},
			podAnn:    hardS0,
			wantBound: 5,
		},
		"pods that disagree: pending": {
			podAnn: func(i int) map[string]string {
				if i == 4 {
					return map[string]string{ledger.AnnotationMode: "soft", ledger.AnnotationHighestTier: "s0"}
				}
				return hardS0(i)
			},
			wantReason:  "InvalidAnnotation",
			wantMessage: `PodGroup ns/big: invalid job contract: annotation rdmatopo.io/mode: the gang's pods disagree: "hard" on big-0, big-1, big-2 and 1 more; "soft" on big-4`,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			c := &cluster{}
			for i := 1; i <= 4; i++ {
				c.addNode(fmt.Sprintf("n%d", i), "A", "B")
			}
			c.addJob("big", 5, 4, 2, tc.ann)
			if tc.podAnn != nil {
				for i, p := range c.pods {
					for k, v := range tc.podAnn(i) {
						p.Annotations[k] = v
					}
				}
			}
			o := runSession(t, c, startAt(now))
			if got := o.binds.Count("ns", "big"); got != tc.wantBound {
				t.Errorf("%d pods bound, want %d", got, tc.wantBound)
			}
			if tc.wantReason != "" {
				pg := o.pgs["ns/big"]
				var got [2]string
				if pg != nil {
					for _, cond := range pg.Status.Conditions {
						if string(cond.Type) == string(rdmatopology.ConditionType) {
							got = [2]string{cond.Reason, cond.Message}
						}
					}
				}
				if diff := cmp.Diff([2]string{tc.wantReason, tc.wantMessage}, got); diff != "" {
					t.Errorf("condition (-want,+got):\n%s", diff)
				}
				if tc.wantSince != "" && (pg == nil || pg.Annotations[ledger.AnnotationWaitingSince] != tc.wantSince) {
					t.Errorf("waiting-since not recorded as %s: %v", tc.wantSince, pg)
				}
			}
			checkBinds(t, o)
		})
	}
}

// TestReasonInVolcanoCondition: the planner's reason reaches Volcano's own
// Unschedulable PodGroup condition (the job's fit error), where users of
// Volcano look first.
func TestReasonInVolcanoCondition(t *testing.T) {
	c := &cluster{}
	for i := 1; i <= 4; i++ {
		c.addNode(fmt.Sprintf("n%d", i), "A", "B")
	}
	c.addJob("big", 5, 4, 2, map[string]string{ledger.AnnotationMode: "hard", ledger.AnnotationHighestTier: "s0"})
	o := runSession(t, c)
	pg := o.pgs["ns/big"]
	if pg == nil {
		t.Fatal("PodGroup ns/big was not written back")
	}
	want := "Origin reason is: rdma-topology: no S0 can hold 5 pods of 4 GPU + 2 RDMA; the largest holds 4"
	for _, cond := range pg.Status.Conditions {
		if string(cond.Type) == string(schedulingv1beta1.PodGroupUnschedulableType) && strings.Contains(cond.Message, want) {
			return
		}
	}
	t.Errorf("no Unschedulable condition containing %q: %+v", want, pg.Status.Conditions)
}
