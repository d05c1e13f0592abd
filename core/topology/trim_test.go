package topology_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/kubewharf/katalyst-api/pkg/apis/node/v1alpha1"
	corev1 "k8s.io/api/core/v1"

	"github.com/rdmatopo/rdmatopo/core/topology"
	"github.com/rdmatopo/rdmatopo/internal/testing/builders"
)

// fullKCNR is a KCNR as a katalyst agent writes it, with every part the
// fabric does not read filled in, and zones the reader must skip or report:
// a GPU zone holding a consumer, a zone of unknown type with a consumer, an
// allocation without requests, null entries and a Numa zone under a GPU.
const fullKCNR = `
apiVersion: node.katalyst.kubewharf.io/v1alpha1
kind: CustomNodeResource
metadata:
  name: n1
  uid: 6f1c2d3e-0000-4000-8000-000000000001
  resourceVersion: "4711"
  generation: 3
  labels: {team: ml}
  annotations: {note: big}
  ownerReferences: [{apiVersion: v1, kind: Node, name: n1, uid: 6f1c2d3e-0000-4000-8000-000000000002}]
  managedFields:
  - manager: katalyst-agent
    operation: Update
    apiVersion: node.katalyst.kubewharf.io/v1alpha1
    fieldsType: FieldsV1
    fieldsV1: {"f:status": {"f:topologyZone": {}}}
spec:
  taints: [{qosLevel: reclaimed_cores, key: k, value: v, effect: NoSchedule}]
  nodeResourceProperties:
  - {propertyName: cpu_model, propertyValues: [x86], propertyQuantity: "4"}
  - null
  - {propertyName: RDMATOR/0000:1a:00.0, propertyValues: [leafA]}
  - {propertyName: RDMATOR/0000:3f:00.0, propertyValues: [leafA, leafB]}
  - {propertyName: RDMATOR/0000:d1:00.0, propertyValues: []}
  - {propertyName: RDMATOR/0000:e7:00.0, propertyValues: ["bad,leaf"]}
status:
  topologyPolicy: SingleNUMANodePodLevel
  resources:
    allocatable: {cpu: "128"}
    capacity: {cpu: "128"}
    resourcePools: [{poolName: share, minAllocatable: {cpu: "1"}}]
  conditions: [{type: AgentReady, status: "True", reason: ok, message: fine}]
  nodeMetricStatus:
    updateTime: "2026-01-01T00:00:00Z"
    nodeMetric: {genericUsage: {cpu: "3"}}
  topologyZone:
  - null
  - name: "0"
    type: Socket
    attributes: [{name: vendor, value: x}]
    resources: {allocatable: {cpu: "64"}, capacity: {cpu: "64"}}
    allocations: [{consumer: ns/socket-pod/u0, requests: {cpu: "1"}}]
    children:
    - name: "0"
      type: Numa
      attributes: [{name: mem, value: 1Ti}]
      siblings: [{type: Numa, name: "1", attributes: [{name: distance, value: "21"}]}]
      resources:
        allocatable: {cpu: "61", nvidia.com/gpu: "4", vke.volcengine.com/rdma: "2"}
        capacity: {cpu: "64", nvidia.com/gpu: "4", vke.volcengine.com/rdma: "2"}
      allocations:
      - {consumer: ns/a/u1, requests: {cpu: "2", nvidia.com/gpu: "1"}}
      - null
      - {consumer: ns/b/u2}
      children:
      - name: 0000:1a:00.0
        type: NIC
        attributes: [{name: ifname, value: eth1}]
        resources: {allocatable: {vke.volcengine.com/rdma: "2"}, capacity: {vke.volcengine.com/rdma: "2"}}
        allocations:
        - {consumer: ns/a/u1, requests: {vke.volcengine.com/rdma: "1"}}
        - {consumer: ns/c/u3}
      - name: 0000:3f:00.0
        type: NIC
        resources: {allocatable: {vke.volcengine.com/rdma: "1"}}
      - name: GPU-0
        type: GPU
        resources: {allocatable: {nvidia.com/gpu: "1"}, capacity: {nvidia.com/gpu: "1"}}
        allocations: [{consumer: ns/gpu-pod/u4, requests: {nvidia.com/gpu: "1"}}]
        children:
        - name: "9"
          type: Numa
          allocations: [{consumer: ns/deep/u5}]
      - name: x
        type: FPGA
        allocations: [{consumer: ns/fpga/u6}]
      - null
  - name: "1"
    type: Numa
    resources:
      allocatable: {cpu: "64", nvidia.com/gpu: "-4"}
    children:
    - name: 0000:d1:00.0
      type: NIC
    - name: 0000:E7:00.0
      type: NIC
      resources: {allocatable: {vke.volcengine.com/rdma: "1e15"}}
    - name: "bad name"
      type: NIC
  - name: "0"
    type: Numa
  - name: q
    type: Rack
    allocations: [{consumer: ns/rack/u7}]
`

