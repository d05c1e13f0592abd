package gangfit

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"volcano.sh/volcano/pkg/scheduler/api"
	"volcano.sh/volcano/pkg/scheduler/framework"

	"github.com/rdmatopo/rdmatopo/core/placement"
	"github.com/rdmatopo/rdmatopo/core/preemption"
	"github.com/rdmatopo/rdmatopo/internal/testing/builders"
)

// admitPod builds a pod of the gang requesting 1 GPU, 1 NIC and mem.
func admitPod(name, mem string, mutate ...func(*corev1.Pod)) *corev1.Pod {
	p := builders.MakePod("ns", name).UID("uid-"+name).Req("cpu", "1").Req("memory", mem).
		Req(builders.GPUResource, "1").Req(builders.RDMAResource, "1").Obj()
	for _, m := range mutate {
		m(p)
	}
	return p
}

func withPort(port int32) func(*corev1.Pod) {
	return func(p *corev1.Pod) {
		p.Spec.Containers[0].Ports = []corev1.ContainerPort{{ContainerPort: port, HostPort: port, Protocol: corev1.ProtocolTCP}}
	}
}

func withAntiAffinity(p *corev1.Pod) {
	p.Labels = map[string]string{"app": "x"}
	p.Spec.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{
		RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
			LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "x"}},
			TopologyKey:   corev1.LabelHostname,
		}}}}
}

func TestAdmit(t *testing.T) {
	cases := map[string]struct {
		mode Mode
		// pods is the gang; the first len-1 are on the node already in
		// this plan, the last is asked about.
		pods []*corev1.Pod
		// maxPods is the node's pods allocatable; running are pods on the
		// node already, victims the subset evicted (preempt).
		maxPods string
		running []*corev1.Pod
		victims int
		// held is memory another gang's preemption hold keeps on the node.
		held string
		want bool
	}{
		"fits":                   {pods: []*corev1.Pod{admitPod("a", "100Gi"), admitPod("b", "100Gi")}, want: true},
		"memory admits one":      {pods: []*corev1.Pod{admitPod("a", "300Gi"), admitPod("b", "300Gi")}, want: false},
		"memory of running pods": {pods: []*corev1.Pod{admitPod("b", "300Gi")}, running: []*corev1.Pod{admitPod("r", "300Gi")}, want: false},
		"preempt: a victim frees its memory": {mode: ForPreempt, pods: []*corev1.Pod{admitPod("b", "300Gi")},
			running: []*corev1.Pod{admitPod("r", "300Gi")}, victims: 1, want: true},
		"preempt: a pod that stays keeps its memory": {mode: ForPreempt, pods: []*corev1.Pod{admitPod("b", "300Gi")},
			running: []*corev1.Pod{admitPod("r", "300Gi")}, want: false},
		"memory held for a preempting gang": {pods: []*corev1.Pod{admitPod("a", "200Gi"), admitPod("b", "200Gi")}, held: "200Gi", want: false},
		"memory held leaves room":           {pods: []*corev1.Pod{admitPod("a", "100Gi"), admitPod("b", "100Gi")}, held: "200Gi", want: true},
		"preempt: a hold on the node counts": {mode: ForPreempt, pods: []*corev1.Pod{admitPod("b", "300Gi")},
			running: []*corev1.Pod{admitPod("r", "300Gi")}, victims: 1, held: "300Gi", want: false},
		"pod limit":        {maxPods: "2", pods: []*corev1.Pod{admitPod("a", "1Gi"), admitPod("b", "1Gi")}, running: []*corev1.Pod{admitPod("r", "1Gi")}, want: false},
		"pod limit holds":  {maxPods: "2", pods: []*corev1.Pod{admitPod("a", "1Gi"), admitPod("b", "1Gi")}, want: true},
		"same host port":   {pods: []*corev1.Pod{admitPod("a", "1Gi", withPort(29500)), admitPod("b", "1Gi", withPort(29500))}, want: false},
		"other host ports": {pods: []*corev1.Pod{admitPod("a", "1Gi", withPort(29500)), admitPod("b", "1Gi", withPort(29501))}, want: true},
		"anti-affinity on the hostname": {pods: []*corev1.Pod{admitPod("a", "1Gi", withAntiAffinity), admitPod("b", "1Gi", withAntiAffinity)},
			want: false},
		"anti-affinity of the pod placed first only": {pods: []*corev1.Pod{admitPod("a", "1Gi", withAntiAffinity),
			admitPod("b", "1Gi", func(p *corev1.Pod) { p.Labels = map[string]string{"app": "x"} })}, want: false},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			maxPods := tc.maxPods
			if maxPods == "" {
				maxPods = "110"
			}
			node := builders.MakeNode("n1").GPU(8).RDMA(4).CPU("128").Resource("memory", "512Gi").
				Resource(corev1.ResourcePods, maxPods).Obj()
			ni := api.NewNodeInfo(node)
			var victims []*api.TaskInfo
			for i, p := range tc.running {
				p.Spec.NodeName = "n1"
				p.Status.Phase = corev1.PodRunning
				task := api.NewTaskInfo(p)
				if err := ni.AddTask(task); err != nil {
					t.Fatal(err)
				}
				if i < tc.victims {
					victims = append(victims, task)
				}
			}
			n := &Nodes{ssn: &framework.Session{Nodes: map[string]*api.NodeInfo{"n1": ni}}, mode: tc.mode}
			if tc.held != "" {
				q := resource.MustParse(tc.held)
				kept := []preemption.HoldTask{{UID: "held", Node: "n1", Resreq: preemption.Resources{Memory: float64(q.Value())}}}
				n.heldOn = func(_, node string) ([]preemption.HoldTask, string) {
					if node != "n1" {
						return nil, ""
					}
					return kept, "ns/holder"
				}
			}
			var tasks []*api.TaskInfo
			var on []placement.Pod
			for _, p := range tc.pods {
				tasks = append(tasks, api.NewTaskInfo(p))
			}
			for _, tk := range tasks[:len(tasks)-1] {
				on = append(on, placement.Pod{UID: string(tk.UID)})
			}
			last := placement.Pod{UID: string(tasks[len(tasks)-1].UID)}
			if got := n.Admit(tasks, victims)("n1", last, on); got != tc.want {
				t.Errorf("Admit = %v, want %v", got, tc.want)
			}
			if n.Admit(tasks, nil)("n2", last, nil) {
				t.Error("a node not in the session is admitted")
			}
		})
	}
}

