package topologyallocate_test

// Volcano's HyperNode end-to-end cases (test/e2e/hypernode of the
// volcano-sh/volcano repository, tags v1.13.0 and v1.14.0), translated
// into rdmatopo's inputs and run on the simulator's real session.
//
// Upstream, eight kwok nodes of 8 CPUs and 8Gi each sit under a three-tier
// HyperNode tree:
//
//	tier 3                     s6
//	tier 2            s4                 s5
//	tier 1        s0       s1       s2       s3
//	nodes       n0  n1   n2  n3   n4  n5   n6  n7
//
// Here each node also has one NUMA zone with four RDMA NICs, all cabled to
// the leaf of its tier-1 HyperNode (the leaf is named after it), and the
// same HyperNodes give the S1s (s1Source: hypernode, tier 2). Running pods
// that only take CPU and memory fill the nodes as each case's do, and the
// gang is a Volcano Job as a user writes it: spec.networkTopology (and, in
// case 5.2, tasks[].partitionPolicy). Each case runs twice: the job's pods
// asking the case's CPU and memory plus one NIC each, which rdmatopo
// places at NIC level, and as upstream's are (CPU and memory only), which
// rdmatopo keeps within one domain of the hard tier.

import (
	"fmt"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/kubewharf/katalyst-api/pkg/apis/node/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	schedulingv1beta1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"

	"github.com/rdmatopo/rdmatopo/config"
	"github.com/rdmatopo/rdmatopo/core/ledger"
	"github.com/rdmatopo/rdmatopo/core/placement"
	"github.com/rdmatopo/rdmatopo/core/topology"
	"github.com/rdmatopo/rdmatopo/internal/sim"
	"github.com/rdmatopo/rdmatopo/internal/sim/simtest"
	"github.com/rdmatopo/rdmatopo/internal/testing/builders"
	"github.com/rdmatopo/rdmatopo/internal/workload"
	"github.com/rdmatopo/rdmatopo/plugins/rdmatopology"
)

// Upstream sources of the ported cases: tag v1.13.0 is commit
// 943b8c23d402462b63f1e21f7f7a39129ba8d63c, v1.14.0 is
// 6f86a47f32772ca8df248add31d01385a8a097b4.
const (
	e2eNetworkTopology13 = "test/e2e/hypernode/network_topology_test.go@v1.13.0"
	e2eNetworkTopology14 = "test/e2e/hypernode/network_topology_test.go@v1.14.0"
	e2eTaskTopology14    = "test/e2e/hypernode/network_topology_task_test.go@v1.14.0"
)

// kwokTaint is the taint of upstream's kwok nodes, which every pod of the
// cases tolerates.
const kwokTaint = "kwok.x-k8s.io/node"

// e2eTier1 are the tier-1 HyperNodes, each over two nodes, in order.
var e2eTier1 = []string{"s0", "s1", "s2", "s3"}

// e2eNodeName is upstream's name of node i.
func e2eNodeName(i int) string { return fmt.Sprintf("kwok-node-%d", i) }

// e2eNICs are the four NICs of each node's one NUMA zone.
var e2eNICs = []string{"0000:1a:00.0", "0000:3f:00.0", "0000:5a:00.0", "0000:7f:00.0"}

