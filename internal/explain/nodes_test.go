package explain

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"volcano.sh/volcano/pkg/scheduler/api"

	"github.com/rdmatopo/rdmatopo/core/placement"
	"github.com/rdmatopo/rdmatopo/internal/testing/builders"
	"github.com/rdmatopo/rdmatopo/internal/workload"
	"github.com/rdmatopo/rdmatopo/plugins/rdmatopology"
)

// The tests of this file hold explain's reading of nodes and pods, which
// kubectl-rdmatopo makes without linking Volcano, to the reading of
// Volcano's own cache types (NodeInfo, TaskInfo) and the plugin's
// conversion of them (rdmatopology.NodeCap, rdmatopology.ShapeOf): a
// Volcano upgrade that counts otherwise fails them.

const (
	gpuRes  = builders.GPUResource
	rdmaRes = builders.RDMAResource
	gpuKey  = string(builders.GPUResource)
	rdmaKey = string(builders.RDMAResource)
)

func rl(kv ...string) corev1.ResourceList {
	out := corev1.ResourceList{}
	for i := 0; i+1 < len(kv); i += 2 {
		out[corev1.ResourceName(kv[i])] = resource.MustParse(kv[i+1])
	}
	return out
}

// edgePods are pods whose charge differs by how overhead, init
// containers, sidecars and fractional quantities are counted.
func edgePods() map[string]*corev1.Pod {
	overhead := func(p *corev1.Pod, l corev1.ResourceList) *corev1.Pod { p.Spec.Overhead = l; return p }
	return map[string]*corev1.Pod{
		"plain": builders.MakePod("ns", "plain").Req(gpuRes, "4").Req(rdmaRes, "2").Req(corev1.ResourceCPU, "8").Obj(),
		"several containers": builders.MakePod("ns", "several").Req(gpuRes, "2").Req(rdmaRes, "1").
			Container("b", rl(gpuKey, "2", rdmaKey, "1", "cpu", "500m")).Obj(),
		"init larger than containers": builders.MakePod("ns", "init").Req(gpuRes, "1").Req(corev1.ResourceCPU, "1").
			InitContainer("setup", rl(gpuKey, "4", "cpu", "6")).Obj(),
		"overhead, containers larger": overhead(builders.MakePod("ns", "oh").Req(gpuRes, "4").Req(corev1.ResourceCPU, "4").Obj(),
			rl("cpu", "250m")),
		"overhead, init larger": overhead(builders.MakePod("ns", "ohinit").Req(gpuRes, "1").Req(corev1.ResourceCPU, "1").
			InitContainer("setup", rl("cpu", "4", rdmaKey, "2")).Obj(), rl("cpu", "250m", rdmaKey, "1")),
		"sidecars before and after init": builders.MakePod("ns", "side").Req(gpuRes, "2").Req(rdmaRes, "1").
			Sidecar("proxy", rl("cpu", "1", rdmaKey, "1")).InitContainer("setup", rl("cpu", "3", gpuKey, "3")).
			Sidecar("log", rl("cpu", "500m")).Obj(),
		"fractional count": builders.MakePod("ns", "frac").Req(gpuRes, "1500m").Req(rdmaRes, "2").Req(corev1.ResourceCPU, "100m").Obj(),
		"no requests":      builders.MakePod("ns", "empty").Obj(),
	}
}

// TestSessionShapeAgreesWithVolcano: a pending pod's shape is the one the
// plugin reads from Volcano's TaskInfo.
func TestSessionShapeAgreesWithVolcano(t *testing.T) {
	for name, p := range edgePods() {
		t.Run(name, func(t *testing.T) {
			want := rdmatopology.ShapeOf(p, api.NewTaskInfo(p).InitResreq, gpuRes, rdmaRes)
			if diff := cmp.Diff(want, sessionShape(p, gpuRes, rdmaRes)); diff != "" {
				t.Errorf("shape differs from Volcano's (-volcano,+explain):\n%s", diff)
			}
		})
	}
}