// TestTrimCNR checks that the fabric read from a trimmed KCNR is the fabric
// read from the full one (nodes, reasons, consumers, leaves), for clean,
// malformed and topology-unknown KCNRs, with and without their Node, and
// that the trimmed KCNR holds none of the parts the fabric never reads.
func TestTrimCNR(t *testing.T) {
	full, err := topology.DecodeCNR([]byte(fullKCNR))
	if err != nil {
		t.Fatal(err)
	}
	cases := map[string]struct {
		cnr  *v1alpha1.CustomNodeResource
		node *corev1.Node
	}{
		"full agent object":                {cnr: full, node: sharedNode("n1").Obj()},
		"full agent object, no Node":       {cnr: full},
		"full agent object, not shared":    {cnr: full, node: builders.MakeNode("n1").GPU(8).RDMA(4).S1("s1-0").Obj()},
		"full agent object, other node":    {cnr: full, node: sharedNode("n2").Obj()},
		"provider example":                 {cnr: loadProviderExample(t), node: sharedNode("10.27.0.4").Obj()},
		"clean":                            {cnr: provider("n1").Obj(), node: sharedNode("n1").Obj()},
		"used NICs and zones":              {cnr: provider("n1").UseNIC(nicA0, "ns/p/u").UseNICUnits(nicB0, "ns/q/u", 1).Alloc(1, "ns/r/u", corev1.ResourceList{corev1.ResourceCPU: mustQty("3")}).Obj(), node: sharedNode("n1").Obj()},
		"no zones":                         {cnr: builders.MakeCNR("n1").Obj(), node: sharedNode("n1").Obj()},
		"unknown policy":                   {cnr: provider("n1").Policy("Whatever").Obj(), node: sharedNode("n1").Obj()},
		"properties without leaves":        {cnr: provider("n1").NIC("0000:aa:00.0", 1, "").NilProperty().Property("RDMATOR/0000:aa:00.0").Obj(), node: sharedNode("n1").Obj()},
		"malformed top zone":               {cnr: provider("n1").TopZone(&v1alpha1.TopologyZone{Name: "x", Type: "Board", Allocations: []*v1alpha1.Allocation{{Consumer: "ns/x/u"}}}).Obj(), node: sharedNode("n1").Obj()},
		"malformed child zone, flat zones": {cnr: provider("n1").Flat().ChildZone(0, &v1alpha1.TopologyZone{Name: "1", Type: v1alpha1.TopologyTypeNuma}).Obj(), node: sharedNode("n1").Obj()},
	}
	cfg := topology.Config{S1NodeLabel: builders.S1Label}
	// One trimmer for every case, so lists are shared across KCNRs.
	trimmer := topology.NewCNRTrimmer()
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			trimmed := topology.TrimCNR(tc.cnr)
			want := topology.BuildNode(cfg, tc.node, tc.cnr)
			if diff := cmp.Diff(want, topology.BuildNode(cfg, tc.node, trimmed)); diff != "" {
				t.Errorf("BuildNode (-full +trimmed):\n%s", diff)
			}
			shared := trimmer.Trim(tc.cnr)
			if diff := cmp.Diff(trimmed, shared); diff != "" {
				t.Errorf("CNRTrimmer.Trim (-TrimCNR +Trim):\n%s", diff)
			}
			if diff := cmp.Diff(want, topology.BuildNode(cfg, tc.node, shared)); diff != "" {
				t.Errorf("BuildNode (-full +shared lists):\n%s", diff)
			}
			if diff := cmp.Diff(trimmed, topology.TrimCNR(trimmed)); diff != "" {
				t.Errorf("TrimCNR twice (-once +twice):\n%s", diff)
			}
			if trimmed.Name != tc.cnr.Name || trimmed.UID != tc.cnr.UID ||
				trimmed.ResourceVersion != tc.cnr.ResourceVersion || trimmed.Generation != tc.cnr.Generation {
				t.Errorf("identity %q/%q/%q/%d, want %q/%q/%q/%d", trimmed.Name, trimmed.UID, trimmed.ResourceVersion,
					trimmed.Generation, tc.cnr.Name, tc.cnr.UID, tc.cnr.ResourceVersion, tc.cnr.Generation)
			}

			// A cache fed the trimmed object gives the same fabric.
			nodes := []*corev1.Node{}
			if tc.node != nil {
				nodes = append(nodes, tc.node)
			}
			a, b := topology.NewCache(cfg), topology.NewCache(cfg)
			for _, n := range nodes {
				a.UpsertNode(n)
				b.UpsertNode(n)
			}
			a.UpsertCNR(tc.cnr)
			b.UpsertCNR(trimmed)
			if diff := cmp.Diff(viewOf(a.Snapshot()), viewOf(b.Snapshot())); diff != "" {
				t.Errorf("cache fabric (-full +trimmed):\n%s", diff)
			}
		})
	}

	data, err := json.Marshal(topology.TrimCNR(full))
	if err != nil {
		t.Fatal(err)
	}
	for _, dropped := range []string{"managedFields", "labels", "annotations", "ownerReferences", "taints",
		"capacity", "attributes", "siblings", "conditions", "nodeMetricStatus", "resourcePools", "x86", "propertyQuantity"} {
		if strings.Contains(string(data), dropped) {
			t.Errorf("trimmed KCNR still holds %s: %s", dropped, data)
		}
	}
	if topology.TrimCNR(nil) != nil {
		t.Error("TrimCNR(nil) is not nil")
	}
}