// e2eFabric returns the eight nodes, their KCNRs and the HyperNode tree of
// the upstream suite.
func e2eFabric() ([]*corev1.Node, []*v1alpha1.CustomNodeResource, []*topology.HyperNode) {
	var nodes []*corev1.Node
	var cnrs []*v1alpha1.CustomNodeResource
	for i := 0; i < 8; i++ {
		name, leaf := e2eNodeName(i), e2eTier1[i/2]
		n := builders.MakeNode(name).Shared().RDMA(int64(len(e2eNICs))).CPU("8").Resource("memory", "8Gi").
			Resource("pods", "110").Label("type", "kwok").Obj()
		n.Spec.Taints = []corev1.Taint{{Key: kwokTaint, Value: "fake", Effect: corev1.TaintEffectNoSchedule}}
		nodes = append(nodes, n)
		w := builders.MakeCNR(name).Policy(v1alpha1.TopologyPolicySingleNUMANodeContainerLevel).Zone(0, 0, 8000)
		for _, pci := range e2eNICs {
			w.NIC(pci, 0, leaf)
		}
		cnrs = append(cnrs, w.Obj())
	}
	exact := func(typ, name string) topology.HyperNodeMember {
		return topology.HyperNodeMember{Type: typ, Selector: topology.HyperNodeMemberSelector{ExactMatch: &topology.HyperNodeExactMatch{Name: name}}}
	}
	hn := func(name string, tier int, typ, a, b string) *topology.HyperNode {
		return &topology.HyperNode{ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: topology.HyperNodeSpec{Tier: tier, Members: []topology.HyperNodeMember{exact(typ, a), exact(typ, b)}}}
	}
	var hyper []*topology.HyperNode
	for i, s := range e2eTier1 {
		hyper = append(hyper, hn(s, 1, topology.MemberNode, e2eNodeName(2*i), e2eNodeName(2*i+1)))
	}
	hyper = append(hyper,
		hn("s4", 2, topology.MemberHyperNode, "s0", "s1"),
		hn("s5", 2, topology.MemberHyperNode, "s2", "s3"),
		hn("s6", 3, topology.MemberHyperNode, "s4", "s5"))
	return nodes, cnrs, hyper
}

// e2eHyperNodeOf returns the tier-1 HyperNode of a node.
func e2eHyperNodeOf(node string) string {
	var i int
	if _, err := fmt.Sscanf(node, "kwok-node-%d", &i); err != nil || i < 0 || i >= 8 {
		return "?" + node
	}
	return e2eTier1[i/2]
}

// filler is a running pod of a case: CPUs (upstream's CPU<n>Mem<n>, n CPUs
// and n Gi) on node i, no NIC.
type filler struct {
	node, cpus int
}

// fillerPods returns the running pods of a case, in PodGroup "fill".
func fillerPods(fill []filler) (*schedulingv1beta1.PodGroup, []*corev1.Pod) {
	pg := builders.MakePodGroup("ns", "fill").MinMember(1).Phase(schedulingv1beta1.PodGroupRunning).Obj()
	var pods []*corev1.Pod
	for i, f := range fill {
		pods = append(pods, builders.MakePod("ns", fmt.Sprintf("fill-%d", i)).Node(e2eNodeName(f.node)).Group("fill").
			Req("cpu", fmt.Sprint(f.cpus)).Req("memory", fmt.Sprintf("%dMi", 1024*f.cpus)).
			SchedulerName("volcano").Tolerate(kwokTaint).Obj())
	}
	return pg, pods
}

// e2eJob renders upstream's one-task Volcano Job: replicas pods (all of
// them its minAvailable) of cpus CPUs and Gi plus one NIC, tolerating the
// kwok taint, with the spec.networkTopology and task partitionPolicy
// lines given (flow YAML, empty for none).
func e2eJob(name string, replicas, cpus int, networkTopology, partitionPolicy string, noNIC bool) string {
	var spec, task string
	requests, limits := fmt.Sprintf(`{cpu: "%[1]d", memory: %[1]dGi, %[2]s: "1"}`, cpus, builders.RDMAResource), fmt.Sprintf(`{%s: "1"}`, builders.RDMAResource)
	if noNIC {
		requests, limits = fmt.Sprintf(`{cpu: "%[1]d", memory: %[1]dGi}`, cpus), "{}"
	}
	if networkTopology != "" {
		spec = "  networkTopology: " + networkTopology + "\n"
	}
	if partitionPolicy != "" {
		task = "    partitionPolicy: " + partitionPolicy + "\n"
	}
	return fmt.Sprintf(`apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata: {name: %[1]s, namespace: ns}
spec:
  schedulerName: volcano
  minAvailable: %[2]d
%[4]s  tasks:
  - name: task
    replicas: %[2]d
%[5]s    template:
      spec:
        tolerations: [{key: %[6]s, operator: Equal, value: fake, effect: NoSchedule}]
        containers:
        - name: nginx
          image: nginx
          resources:
            requests: %[3]s
            limits: %[7]s
`, name, replicas, requests, spec, task, kwokTaint, limits)
}

