package gangfit

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"volcano.sh/volcano/pkg/scheduler/api"
	"volcano.sh/volcano/pkg/scheduler/conf"
	"volcano.sh/volcano/pkg/scheduler/framework"

	"github.com/rdmatopo/rdmatopo/internal/testing/builders"
)

// TestCarryFollowsConf: the node sets an action carries are kept from one
// session to the next while the conf's tiers stay as they were, and
// emptied when a plugin, its predicates or its arguments change.
func TestCarryFollowsConf(t *testing.T) {
	on, off := true, false
	tiers := func(predicates *bool, args map[string]interface{}) []conf.Tier {
		return []conf.Tier{{Plugins: []conf.PluginOption{
			{Name: "gang"},
			{Name: "predicates", EnabledPredicate: predicates, Arguments: args},
		}}}
	}
	base := tiers(&on, map[string]interface{}{"predicate.CacheEnable": true})
	tests := []struct {
		name string
		next []conf.Tier
		kept bool
	}{
		{"same conf", tiers(&on, map[string]interface{}{"predicate.CacheEnable": true}), true},
		{"argument changed", tiers(&on, map[string]interface{}{"predicate.CacheEnable": false}), false},
		{"predicates disabled", tiers(&off, map[string]interface{}{"predicate.CacheEnable": true}), false},
		{"plugin added", append(tiers(&on, map[string]interface{}{"predicate.CacheEnable": true}),
			conf.Tier{Plugins: []conf.PluginOption{{Name: "binpack"}}}), false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var c Carry
			first := (&Nodes{ssn: &framework.Session{Tiers: base}}).openCarry(&c)
			if first != &c {
				t.Fatalf("openCarry did not take the action's carry")
			}
			c.sets[[32]byte{1}] = &carriedSet{allowed: map[string]bool{"n1": true}}
			(&Nodes{ssn: &framework.Session{Tiers: tc.next}}).openCarry(&c)
			if _, kept := c.sets[[32]byte{1}]; kept != tc.kept {
				t.Errorf("set kept = %v, want %v", kept, tc.kept)
			}
		})
	}
}

// TestNodeInputsByVersion: a node's inputs are the same while its Node and
// pods keep their versions, whether the session holds the informer's
// objects or copies of them, and differ once any is written again or a
// pod's status in the session changes. Objects no API server stored are
// the same only as the same objects.
func TestNodeInputsByVersion(t *testing.T) {
	node := builders.MakeNode("n1").Obj()
	node.UID, node.ResourceVersion = "node-uid", "10"
	pod := builders.MakePod("ns", "p").Node("n1").Obj()
	pod.UID, pod.ResourceVersion = "pod-uid", "11"
	unstored := builders.MakePod("ns", "q").Node("n1").Obj()
	unstored.UID = "q-uid"

	info := func(n *corev1.Node, status api.TaskStatus, pods ...*corev1.Pod) *api.NodeInfo {
		ni := api.NewNodeInfo(n)
		for _, p := range pods {
			task := api.NewTaskInfo(p)
			task.Status = status
			ni.Tasks[task.UID] = task
		}
		return ni
	}
	written := func(p *corev1.Pod, rv string) *corev1.Pod {
		c := p.DeepCopy()
		c.ResourceVersion = rv
		return c
	}
	writtenNode := node.DeepCopy()
	writtenNode.ResourceVersion = "12"
	base := info(node, api.Running, pod, unstored)
	tests := []struct {
		name string
		next *api.NodeInfo
		same bool
	}{
		{"the same objects", info(node, api.Running, pod, unstored), true},
		{"copies of stored objects", info(node.DeepCopy(), api.Running, pod.DeepCopy(), unstored), true},
		{"a pod written again", info(node, api.Running, written(pod, "13"), unstored), false},
		{"the Node written again", info(writtenNode, api.Running, pod, unstored), false},
		{"a pod's status in the session", info(node, api.Allocated, pod, unstored), false},
		{"a pod gone", info(node, api.Running, pod), false},
		{"a copy of an unstored pod", info(node, api.Running, pod, unstored.DeepCopy()), false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := inputsOf(base, nil).equal(inputsOf(tc.next, nil)); got != tc.same {
				t.Errorf("same inputs = %v, want %v", got, tc.same)
			}
		})
	}
}