// TestCNRTrimmerShares checks that equal resource lists of different KCNRs
// become one list and that lists differing in a name or a quantity do not.
func TestCNRTrimmerShares(t *testing.T) {
	trimmer := topology.NewCNRTrimmer()
	a := trimmer.Trim(provider("n1").UseNIC(nicA0, "ns/p/u").Obj())
	b := trimmer.Trim(provider("n2").UseNIC(nicA0, "ns/q/u").Obj())
	c := trimmer.Trim(provider("n3").Allocatable(0, corev1.ResourceCPU, "63").Allocatable(1, builders.GPUResource, "3").Obj())
	numa := func(cnr *v1alpha1.CustomNodeResource, i int) *v1alpha1.TopologyZone {
		return cnr.Status.TopologyZone[i].Children[0]
	}
	nicA, nicB := numa(a, 0).Children[0], numa(b, 0).Children[0]
	if numa(a, 0).Resources.Allocatable == nil || nicA.Resources.Allocatable == nil || nicA.Allocations[0].Requests == nil {
		t.Fatal("builder KCNR without the lists this test compares")
	}
	if numa(a, 0).Resources.Allocatable != numa(b, 0).Resources.Allocatable {
		t.Error("equal NUMA allocatable of n1 and n2 not shared")
	}
	if nicA.Resources.Allocatable != nicB.Resources.Allocatable || nicA.Allocations[0].Requests != nicB.Allocations[0].Requests {
		t.Error("equal NIC allocatable or requests of n1 and n2 not shared")
	}
	if numa(a, 0).Resources.Allocatable == numa(c, 0).Resources.Allocatable {
		t.Error("NUMA 0 allocatable with another cpu quantity shared")
	}
	if numa(a, 1).Resources.Allocatable == numa(c, 1).Resources.Allocatable {
		t.Error("NUMA 1 allocatable with another GPU quantity shared")
	}
	if numa(a, 0).Resources.Allocatable == nicA.Resources.Allocatable {
		t.Error("lists with other names shared")
	}
}