// e2eResult is where a case's job went.
type e2eResult struct {
	// Bound counts the job's pods bound.
	Bound int
	// HyperNodes counts the job's bound pods per tier-1 HyperNode.
	HyperNodes map[string]int
	// Within is the tightest HyperNode that holds every bound pod.
	Within string
	// Nodes are the nodes of the bound pods, sorted (nil for pods without
	// NICs: allocate breaks ties between equal nodes at random).
	Nodes []string
	// Leaves are the leaves of the bound pods' NICs, sorted.
	Leaves []string
	// Partitions are, by volcano.sh/partition-id in order, the tightest
	// HyperNode holding each partition's bound pods (nil without
	// partitions).
	Partitions []string
	// Reason is that of the rdma-topology condition on the job's
	// PodGroup ("" when none).
	Reason string
}

// e2eCase is one upstream case: the pods it starts with, the job, and
// what Volcano and rdmatopo make of it.
type e2eCase struct {
	// upstream names the file, tag and case.
	upstream string
	fill     []filler
	// replicas pods of cpus CPUs each, with these Job lines.
	replicas, cpus                   int
	networkTopology, partitionPolicy string
	// volcano is upstream's expectation, in its words.
	volcano string
	// want is rdmatopo's placement of the job with one NIC per pod.
	want e2eResult
	// wantCPU is its placement of upstream's pods as they are, CPU and
	// memory only.
	wantCPU e2eResult
	// differs says why rdmatopo's placement is not upstream's, when it
	// is not.
	differs string
	// kill deletes the job's first pod once it runs, re-creates it as its
	// job controller does, and checks where the job is then (upstream's
	// case 2.3).
	kill bool
	// softCPU: the job is soft; where its pods without NICs go within
	// the cluster is allocate's choice, not checked.
	softCPU bool
}

// Why rdmatopo's choice among equally good domains is not upstream's: an
// RDMA gang goes to one node under one leaf when one node holds it (tier
// node, tighter than any HyperNode), and among candidates of a tier to the
// best fit by free NICs, ties broken by name; CPU and memory use by pods
// without NICs decide feasibility, never the order (binpack does upstream).
const (
	whyNICOrder = "one node under one leaf (tier node) holds the gang; among nodes of equal NIC fit the first by name"
	// whyNotPending: upstream expects the job pending, but by the case's
	// own quantities (8 CPUs and 8Gi per node) a tier-1 HyperNode still
	// holds it; upstream's check (two pods in phase Pending within five
	// minutes) holds while the pods await their first scheduling cycle.
	whyNotPending = "upstream expects pending, but by its own quantities a tier-1 HyperNode holds the job (its check is met before the job's first cycle)"
	// whyDomainOrder: pods without NICs go to the fullest domain that
	// holds them (binpack by domain), not upstream's HyperNode score.
	whyDomainOrder = "pods without NICs take the fullest domain that holds them"
)

