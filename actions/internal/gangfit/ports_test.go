package gangfit

import (
	"fmt"
	"slices"
	"sort"
	"testing"

	corev1 "k8s.io/api/core/v1"
	schedulingv1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"
	"volcano.sh/volcano/pkg/scheduler/api"
	"volcano.sh/volcano/pkg/scheduler/conf"
	"volcano.sh/volcano/pkg/scheduler/framework"
	"volcano.sh/volcano/pkg/scheduler/plugins/predicates"
	"volcano.sh/volcano/pkg/scheduler/uthelper"
	"volcano.sh/volcano/pkg/scheduler/util"

	"github.com/rdmatopo/rdmatopo/internal/testing/builders"
)

// portsPod is the pod w builds, its first container declaring the given
// ports (protocol and host IP as given).
func portsPod(w *builders.PodWrapper, ports ...corev1.ContainerPort) *corev1.Pod {
	p := w.Obj()
	p.Spec.Containers[0].Ports = ports
	return p
}

// cpuPod builds a pod requesting one CPU.
func cpuPod(name string) *builders.PodWrapper {
	return builders.MakePod("ns", name).UID("uid-"+name).Req("cpu", "1")
}

func tcp(port int32) corev1.ContainerPort {
	return corev1.ContainerPort{ContainerPort: port, HostPort: port, Protocol: corev1.ProtocolTCP}
}

// TestPortedGroups: the node set of pods with host ports, derived from the
// group of the same pods without them, is what a walk of Volcano's
// predicate chain for the pods themselves answers on every node: a node
// whose pods hold the port (same number and protocol, any address) is
// refused, another protocol or port is not, and what the pods' selector
// refuses stays refused; in both readings (allocate, preempt) and after a
// pod taking the port is placed in the session. The group of the pods
// without ports is walked first, as a session would: Volcano's
// predicates plugin remembers by pod name which checks to skip, so the
// copy must not switch off the port check of the pod itself. Refusals
// lists exactly the nodes the set does not admit.
func TestPortedGroups(t *testing.T) {
	t.Cleanup(func() { framework.RegisterPluginBuilder(predicates.PluginName, predicates.New) })
	var nodes []*corev1.Node
	for i, name := range []string{"n0", "n1", "n2", "n3", "n4", "n5", "n6", "n7"} {
		w := builders.MakeNode(name).CPU("16").Resource(corev1.ResourcePods, "110")
		if i%2 == 0 {
			w = w.Label("pool", "a")
		}
		nodes = append(nodes, w.Obj())
	}
	running := func(name, node string, ports ...corev1.ContainerPort) *corev1.Pod {
		return portsPod(cpuPod(name).Node(node).Phase(corev1.PodRunning), ports...)
	}
	udp := tcp(29500)
	udp.Protocol = corev1.ProtocolUDP
	onIP := tcp(29500)
	onIP.HostIP = "10.0.0.1"
	pods := []*corev1.Pod{
		running("r1", "n1", tcp(29500)),
		running("r2", "n2", udp),
		running("r3", "n3", tcp(29501)),
		running("r4", "n4", onIP),
		running("r6", "n6", tcp(29502), tcp(29500)),
	}
	selectA := func(p *corev1.Pod) *corev1.Pod { p.Spec.NodeSelector = map[string]string{"pool": "a"}; return p }
	// later is pending in its own job; a case allocates it on n0.
	later := portsPod(cpuPod("later").Group("pg-later"), tcp(29503))
	cases := []struct {
		name string
		pod  *corev1.Pod
		// placed is a pod allocated on n0 in the session before the group
		// is asked again.
		placed *corev1.Pod
	}{
		{name: "one port", pod: portsPod(cpuPod("a"), tcp(29500))},
		{name: "port and selector", pod: selectA(portsPod(cpuPod("b"), tcp(29500)))},
		{name: "two ports", pod: portsPod(cpuPod("c"), tcp(29501), tcp(29502))},
		{name: "port no pod holds", pod: portsPod(cpuPod("d"), tcp(30000))},
		{name: "a pod takes the port", pod: portsPod(cpuPod("e"), tcp(29503)), placed: later},
	}
	for _, mode := range []Mode{ForAllocate, ForPreempt} {
		for _, tc := range cases {
			t.Run(fmt.Sprintf("%s/mode %d", tc.name, mode), func(t *testing.T) {
				test := uthelper.TestCommonStruct{
					Plugins: map[string]framework.PluginBuilder{predicates.PluginName: predicates.New},
					Nodes:   nodes, Pods: copies(append(slices.Clone(pods), later)),
					PodGroups: []*schedulingv1.PodGroup{util.BuildPodGroup("pg-later", "ns", "q", 1, nil, schedulingv1.PodGroupInqueue)},
					Queues:    []*schedulingv1.Queue{util.BuildQueue("q", 1, nil)},
				}
				trueValue := true
				ssn := test.RegisterSession([]conf.Tier{{Plugins: []conf.PluginOption{
					{Name: predicates.PluginName, EnabledPredicate: &trueValue}}}}, nil)
				defer test.Close()
				n := &Nodes{ssn: ssn, topo: noPlugin{}, mode: mode, groups: map[[32]byte]int{}}
				for _, node := range nodes {
					n.fabric = append(n.fabric, node.Name)
				}
				sort.Strings(n.fabric)
				n.usable = len(n.fabric)
				task := api.NewTaskInfo(tc.pod)
				g := n.Group(task)
				if n.sets[g].base == nil {
					t.Fatalf("group of a pod with host ports has no base")
				}
				check := func() {
					t.Helper()
					walked := n.compute(&group{rep: task})
					var got, want []string
					for _, name := range n.fabric {
						if n.Allowed(name, g) {
							got = append(got, name)
						}
						if walked.allowed[name] {
							want = append(want, name)
						}
					}
					if !slices.Equal(got, want) {
						t.Errorf("mode %d: derived set %v, the chain admits %v", mode, got, want)
					}
					for _, name := range n.fabric {
						if _, refused := n.Refusals(g)[name]; refused == slices.Contains(got, name) {
							t.Errorf("mode %d: Refusals has %s = %v, the set admits it = %v", mode, name, refused, slices.Contains(got, name))
						}
					}
					if n.sets[g].all != walked.all {
						t.Errorf("mode %d: all = %v, want %v", mode, n.sets[g].all, walked.all)
					}
				}
				check()
				if tc.placed != nil {
					// Allocated through a statement, so the predicates
					// plugin's view of n0 takes the pod's port too.
					var placed *api.TaskInfo
					for _, job := range ssn.Jobs {
						for _, task := range job.Tasks {
							if task.Name == tc.placed.Name {
								placed = task
							}
						}
					}
					if placed == nil {
						t.Fatalf("pod %s is not in the session", tc.placed.Name)
					}
					if err := framework.NewStatement(ssn).Allocate(placed, ssn.Nodes["n0"]); err != nil {
						t.Fatal(err)
					}
					n.touched = append(n.touched, "n0")
					n.Changed([]*api.TaskInfo{placed})
					check()
					// Preempt reads a port conflict as one evictions resolve.
					if got := n.Allowed("n0", g); got != (mode == ForPreempt) {
						t.Errorf("mode %d: n0 admitted = %v after a pod took the port there", mode, got)
					}
				}
			})
		}
	}
}

// copies deep-copies pods: a session changes the pods it places.
func copies(pods []*corev1.Pod) []*corev1.Pod {
	out := make([]*corev1.Pod, len(pods))
	for i, p := range pods {
		out[i] = p.DeepCopy()
	}
	return out
}