// TestAdmitUnknownPod: a pod the admission was not built for is refused,
// not a panic.
func TestAdmitUnknownPod(t *testing.T) {
	ni := api.NewNodeInfo(builders.MakeNode("n1").GPU(8).CPU("128").Resource("memory", "1Gi").Obj())
	n := &Nodes{ssn: &framework.Session{Nodes: map[string]*api.NodeInfo{"n1": ni}}}
	if n.Admit(nil, nil)("n1", placement.Pod{UID: "nobody"}, nil) {
		t.Error("unknown pod admitted")
	}
}

// TestScratchResource checks that the reused resource of the admission is a
// copy of its source each time, as api.Resource.Clone makes one: the
// source is never written through it, nothing of an earlier source is left,
// and a source without scalars gives none (Volcano's Sub skips scalars then).
func TestScratchResource(t *testing.T) {
	gpu := corev1.ResourceName(builders.GPUResource)
	rdma := corev1.ResourceName(builders.RDMAResource)
	withScalars := &api.Resource{MilliCPU: 1000, Memory: 2, MaxTaskNum: 3,
		ScalarResources: map[corev1.ResourceName]float64{gpu: 4000, rdma: 2000}}
	onlyGPU := &api.Resource{MilliCPU: 5, ScalarResources: map[corev1.ResourceName]float64{gpu: 1000}}
	plain := &api.Resource{MilliCPU: 7, Memory: 8}
	var s Scratch
	for i, tc := range []struct {
		src  *api.Resource
		also *api.Resource // added after the copy, as the admission adds
	}{
		{src: withScalars, also: onlyGPU},
		{src: plain},
		{src: onlyGPU},
		{src: plain, also: withScalars},
		{src: withScalars},
	} {
		want := tc.src.Clone()
		before := tc.src.Clone()
		got := s.Set(tc.src)
		if tc.also != nil {
			got.Add(tc.also)
			want.Add(tc.also)
		}
		if got.MilliCPU != want.MilliCPU || got.Memory != want.Memory || got.MaxTaskNum != want.MaxTaskNum ||
			(got.ScalarResources == nil) != (want.ScalarResources == nil) || len(got.ScalarResources) != len(want.ScalarResources) {
			t.Fatalf("step %d: got %+v, want %+v", i, got, want)
		}
		for k, v := range want.ScalarResources {
			if got.ScalarResources[k] != v {
				t.Fatalf("step %d: %s = %v, want %v", i, k, got.ScalarResources[k], v)
			}
		}
		if !tc.src.Equal(before, api.Zero) || len(tc.src.ScalarResources) != len(before.ScalarResources) {
			t.Fatalf("step %d: the source changed: %+v, was %+v", i, tc.src, before)
		}
	}
}

// TestScratchFutureIdle: the scratch's future idle resources are the
// node's (NodeInfo.FutureIdle), with pods releasing and pipelined there,
// one node after another through one scratch, and leave the node as it
// was.
func TestScratchFutureIdle(t *testing.T) {
	node := func(name string, releasing, pipelined string) *api.NodeInfo {
		ni := api.NewNodeInfo(builders.MakeNode(name).GPU(8).RDMA(4).CPU("64").Resource("memory", "256Gi").Obj())
		for i, cpu := range []string{releasing, pipelined} {
			if cpu == "" {
				continue
			}
			p := builders.MakePod("ns", name+"-p"+cpu).UID(name+"-"+cpu).Node(name).Req("cpu", cpu).
				Req(builders.GPUResource, "2").Phase(corev1.PodRunning).Obj()
			task := api.NewTaskInfo(p)
			if i == 0 {
				task.Status = api.Releasing
			} else {
				task.Status = api.Pipelined
			}
			if err := ni.AddTask(task); err != nil {
				t.Fatal(err)
			}
		}
		return ni
	}
	var s Scratch
	for _, ni := range []*api.NodeInfo{node("idle", "", ""), node("releasing", "8", ""), node("pipelined", "", "4"),
		node("both", "8", "4"), node("idle-again", "", "")} {
		want := ni.FutureIdle()
		got := s.FutureIdle(ni)
		if !got.Equal(want, api.Zero) || len(got.ScalarResources) != len(want.ScalarResources) {
			t.Errorf("%s: FutureIdle = %v, want %v", ni.Name, got, want)
		}
		if after := ni.FutureIdle(); !after.Equal(want, api.Zero) {
			t.Errorf("%s: the node changed: %v, was %v", ni.Name, after, want)
		}
	}
}