// e2eCases are upstream's cases 1.x to 3.x and 5.2, and, where upstream's
// quantities do not make the situation its case title states, the same
// case with quantities that do (upstream id with "-as-titled").
var e2eCases = map[string]e2eCase{
	"1.1": {upstream: e2eNetworkTopology13 + " Case 1.1 (unchanged in v1.14.0)",
		fill:     []filler{{2, 1}, {3, 1}},
		replicas: 2, cpus: 2, networkTopology: "{mode: hard, highestTierAllowed: 1}",
		volcano: "running on kwok-node-2 and kwok-node-3 (s1)",
		want:    e2eResult{Bound: 2, HyperNodes: map[string]int{"s0": 2}, Within: "s0", Nodes: []string{"kwok-node-0"}, Leaves: []string{"s0"}, Reason: "Placed"},
		wantCPU: e2eResult{Bound: 2, Within: "s1", Reason: "Placed"},
		differs: "nics: " + whyNICOrder},
	"1.2@v1.13.0": {upstream: e2eNetworkTopology13 + " Case 1.2",
		fill:     []filler{{2, 4}, {3, 4}, {4, 1}},
		replicas: 2, cpus: 2, networkTopology: "{mode: hard, highestTierAllowed: 1}",
		volcano: "running on kwok-node-4 and kwok-node-5 (s2)",
		want:    e2eResult{Bound: 2, HyperNodes: map[string]int{"s0": 2}, Within: "s0", Nodes: []string{"kwok-node-0"}, Leaves: []string{"s0"}, Reason: "Placed"},
		wantCPU: e2eResult{Bound: 2, Within: "s1", Reason: "Placed"},
		differs: "nics: " + whyNICOrder + "; cpu: " + whyDomainOrder + " (s1 still holds two pods of 2 CPUs)"},
	"1.2@v1.14.0": {upstream: e2eNetworkTopology14 + " Case 1.2 (its pods take 4 CPUs)",
		fill:     []filler{{2, 4}, {3, 4}, {4, 1}},
		replicas: 2, cpus: 4, networkTopology: "{mode: hard, highestTierAllowed: 1}",
		volcano: "running on kwok-node-4 and kwok-node-5 (s2)",
		want:    e2eResult{Bound: 2, HyperNodes: map[string]int{"s0": 2}, Within: "s0", Nodes: []string{"kwok-node-0"}, Leaves: []string{"s0"}, Reason: "Placed"},
		wantCPU: e2eResult{Bound: 2, Within: "s1", Reason: "Placed"},
		differs: "nics: " + whyNICOrder + "; cpu: " + whyDomainOrder + " (s1's two nodes have exactly 4 CPUs left each)"},
	"1.3": {upstream: e2eNetworkTopology13 + " Case 1.3 (unchanged in v1.14.0)",
		fill:     []filler{{0, 4}, {2, 4}, {2, 4}, {3, 4}, {4, 4}, {6, 4}, {6, 4}, {7, 4}},
		replicas: 2, cpus: 2, networkTopology: "{mode: hard, highestTierAllowed: 1}",
		volcano: "pending",
		want:    e2eResult{Bound: 2, HyperNodes: map[string]int{"s0": 2}, Within: "s0", Nodes: []string{"kwok-node-0"}, Leaves: []string{"s0"}, Reason: "Placed"},
		wantCPU: e2eResult{Bound: 2, Within: "s1", Reason: "Placed"},
		differs: whyNotPending},
	"1.3-as-titled": {upstream: e2eNetworkTopology13 + " Case 1.3, every tier-1 HyperNode with room for one pod",
		fill:     oneSlotPerLeaf,
		replicas: 2, cpus: 2, networkTopology: "{mode: hard, highestTierAllowed: 1}",
		volcano: "pending",
		want:    e2eResult{Reason: "TierLimit"},
		wantCPU: e2eResult{Reason: "TierLimit"}},
	"2.1": {upstream: e2eNetworkTopology13 + " Case 2.1 (unchanged in v1.14.0)",
		fill:     []filler{{0, 4}, {2, 4}, {4, 4}, {6, 4}, {5, 1}},
		replicas: 2, cpus: 2, networkTopology: "{mode: hard, highestTierAllowed: 2}",
		volcano: "running on kwok-node-5 and kwok-node-7 (tier-2 s5)",
		want:    e2eResult{Bound: 2, HyperNodes: map[string]int{"s0": 2}, Within: "s0", Nodes: []string{"kwok-node-0"}, Leaves: []string{"s0"}, Reason: "Placed"},
		wantCPU: e2eResult{Bound: 2, Within: "s5", Reason: "Placed"},
		differs: "nics: tighter (one leaf, upstream spans two tier-1 HyperNodes), " + whyNICOrder + "; cpu: within s5 as upstream, " + whyDomainOrder + " (every tier-1 HyperNode still holds the job)"},
	"2.1-as-titled": {upstream: e2eNetworkTopology13 + " Case 2.1, every tier-1 HyperNode with room for one pod",
		fill:     oneSlotPerLeaf,
		replicas: 2, cpus: 2, networkTopology: "{mode: hard, highestTierAllowed: 2}",
		volcano: "running within one tier-2 HyperNode",
		want:    e2eResult{Bound: 2, HyperNodes: map[string]int{"s0": 1, "s1": 1}, Within: "s4", Nodes: []string{"kwok-node-1", "kwok-node-3"}, Leaves: []string{"s0", "s1"}, Reason: "Placed"},
		wantCPU: e2eResult{Bound: 2, Within: "s4", Reason: "Placed"}},
	"2.2": {upstream: e2eNetworkTopology13 + " Case 2.2 (unchanged in v1.14.0)",
		fill:     []filler{{0, 4}, {1, 4}, {2, 4}, {4, 4}, {5, 1}, {6, 1}},
		replicas: 2, cpus: 2, networkTopology: "{mode: hard, highestTierAllowed: 2}",
		volcano: "pending",
		want:    e2eResult{Bound: 2, HyperNodes: map[string]int{"s0": 2}, Within: "s0", Nodes: []string{"kwok-node-0"}, Leaves: []string{"s0"}, Reason: "Placed"},
		wantCPU: e2eResult{Bound: 2, Within: "s4", Reason: "Placed"},
		differs: whyNotPending},
	"2.2-as-titled": {upstream: e2eNetworkTopology13 + " Case 2.2, each tier-2 HyperNode with room for one pod",
		fill:     oneSlotPerS1,
		replicas: 2, cpus: 2, networkTopology: "{mode: hard, highestTierAllowed: 2}",
		volcano: "pending",
		want:    e2eResult{Reason: "TierLimit"},
		wantCPU: e2eResult{Reason: "TierLimit"}},
	"2.3": {upstream: e2eNetworkTopology13 + " Case 2.3 (unchanged in v1.14.0)",
		fill:     []filler{{0, 1}},
		replicas: 2, cpus: 2, networkTopology: "{mode: hard, highestTierAllowed: 1}",
		volcano: "running on kwok-node-0 and kwok-node-1 (s0); a pod killed is re-created there",
		want:    e2eResult{Bound: 2, HyperNodes: map[string]int{"s0": 2}, Within: "s0", Nodes: []string{"kwok-node-0"}, Leaves: []string{"s0"}, Reason: "Placed"},
		wantCPU: e2eResult{Bound: 2, Within: "s0", Reason: "Placed"},
		kill:    true},
	"3.1": {upstream: e2eNetworkTopology13 + " Case 3.1 (unchanged in v1.14.0)",
		fill:     []filler{{0, 6}, {2, 6}, {4, 6}, {6, 6}, {1, 4}, {3, 4}, {5, 5}, {7, 4}},
		replicas: 2, cpus: 2, networkTopology: "{mode: soft}",
		volcano: "running on kwok-node-5 and kwok-node-7 (s5)",
		want:    e2eResult{Bound: 2, HyperNodes: map[string]int{"s0": 2}, Within: "s0", Nodes: []string{"kwok-node-1"}, Leaves: []string{"s0"}, Reason: "Placed"},
		wantCPU: e2eResult{Bound: 2}, softCPU: true,
		differs: "tighter: one tier-1 HyperNode (s0's kwok-node-1 holds two pods of 2 CPUs); cpu: soft limits nothing, placed as allocate places it"},
	"3.1-as-titled": {upstream: e2eNetworkTopology13 + " Case 3.1, each tier-2 HyperNode with room for one pod",
		fill:     oneSlotPerS1,
		replicas: 2, cpus: 2, networkTopology: "{mode: soft}",
		volcano: "running across tier 2",
		want:    e2eResult{Bound: 2, HyperNodes: map[string]int{"s1": 1, "s3": 1}, Within: "s6", Nodes: []string{"kwok-node-3", "kwok-node-7"}, Leaves: []string{"s1", "s3"}, Reason: "Placed"},
		wantCPU: e2eResult{Bound: 2}, softCPU: true},
	"5.2": {upstream: e2eTaskTopology14 + " Case 5.2",
		fill:     []filler{{0, 3}, {2, 3}, {4, 6}, {5, 6}, {6, 6}, {7, 6}},
		replicas: 4, cpus: 3, networkTopology: "{mode: hard, highestTierAllowed: 2}",
		partitionPolicy: "{totalPartitions: 2, partitionSize: 2, networkTopology: {mode: hard, highestTierAllowed: 1}}",
		volcano:         "running: two pods in s0, two in s1 (three each with the running ones; six in s4)",
		want: e2eResult{Bound: 4, HyperNodes: map[string]int{"s0": 2, "s1": 2}, Within: "s4", Nodes: []string{"kwok-node-1", "kwok-node-3"},
			Leaves: []string{"s0", "s1"}, Partitions: []string{"s0", "s1"}, Reason: "Placed"},
		wantCPU: e2eResult{Bound: 4, Within: "s4", Partitions: []string{"s0", "s1"}, Reason: "Placed"}},
}

