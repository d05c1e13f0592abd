package topologyallocate_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	v1 "k8s.io/api/core/v1"
	schedulingv1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"
	"volcano.sh/volcano/pkg/scheduler/api"
	"volcano.sh/volcano/pkg/scheduler/uthelper"
	"volcano.sh/volcano/pkg/scheduler/util"

	"github.com/rdmatopo/rdmatopo/internal/testing/builders"
)

// confValid reads the rdmatopo_conf_valid gauge from the default registry.
func confValid(t *testing.T) float64 {
	t.Helper()
	families, err := prometheus.DefaultGatherer.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() == "rdmatopo_conf_valid" && len(f.GetMetric()) == 1 {
			return f.GetMetric()[0].GetGauge().GetValue()
		}
	}
	t.Fatal("gauge rdmatopo_conf_valid is not registered")
	return -1
}

// TestWithoutTopologyPlugin: with topology-allocate but no rdma-topology
// in the tiers, pods requesting RDMA are refused (they would bind without
// NICs) and the gauge says the conf is invalid; other pods are scheduled as
// allocate does. With the plugin, the gauge is 1.
func TestWithoutTopologyPlugin(t *testing.T) {
	rdmaPod := func(ns, name, pg string) *v1.Pod {
		p := util.BuildPod(ns, name, "", v1.PodPending, api.BuildResourceList("1", "1G",
			api.ScalarResource{Name: string(builders.RDMAResource), Value: "1"}), pg, nil, nil)
		return p
	}
	build := func() uthelper.TestCommonStruct {
		return uthelper.TestCommonStruct{
			Name: "RDMA pods refused, CPU pods placed",
			PodGroups: []*schedulingv1.PodGroup{
				util.BuildPodGroup("rdma", "c1", "c1", 1, nil, schedulingv1.PodGroupInqueue),
				util.BuildPodGroup("cpu", "c1", "c1", 1, nil, schedulingv1.PodGroupInqueue),
			},
			Pods: []*v1.Pod{
				rdmaPod("c1", "rdma-p-1", "rdma"),
				util.BuildPod("c1", "cpu-p-1", "", v1.PodPending, api.BuildResourceList("1", "1G"), "cpu", nil, nil),
			},
			Nodes: []*v1.Node{
				util.BuildNode("n1", api.BuildResourceList("4", "8Gi", api.ScalarResource{Name: "pods", Value: "10"},
					api.ScalarResource{Name: string(builders.RDMAResource), Value: "4"}), nil),
			},
			Queues:         []*schedulingv1.Queue{util.BuildQueue("c1", 1, nil)},
			ExpectBindMap:  map[string]string{"c1/cpu-p-1": "n1"},
			ExpectBindsNum: 1,
		}
	}
	runVolcanoCase(t, 0, build(), allocatePlugins, allocateTiers, allocateAction)
	if diff := cmp.Diff(0.0, confValid(t)); diff != "" {
		t.Errorf("rdmatopo_conf_valid without the plugin (-want,+got):\n%s", diff)
	}
	// The same pods with the plugin: the node has no KCNR, so its NIC is
	// topology-unknown and still takes the RDMA pod.
	tc := build()
	tc.ExpectBindMap = map[string]string{"c1/cpu-p-1": "n1", "c1/rdma-p-1": "n1"}
	tc.ExpectBindsNum = 2
	runVolcanoCase(t, 0, tc, allocatePlugins, withTopology(allocateTiers), allocateAction)
	if diff := cmp.Diff(1.0, confValid(t)); diff != "" {
		t.Errorf("rdmatopo_conf_valid with the plugin (-want,+got):\n%s", diff)
	}
}
