package integration

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"fmt"
	"sort"
	"strings"
	"testing"

	nodev1alpha1 "github.com/kubewharf/katalyst-api/pkg/apis/node/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"

	"github.com/rdmatopo/rdmatopo/internal/testing/builders"
	"github.com/rdmatopo/rdmatopo/internal/workload"
)

// Resources and shapes of the test nodes: two NUMA zones, each with 4 GPUs,
// 32 CPUs and (unless a test says otherwise) two RDMA NICs.
const (
	rdmaResource corev1.ResourceName = "vke.volcengine.com/rdma"
	gpuResource  corev1.ResourceName = "nvidia.com/gpu"

	gpusPerZone     = 4
	cpuMilliPerZone = 32000
)

// zoneNICs are the PCI addresses of the NICs of NUMA zone 0 and 1.
var zoneNICs = [2][2]string{{"0000:1a:00.0", "0000:3f:00.0"}, {"0000:d1:00.0", "0000:e7:00.0"}}

// nicInfo is what the test knows about one NIC it created.
type nicInfo struct {
	// NUMA is the NIC's NUMA zone.
	NUMA int
	// S0 is the hash of the leaf switch it is cabled to ("" if none).
	S0 string
	// Units is the NIC's RDMA units: how many pods it may serve.
	Units int64
}

// fabric is the set of Nodes and KCNRs a test created, with the truth about
// every NIC so that placements can be checked against it rather than
// against the scheduler's own annotations.
type fabric struct {
	t *testing.T
	e *Env
	// prefix makes node and leaf names unique to the test.
	prefix string
	// nics maps node -> PCI address -> what the NIC is.
	nics map[string]map[string]nicInfo
	// cnrs holds the KCNR as last written per node.
	cnrs map[string]*nodev1alpha1.CustomNodeResource
}

// newFabric starts an empty fabric for the test; everything it creates is
// deleted when the test ends.
func newFabric(t *testing.T, e *Env) *fabric {
	f := &fabric{
		t:      t,
		e:      e,
		prefix: strings.ToLower(strings.TrimPrefix(t.Name(), "Test")),
		nics:   map[string]map[string]nicInfo{},
		cnrs:   map[string]*nodev1alpha1.CustomNodeResource{},
	}
	t.Cleanup(f.deleteAll)
	return f
}

// Leaf returns the S0 hash of the test's i-th leaf switch: 40 hex digits,
// unique to the test, like the provider's opaque ids.
func (f *fabric) Leaf(i int) string {
	sum := sha1.Sum([]byte(fmt.Sprintf("%s/leaf-%d", f.prefix, i)))
	return hex.EncodeToString(sum[:])
}

// NodeName returns the name of the test's i-th node.
func (f *fabric) NodeName(i int) string {
	return fmt.Sprintf("%s-n%d", f.prefix, i)
}

// nodeSpec says how a node's NICs are cabled: the leaf of each NUMA zone's
// NICs, or -1 for a zone without NICs.
type nodeSpec struct {
	// Index numbers the node (see NodeName).
	Index int
	// Leaves[z] is the leaf index of zone z's NICs; -1: the zone has none.
	Leaves [2]int
	// Labels are added to the Node's labels.
	Labels map[string]string
	// NICUnits is each NIC's RDMA units (1 if 0).
	NICUnits int64
}

// AddNode creates a Ready Node with GPUs, CPUs, memory and the RDMA NICs of
// spec, and its KCNR (policy SingleNUMANodeContainerLevel).
func (f *fabric) AddNode(ctx context.Context, spec nodeSpec) string {
	f.t.Helper()
	name := f.NodeName(spec.Index)
	cnr := builders.MakeCNR(name).Policy(nodev1alpha1.TopologyPolicySingleNUMANodeContainerLevel)
	f.nics[name] = map[string]nicInfo{}
	rdma := int64(0)
	for zone := 0; zone < 2; zone++ {
		cnr.Zone(zone, gpusPerZone, cpuMilliPerZone)
		if spec.Leaves[zone] < 0 {
			continue
		}
		leaf := f.Leaf(spec.Leaves[zone])
		for _, pci := range zoneNICs[zone] {
			units := max(spec.NICUnits, 1)
			cnr.NIC(pci, zone, leaf).Units(pci, units)
			f.nics[name][pci] = nicInfo{NUMA: zone, S0: leaf, Units: units}
			rdma += units
		}
	}
	node := builders.MakeNode(name).Shared().
		GPU(2*gpusPerZone).RDMA(rdma).CPU(fmt.Sprint(2*cpuMilliPerZone/1000)).
		Resource(corev1.ResourceMemory, "512Gi").Resource(corev1.ResourcePods, "110").
		Obj()
	for k, v := range spec.Labels {
		if node.Labels == nil {
			node.Labels = map[string]string{}
		}
		node.Labels[k] = v
	}
	node.Status.Conditions = []corev1.NodeCondition{{
		Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady",
		LastHeartbeatTime: metav1.Now(), LastTransitionTime: metav1.Now(),
	}}
	f.createNode(ctx, node)
	f.writeCNR(ctx, cnr.Obj())
	return name
}