// oneSlotPerLeaf leaves room for one pod of 2 CPUs in each tier-1
// HyperNode (on its second node); oneSlotPerS1 in each tier-2 one.
var (
	oneSlotPerLeaf = []filler{{0, 8}, {1, 6}, {2, 8}, {3, 6}, {4, 8}, {5, 6}, {6, 8}, {7, 6}}
	oneSlotPerS1   = []filler{{0, 8}, {1, 8}, {2, 8}, {3, 6}, {4, 8}, {5, 8}, {6, 8}, {7, 6}}
)

// e2eScenario starts the simulator on a case's cluster and job, and
// returns it with the job's name.
func e2eScenario(t *testing.T, id string, tc e2eCase, noNIC bool) (*simtest.Scenario, string, *workload.Set) {
	t.Helper()
	job := "job-" + strings.NewReplacer(".", "-", "@", "-").Replace(id)
	set, err := workload.LoadWorkload(job+".yaml", []byte(e2eJob(job, tc.replicas, tc.cpus, tc.networkTopology, tc.partitionPolicy, noNIC)))
	if err != nil {
		t.Fatal(err)
	}
	nodes, cnrs, hyper := e2eFabric()
	fillPG, fill := fillerPods(tc.fill)
	st := &setup{conf: config.SchedulerConf}
	pluginArgs("s1Source: "+string(topology.S1FromHyperNode))(t, st)
	sc := simtest.Start(t, st.conf, simtest.Cluster{Nodes: nodes, CNRs: cnrs, HyperNodes: hyper,
		PodGroups: append([]*schedulingv1beta1.PodGroup{fillPG}, set.PodGroups...), Pods: append(fill, set.Pods...),
		VolcanoJobTasks: set.VolcanoJobTasks, Native: set.Native}, sim.Options{})
	return sc, job, set
}