// TestCNRTrimmerShareLists checks that ShareLists keeps every part of a
// KCNR, makes equal resource lists of different KCNRs (allocatable,
// capacity, allocation requests) one list, and keeps lists that differ in
// a name or a quantity apart.
func TestCNRTrimmerShareLists(t *testing.T) {
	numa := func(cnr *v1alpha1.CustomNodeResource, i int) *v1alpha1.TopologyZone {
		return cnr.Status.TopologyZone[i].Children[0]
	}
	list := func(get func(*v1alpha1.TopologyZone) *corev1.ResourceList, zone func(*v1alpha1.CustomNodeResource) *v1alpha1.TopologyZone) func(*v1alpha1.CustomNodeResource) *corev1.ResourceList {
		return func(cnr *v1alpha1.CustomNodeResource) *corev1.ResourceList { return get(zone(cnr)) }
	}
	allocatable := func(z *v1alpha1.TopologyZone) *corev1.ResourceList { return z.Resources.Allocatable }
	capacity := func(z *v1alpha1.TopologyZone) *corev1.ResourceList { return z.Resources.Capacity }
	requests := func(z *v1alpha1.TopologyZone) *corev1.ResourceList { return z.Allocations[0].Requests }
	numa0 := func(cnr *v1alpha1.CustomNodeResource) *v1alpha1.TopologyZone { return numa(cnr, 0) }
	numa1 := func(cnr *v1alpha1.CustomNodeResource) *v1alpha1.TopologyZone { return numa(cnr, 1) }
	nic0 := func(cnr *v1alpha1.CustomNodeResource) *v1alpha1.TopologyZone { return numa(cnr, 0).Children[0] }

	tests := map[string]struct {
		a, b   *builders.CNRWrapper
		list   func(*v1alpha1.CustomNodeResource) *corev1.ResourceList
		shared bool
	}{
		"equal NUMA allocatable": {
			a: provider("n1"), b: provider("n2"), list: list(allocatable, numa0), shared: true,
		},
		"equal NUMA capacity": {
			a: provider("n1"), b: provider("n2"), list: list(capacity, numa1), shared: true,
		},
		"equal NIC allocatable": {
			a: provider("n1"), b: provider("n2"), list: list(allocatable, nic0), shared: true,
		},
		"equal NIC requests of other consumers": {
			a: provider("n1").UseNIC(nicA0, "ns/p/u"), b: provider("n2").UseNIC(nicA0, "ns/q/u"),
			list: list(requests, nic0), shared: true,
		},
		"other cpu quantity": {
			a: provider("n1"), b: provider("n2").Allocatable(0, corev1.ResourceCPU, "63"),
			list: list(allocatable, numa0),
		},
		"other GPU quantity": {
			a: provider("n1"), b: provider("n2").Allocatable(1, builders.GPUResource, "3"),
			list: list(allocatable, numa1),
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			a, b := tc.a.Obj(), tc.b.Obj()
			wantA, wantB := a.DeepCopy(), b.DeepCopy()
			sharer := topology.NewCNRTrimmer()
			sharer.ShareLists(a)
			sharer.ShareLists(b)
			if diff := cmp.Diff(wantA, a); diff != "" {
				t.Errorf("first KCNR changed (-want,+got):\n%s", diff)
			}
			if diff := cmp.Diff(wantB, b); diff != "" {
				t.Errorf("second KCNR changed (-want,+got):\n%s", diff)
			}
			la, lb := tc.list(a), tc.list(b)
			if la == nil || lb == nil {
				t.Fatal("builder KCNR without the list this case compares")
			}
			if got := la == lb; got != tc.shared {
				t.Errorf("lists shared = %t, want %t", got, tc.shared)
			}
		})
	}
	t.Run("nil", func(t *testing.T) {
		topology.NewCNRTrimmer().ShareLists(nil)
	})
	t.Run("names apart", func(t *testing.T) {
		a := provider("n1").Obj()
		topology.NewCNRTrimmer().ShareLists(a)
		if numa(a, 0).Resources.Allocatable == numa(a, 0).Children[0].Resources.Allocatable {
			t.Error("lists with other names shared")
		}
	})
}

// TestListPool: equal lists become the first one kept, nil stays nil, and
// once the pool is full a new list is returned as it is and not kept.
func TestListPool(t *testing.T) {
	list := func(cpu string) *corev1.ResourceList {
		return &corev1.ResourceList{corev1.ResourceCPU: mustQty(cpu), corev1.ResourceMemory: mustQty("1Gi")}
	}
	pool := topology.NewListPool(1)
	first := list("1")
	if got := pool.Share(first); got != first {
		t.Fatalf("the first list was not kept")
	}
	if got := pool.Share(list("1")); got != first {
		t.Errorf("an equal list is not the kept one")
	}
	other := list("2")
	if got := pool.Share(other); got != other {
		t.Errorf("a different list was replaced")
	}
	if got := pool.Share(list("2")); got == other {
		t.Errorf("a list beyond the pool's bound was kept")
	}
	if pool.Share(nil) != nil {
		t.Errorf("Share(nil) is not nil")
	}
}