// TestSessionNodesAgreeWithVolcano: the nodes of a session, their idle
// GPUs, NICs and CPU and which are in, are those Volcano's NodeInfo gives
// with the same pods on them.
func TestSessionNodesAgreeWithVolcano(t *testing.T) {
	node := func(name string) *builders.NodeWrapper {
		return builders.MakeNode(name).GPU(8).RDMA(4).CPU("64")
	}
	over := node("oversubscribed").Obj()
	over.Annotations = map[string]string{oversubscriptionCPU: "2500"}
	badOver := node("bad-oversubscription").Obj()
	badOver.Annotations = map[string]string{oversubscriptionCPU: "lots"}
	nodes := []*corev1.Node{
		node("no-condition").Obj(), node("ready").Ready(corev1.ConditionTrue).Obj(),
		node("not-ready").Ready(corev1.ConditionFalse).Obj(), node("unknown").Ready(corev1.ConditionUnknown).Obj(),
		node("cordoned").Cordon().Obj(), node("overcommitted").Obj(), over, badOver,
	}
	var pods []*corev1.Pod
	for _, p := range edgePods() {
		p.Spec.NodeName = "ready"
		p.Status.Phase = corev1.PodRunning
		pods = append(pods, p)
	}
	at := func(p *corev1.Pod, node string, phase corev1.PodPhase) *corev1.Pod {
		p.Spec.NodeName = node
		p.Status.Phase = phase
		return p
	}
	dup := at(builders.MakePod("ns", "twice").Req(gpuRes, "2").Obj(), "no-condition", corev1.PodRunning)
	pods = append(pods,
		dup, dup.DeepCopy(),
		at(builders.MakePod("ns", "done").Req(gpuRes, "8").Obj(), "no-condition", corev1.PodSucceeded),
		at(builders.MakePod("ns", "failed").Req(rdmaRes, "4").Obj(), "no-condition", corev1.PodFailed),
		at(builders.MakePod("ns", "unknown-phase").Req(rdmaRes, "1").Obj(), "no-condition", ""),
		at(builders.MakePod("ns", "big-1").Req(gpuRes, "6").Req(corev1.ResourceCPU, "40").Obj(), "overcommitted", corev1.PodRunning),
		at(builders.MakePod("ns", "big-2").Req(gpuRes, "6").Req(corev1.ResourceCPU, "40").Obj(), "overcommitted", corev1.PodRunning),
		at(builders.MakePod("ns", "cpu").Req(corev1.ResourceCPU, "1").Obj(), "oversubscribed", corev1.PodRunning),
		at(builders.MakePod("ns", "elsewhere").Req(gpuRes, "1").Obj(), "no-such-node", corev1.PodRunning),
	)
	// Volcano's cache: a NodeInfo per Node, the unfinished pods added as
	// tasks, the Ready ones kept.
	infos := map[string]*api.NodeInfo{}
	for _, n := range nodes {
		infos[n.Name] = api.NewNodeInfo(n)
	}
	for _, p := range pods {
		ni, ok := infos[p.Spec.NodeName]
		if !ok {
			continue
		}
		task := api.NewTaskInfo(p)
		if task.Status == api.Succeeded || task.Status == api.Failed {
			continue
		}
		_ = ni.AddTask(task) // a pod listed twice is counted once
	}
	want := map[string]placement.Cap{}
	for name, ni := range infos {
		if ni.Ready() {
			want[name] = rdmatopology.NodeCap(ni, gpuRes, rdmaRes)
		}
	}
	got := map[string]placement.Cap{}
	for name, n := range sessionNodes(&workload.Cluster{Nodes: nodes, Pods: pods}, gpuRes, rdmaRes) {
		got[name] = n.free
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("session nodes differ from Volcano's NodeInfos (-volcano,+explain):\n%s", diff)
	}
	if len(got) != 6 {
		t.Errorf("%d nodes in the session, want 6 (not-ready and unknown left out)", len(got))
	}
}