// e2eResultOf returns where the job's pods are bound (binds: by pod, over
// the sessions so far) and the reason of its PodGroup's condition.
func e2eResultOf(binds map[string]*sim.BindRecord, job string, pg *schedulingv1beta1.PodGroup) e2eResult {
	r := e2eResult{}
	if pg != nil {
		for _, c := range pg.Status.Conditions {
			if string(c.Type) == string(rdmatopology.ConditionType) {
				r.Reason = c.Reason
			}
		}
	}
	leaves := map[string]bool{}
	for name, b := range binds {
		if !strings.HasPrefix(name, "ns/"+job+"-") {
			continue
		}
		r.Bound++
		if r.HyperNodes == nil {
			r.HyperNodes = map[string]int{}
		}
		r.HyperNodes[e2eHyperNodeOf(b.Node)]++
		if !containsNode(r.Nodes, b.Node) {
			r.Nodes = append(r.Nodes, b.Node)
		}
		if s0, ok := b.Pod.Annotations[ledger.AnnotationS0]; ok {
			for _, l := range strings.Split(s0, ",") {
				leaves[l] = true
			}
		}
	}
	for l := range leaves {
		r.Leaves = append(r.Leaves, l)
	}
	sort.Strings(r.Leaves)
	sort.Strings(r.Nodes)
	r.Within = e2eWithin(r.Nodes)
	parts := map[string][]string{}
	for name, b := range binds {
		if id, ok := b.Pod.Labels[placement.PartitionIDLabel]; ok && strings.HasPrefix(name, "ns/"+job+"-") {
			parts[id] = append(parts[id], b.Node)
		}
	}
	ids := make([]string, 0, len(parts))
	for id := range parts {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		r.Partitions = append(r.Partitions, e2eWithin(parts[id]))
	}
	return r
}

