package rdmatopology

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"volcano.sh/volcano/pkg/scheduler/api"

	"github.com/rdmatopo/rdmatopo/core/placement"
	"github.com/rdmatopo/rdmatopo/internal/testing/builders"
)

// req is a container's requests of GPUs, RDMA units and CPU.
func req(gpu, rdma, cpu string) corev1.ResourceList {
	out := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)}
	if gpu != "" {
		out[builders.GPUResource] = resource.MustParse(gpu)
	}
	if rdma != "" {
		out[builders.RDMAResource] = resource.MustParse(rdma)
	}
	return out
}

// TestShapeOf: the pod's whole need is what the topology manager aligns
// (init containers and sidecars counted as Kubernetes counts them, the
// overhead left to the node) and its parts are its containers, as the
// topology manager aligns them at container scope.
func TestShapeOf(t *testing.T) {
	main := func() *builders.PodWrapper {
		return builders.MakePod("ns", "p").Req(builders.GPUResource, "4").Req(builders.RDMAResource, "2").Req(corev1.ResourceCPU, "8")
	}
	cases := map[string]struct {
		pod       *corev1.Pod
		wantTotal placement.Shape
		wantParts []placement.Part
	}{
		"one container": {
			pod:       main().Obj(),
			wantTotal: placement.Shape{GPU: 4, NICs: 2, CPUMilli: 8000},
		},
		"two containers": {
			pod:       main().Container("aux", req("4", "2", "8")).Obj(),
			wantTotal: placement.Shape{GPU: 8, NICs: 4, CPUMilli: 16000},
			wantParts: []placement.Part{
				{Names: []string{"aux"}, GPU: 4, NICs: 2, CPUMilli: 8000, Order: 1},
				{Names: []string{"main"}, GPU: 4, NICs: 2, CPUMilli: 8000},
			},
		},
		"a container asking nothing the zones count is no part": {
			pod:       main().Container("log", corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("1Gi")}).Obj(),
			wantTotal: placement.Shape{GPU: 4, NICs: 2, CPUMilli: 8000},
		},
		"an init container is a part of its own": {
			pod:       main().Container("aux", req("4", "2", "8")).InitContainer("setup", req("1", "", "1")).Obj(),
			wantTotal: placement.Shape{GPU: 8, NICs: 4, CPUMilli: 16000},
			wantParts: []placement.Part{
				{Names: []string{"aux"}, GPU: 4, NICs: 2, CPUMilli: 8000, Order: 2},
				{Names: []string{"main"}, GPU: 4, NICs: 2, CPUMilli: 8000, Order: 1},
				{Names: []string{"setup"}, GPU: 1, CPUMilli: 1000, Init: true},
			},
		},
		"an init container larger than every container is a part of its own": {
			pod:       main().Container("aux", req("4", "2", "8")).InitContainer("warmup", req("6", "", "1")).Obj(),
			wantTotal: placement.Shape{GPU: 8, NICs: 4, CPUMilli: 16000},
			wantParts: []placement.Part{
				{Names: []string{"aux"}, GPU: 4, NICs: 2, CPUMilli: 8000, Order: 2},
				{Names: []string{"main"}, GPU: 4, NICs: 2, CPUMilli: 8000, Order: 1},
				{Names: []string{"warmup"}, GPU: 6, CPUMilli: 1000, Init: true},
			},
		},
		"an init container asking for NICs within a container's need is run in its zone": {
			pod:       main().Container("aux", req("4", "2", "8")).InitContainer("probe", req("", "1", "1")).Obj(),
			wantTotal: placement.Shape{GPU: 8, NICs: 4, CPUMilli: 16000},
			wantParts: []placement.Part{
				{Names: []string{"aux"}, GPU: 4, NICs: 2, CPUMilli: 8000, Order: 2},
				{Names: []string{"main"}, GPU: 4, NICs: 2, CPUMilli: 8000, Order: 1},
			},
		},
		"an init container asking for more NICs than any container keeps the pod whole": {
			pod:       main().Container("aux", req("4", "2", "8")).InitContainer("probe", req("", "3", "1")).Obj(),
			wantTotal: placement.Shape{GPU: 8, NICs: 4, CPUMilli: 16000},
		},
		"a sidecar and an init container after it: each a part": {
			pod: builders.MakePod("ns", "p").Req(builders.GPUResource, "1").Req(builders.RDMAResource, "1").Req(corev1.ResourceCPU, "1").
				Sidecar("proxy", req("", "", "40")).InitContainer("warmup", req("", "", "60")).Obj(),
			wantTotal: placement.Shape{GPU: 1, NICs: 1, CPUMilli: 100000},
			wantParts: []placement.Part{
				{Names: []string{"main"}, GPU: 1, NICs: 1, CPUMilli: 1000, Order: 2},
				{Names: []string{"warmup"}, CPUMilli: 60000, Order: 1, Init: true},
				{Names: []string{"proxy"}, CPUMilli: 40000},
			},
		},
		"the pod overhead counts against the node, not a zone": {
			pod: func() *corev1.Pod {
				p := main().Obj()
				p.Spec.Overhead = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4")}
				return p
			}(),
			wantTotal: placement.Shape{GPU: 4, NICs: 2, CPUMilli: 8000, NodeExtra: placement.Cap{CPUMilli: 4000}},
		},
		"an init container larger than the containers' sum sets the pod's need": {
			pod:       main().InitContainer("warmup", req("8", "4", "1")).Obj(),
			wantTotal: placement.Shape{GPU: 8, NICs: 4, CPUMilli: 8000},
		},
		"a sidecar is a part of its own": {
			pod:       main().Sidecar("proxy", req("", "1", "2")).Obj(),
			wantTotal: placement.Shape{GPU: 4, NICs: 3, CPUMilli: 10000},
			wantParts: []placement.Part{
				{Names: []string{"main"}, GPU: 4, NICs: 2, CPUMilli: 8000, Order: 1},
				{Names: []string{"proxy"}, NICs: 1, CPUMilli: 2000},
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := ShapeOf(tc.pod, api.NewTaskInfo(tc.pod).InitResreq, builders.GPUResource, builders.RDMAResource)
			total := got
			total.Containers = ""
			if diff := cmp.Diff(tc.wantTotal, total); diff != "" {
				t.Errorf("whole pod (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantParts, got.Parts(), cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("parts (-want +got):\n%s", diff)
			}
		})
	}
}