// createNode creates the Node and sets its status (the create call of a
// Node keeps the status, but an update makes sure of it).
func (f *fabric) createNode(ctx context.Context, node *corev1.Node) {
	f.t.Helper()
	nodes := f.e.Kube.CoreV1().Nodes()
	created, err := nodes.Create(ctx, node, metav1.CreateOptions{})
	if err != nil {
		f.t.Fatalf("create Node %s: %v", node.Name, err)
	}
	created.Status = node.Status
	if _, err := nodes.UpdateStatus(ctx, created, metav1.UpdateOptions{}); err != nil {
		f.t.Fatalf("update status of Node %s: %v", node.Name, err)
	}
}

// writeCNR creates or replaces a node's KCNR, spec and status.
func (f *fabric) writeCNR(ctx context.Context, cnr *nodev1alpha1.CustomNodeResource) {
	f.t.Helper()
	cnrs := f.e.Katalyst.NodeV1alpha1().CustomNodeResources()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cur, err := cnrs.Get(ctx, cnr.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			cur, err = cnrs.Create(ctx, cnr, metav1.CreateOptions{})
		} else if err == nil {
			cur.Spec = cnr.Spec
			cur, err = cnrs.Update(ctx, cur, metav1.UpdateOptions{})
		}
		if err != nil {
			return err
		}
		cur.Status = cnr.Status
		cur, err = cnrs.UpdateStatus(ctx, cur, metav1.UpdateOptions{})
		if err == nil {
			f.cnrs[cnr.Name] = cur
		}
		return err
	})
	if err != nil {
		f.t.Fatalf("write KCNR %s: %v", cnr.Name, err)
	}
}

// RecordAllocations makes the KCNRs list pods as consumers of their GPUs,
// CPUs and NICs, as katalyst's agent would once the pods run: every pod
// must be bound and carry its NIC annotations. Allocations of other
// consumers are dropped, so passing the pods that still exist also forgets
// deleted ones.
func (f *fabric) RecordAllocations(ctx context.Context, pods []corev1.Pod) {
	f.t.Helper()
	f.RecordAllocationsAs(ctx, pods, nil)
}

// RecordAllocationsAs is RecordAllocations by a node agent that chose
// differently for some pods: chosen maps "namespace/name" to the NICs the
// agent gave the pod instead of its annotated ones (their NUMA zone takes
// the pod's GPUs and CPUs).
func (f *fabric) RecordAllocationsAs(ctx context.Context, pods []corev1.Pod, chosen map[string][]string) {
	f.t.Helper()
	byNode := map[string][]corev1.Pod{}
	for _, p := range pods {
		byNode[p.Spec.NodeName] = append(byNode[p.Spec.NodeName], p)
	}
	names := make([]string, 0, len(f.cnrs))
	for name := range f.cnrs {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		cnr := f.cnrs[name].DeepCopy()
		zones := numaZones(cnr)
		for _, z := range zones {
			z.Allocations = nil
			for _, c := range z.Children {
				c.Allocations = nil
			}
		}
		for _, p := range byNode[name] {
			consumer := builders.Consumer(p.Namespace, p.Name, string(p.UID))
			nics := splitList(p.Annotations[annNICs])
			if c, ok := chosen[p.Namespace+"/"+p.Name]; ok {
				nics = c
			}
			if len(nics) == 0 {
				f.t.Fatalf("pod %s/%s on %s has no %s annotation", p.Namespace, p.Name, name, annNICs)
			}
			zone := f.nics[name][nics[0]].NUMA
			z := zones[zone]
			req := workload.PodRequests(&p.Spec)
			req[rdmaResource] = *resource.NewQuantity(int64(len(nics)), resource.DecimalSI)
			z.Allocations = append(z.Allocations, &nodev1alpha1.Allocation{Consumer: consumer, Requests: &req})
			for _, c := range z.Children {
				for _, nic := range nics {
					if c.Name == nic {
						one := corev1.ResourceList{rdmaResource: *resource.NewQuantity(1, resource.DecimalSI)}
						c.Allocations = append(c.Allocations, &nodev1alpha1.Allocation{Consumer: consumer, Requests: &one})
					}
				}
			}
		}
		f.writeCNR(ctx, cnr)
	}
}

// numaZones returns the NUMA zones of a KCNR by id.
func numaZones(cnr *nodev1alpha1.CustomNodeResource) map[int]*nodev1alpha1.TopologyZone {
	out := map[int]*nodev1alpha1.TopologyZone{}
	var walk func(zs []*nodev1alpha1.TopologyZone)
	walk = func(zs []*nodev1alpha1.TopologyZone) {
		for _, z := range zs {
			if z == nil {
				continue
			}
			if z.Type == nodev1alpha1.TopologyTypeNuma {
				var id int
				fmt.Sscan(z.Name, &id)
				out[id] = z
			}
			walk(z.Children)
		}
	}
	walk(cnr.Status.TopologyZone)
	return out
}

// deleteAll removes the test's Nodes and KCNRs.
func (f *fabric) deleteAll() {
	ctx := context.Background()
	for name := range f.nics {
		if err := f.e.Kube.CoreV1().Nodes().Delete(ctx, name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			f.t.Errorf("delete Node %s: %v", name, err)
		}
		if err := f.e.Katalyst.NodeV1alpha1().CustomNodeResources().Delete(ctx, name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			f.t.Errorf("delete KCNR %s: %v", name, err)
		}
	}
}