// e2eWithin returns the tightest HyperNode of the tree holding every node
// ("" for none).
func e2eWithin(nodes []string) string {
	if len(nodes) == 0 {
		return ""
	}
	tier1, tier2 := map[string]bool{}, map[string]bool{}
	for _, n := range nodes {
		h := e2eHyperNodeOf(n)
		tier1[h] = true
		if h == "s0" || h == "s1" {
			tier2["s4"] = true
		} else {
			tier2["s5"] = true
		}
	}
	switch {
	case len(tier1) == 1:
		for h := range tier1 {
			return h
		}
	case len(tier2) == 1:
		for h := range tier2 {
			return h
		}
	}
	return "s6"
}

func containsNode(nodes []string, n string) bool {
	for _, m := range nodes {
		if m == n {
			return true
		}
	}
	return false
}

// cpuView keeps of the result of pods without NICs what rdmatopo decides:
// how many are bound, the HyperNode they stay within (unless the row's job
// is soft, which limits nothing: allocate's random ties decide) and the
// condition. Which nodes of that HyperNode they take is allocate's choice,
// among equal nodes at random.
func cpuView(variant string, tc e2eCase, r e2eResult) e2eResult {
	if variant != "cpu" {
		return r
	}
	r.HyperNodes, r.Nodes = nil, nil
	switch {
	case tc.softCPU:
		r.Within = ""
	case e2eHolds(tc.wantCPU.Within, r.Within):
		// Within the HyperNode the row names, the pods may by chance
		// sit tighter.
		r.Within = tc.wantCPU.Within
	}
	return r
}

// e2eHolds reports whether HyperNode outer holds HyperNode inner.
func e2eHolds(outer, inner string) bool {
	parent := map[string]string{"s0": "s4", "s1": "s4", "s2": "s5", "s3": "s5", "s4": "s6", "s5": "s6"}
	for h := inner; h != ""; h = parent[h] {
		if h == outer {
			return true
		}
	}
	return false
}

// TestVolcanoHyperNodeE2E runs each ported case for two sessions (upstream
// waits for the job to run, or checks that it stays pending), the job's
// pods with one NIC each and as upstream's are (CPU and memory only), and
// checks rdmatopo's placement and its PodGroup condition's reason against
// the row's.
func TestVolcanoHyperNodeE2E(t *testing.T) {
	for id, tc := range e2eCases {
		for _, variant := range []string{"nics", "cpu"} {
			want := tc.want
			if variant == "cpu" {
				want = tc.wantCPU
			}
			t.Run(id+"/"+variant, func(t *testing.T) {
				sc, job, set := e2eScenario(t, id, tc, variant == "cpu")
				binds := map[string]*sim.BindRecord{}
				var last *simtest.Outcome
				for i := 0; i < 2; i++ {
					last = sc.Session()
					for k, b := range last.Binds {
						binds[k] = b
					}
				}
				pg := last.PodGroups[set.PodGroups[0].Namespace+"/"+set.PodGroups[0].Name]
				got := cpuView(variant, tc, e2eResultOf(binds, job, pg))
				if diff := cmp.Diff(want, got); diff != "" {
					t.Errorf("%s: Volcano: %s; rdmatopo differs: %s\nrdmatopo (-want,+got):\n%s\ncondition: %q", tc.upstream, tc.volcano, tc.differs, diff, condition(pg))
				}
				if !tc.kill {
					return
				}
				killed := set.Pods[0].DeepCopy()
				sc.Finish(killed.Namespace + "/" + killed.Name)
				delete(binds, killed.Namespace+"/"+killed.Name)
				killed.UID += "-2"
				addPods(t, sc, killed)
				o := sc.Session()
				for k, b := range o.Binds {
					binds[k] = b
				}
				if _, ok := o.Binds[killed.Namespace+"/"+killed.Name]; !ok {
					t.Errorf("%s: %s killed and re-created is not bound again; condition %q", tc.upstream, killed.Name, condition(pg))
				}
				pg = o.PodGroups[pg.Namespace+"/"+pg.Name]
				if diff := cmp.Diff(want, cpuView(variant, tc, e2eResultOf(binds, job, pg))); diff != "" {
					t.Errorf("%s: after %s was killed and re-created: Volcano: %s\nrdmatopo (-want,+got):\n%s", tc.upstream, killed.Name, tc.volcano, diff)
				}
			})
		}
	}
}
