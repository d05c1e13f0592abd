package companion

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	nodev1alpha1 "github.com/kubewharf/katalyst-api/pkg/apis/node/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"

	"github.com/rdmatopo/rdmatopo/internal/testing/builders"
	"github.com/rdmatopo/rdmatopo/internal/workload"
)

// Resources of the test nodes: two NUMA zones, each with 4 GPUs, 32 CPUs
// and two RDMA NICs.
const (
	rdmaResource corev1.ResourceName = "vke.volcengine.com/rdma"
	gpuResource  corev1.ResourceName = "nvidia.com/gpu"

	gpusPerZone     = 4
	cpuMilliPerZone = 32000

	annNICs = "rdmatopo.io/nics"
	annNUMA = "rdmatopo.io/numa"
	annS0   = "rdmatopo.io/s0"

	// image is never pulled: there is no kubelet.
	image = "registry.invalid/rdmatopo/train:latest"
)

// zoneNICs are the PCI addresses of the NICs of NUMA zone 0 and 1.
var zoneNICs = [2][2]string{{"0000:1a:00.0", "0000:3f:00.0"}, {"0000:d1:00.0", "0000:e7:00.0"}}

// pollInterval is how often eventually re-checks its condition.
const pollInterval = 200 * time.Millisecond

// eventually calls cond until it returns true or timeout passes; then the
// test fails with cond's last message.
func eventually(t *testing.T, timeout time.Duration, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		ok, msg := cond()
		if ok {
			return
		}
		if err := env.alive(); err != nil {
			t.Fatalf("%v; waiting for: %s", err, msg)
		}
		if time.Now().After(deadline) {
			t.Fatalf("not within %s: %s", timeout, msg)
		}
		time.Sleep(pollInterval)
	}
}

// podShape is what each test pod requests.
type podShape struct{ GPUs, NICs int64 }

// trainer is half a node's GPUs and the NICs of one NUMA zone.
var trainer = podShape{GPUs: 4, NICs: 2}

func (s podShape) resources() corev1.ResourceRequirements {
	return corev1.ResourceRequirements{
		Requests: corev1.ResourceList{
			corev1.ResourceCPU: resource.MustParse("4"), corev1.ResourceMemory: resource.MustParse("8Gi"),
			gpuResource: *resource.NewQuantity(s.GPUs, resource.DecimalSI), rdmaResource: *resource.NewQuantity(s.NICs, resource.DecimalSI),
		},
		Limits: corev1.ResourceList{
			gpuResource: *resource.NewQuantity(s.GPUs, resource.DecimalSI), rdmaResource: *resource.NewQuantity(s.NICs, resource.DecimalSI),
		},
	}
}

// nicInfo is the truth about one NIC the test created.
type nicInfo struct {
	NUMA int
	S0   string
}

// fabric is the Nodes and KCNRs a test created, with the truth about every
// NIC, so placements are checked against it, not against annotations.
type fabric struct {
	t      *testing.T
	e      *Env
	prefix string
	nics   map[string]map[string]nicInfo
	cnrs   map[string]*nodev1alpha1.CustomNodeResource
}

func newFabric(t *testing.T, e *Env) *fabric {
	f := &fabric{t: t, e: e, prefix: strings.ToLower(strings.TrimPrefix(t.Name(), "Test")),
		nics: map[string]map[string]nicInfo{}, cnrs: map[string]*nodev1alpha1.CustomNodeResource{}}
	t.Cleanup(f.deleteAll)
	return f
}

// Leaf is the S0 hash of the test's i-th leaf.
func (f *fabric) Leaf(i int) string {
	sum := sha1.Sum([]byte(fmt.Sprintf("%s/leaf-%d", f.prefix, i)))
	return hex.EncodeToString(sum[:])
}

// NodeName names the test's i-th node.
func (f *fabric) NodeName(i int) string { return fmt.Sprintf("%s-n%d", f.prefix, i) }

// nodeSpec cables a node: Leaves[z] is the leaf of zone z's NICs.
type nodeSpec struct {
	Index  int
	Leaves [2]int
	Labels map[string]string
}

// AddNode creates a Ready node (hostname label set) and its KCNR (policy
// SingleNUMANodeContainerLevel).
func (f *fabric) AddNode(ctx context.Context, spec nodeSpec) string {
	f.t.Helper()
	name := f.NodeName(spec.Index)
	node := builders.MakeNode(name).Shared().GPU(2*gpusPerZone).RDMA(4).CPU(fmt.Sprint(2*cpuMilliPerZone/1000)).
		Resource(corev1.ResourceMemory, "512Gi").Resource(corev1.ResourcePods, "110").
		Label(corev1.LabelHostname, name).Obj()
	for k, v := range spec.Labels {
		node.Labels[k] = v
	}
	node.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady",
		LastHeartbeatTime: metav1.Now(), LastTransitionTime: metav1.Now()}}
	nodes := f.e.Kube.CoreV1().Nodes()
	created, err := nodes.Create(ctx, node, metav1.CreateOptions{})
	if err != nil {
		f.t.Fatalf("create Node %s: %v", name, err)
	}
	created.Status = node.Status
	if _, err := nodes.UpdateStatus(ctx, created, metav1.UpdateOptions{}); err != nil {
		f.t.Fatalf("update status of Node %s: %v", name, err)
	}
	f.nics[name] = map[string]nicInfo{}
	f.SetCabling(ctx, spec)
	return name
}

// SetCabling writes a node's KCNR with the cabling of spec and no
// allocations, as a (re)cabled node's agent reports it.
func (f *fabric) SetCabling(ctx context.Context, spec nodeSpec) {
	f.t.Helper()
	name := f.NodeName(spec.Index)
	cnr := builders.MakeCNR(name).Policy(nodev1alpha1.TopologyPolicySingleNUMANodeContainerLevel)
	for zone := 0; zone < 2; zone++ {
		cnr.Zone(zone, gpusPerZone, cpuMilliPerZone)
		leaf := f.Leaf(spec.Leaves[zone])
		for _, pci := range zoneNICs[zone] {
			cnr.NIC(pci, zone, leaf)
			f.nics[name][pci] = nicInfo{NUMA: zone, S0: leaf}
		}
	}
	f.writeCNR(ctx, cnr.Obj())
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

// RecordAllocationsAs makes the KCNRs list the bound pods as katalyst's
// agent would: chosen maps "namespace/name" to the NICs the agent gave the
// pod (else its annotated NICs); their NUMA zone takes its GPUs and CPUs.
func (f *fabric) RecordAllocationsAs(ctx context.Context, pods []corev1.Pod, chosen map[string][]string) {
	f.t.Helper()
	byNode := map[string][]corev1.Pod{}
	for _, p := range pods {
		byNode[p.Spec.NodeName] = append(byNode[p.Spec.NodeName], p)
	}
	for name, cur := range f.cnrs {
		cnr := cur.DeepCopy()
		zones := map[int]*nodev1alpha1.TopologyZone{}
		for _, s := range cnr.Status.TopologyZone {
			for _, z := range s.Children {
				if z.Type == nodev1alpha1.TopologyTypeNuma {
					id, _ := strconv.Atoi(z.Name)
					z.Allocations = nil
					zones[id] = z
				}
			}
		}
		for _, p := range byNode[name] {
			consumer := builders.Consumer(p.Namespace, p.Name, string(p.UID))
			nics, ok := chosen[p.Namespace+"/"+p.Name]
			if !ok {
				nics = splitList(p.Annotations[annNICs])
			}
			z := zones[f.nics[name][nics[0]].NUMA]
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

func (f *fabric) deleteAll() {
	ctx := context.Background()
	for name := range f.nics {
		_ = f.e.Kube.CoreV1().Nodes().Delete(ctx, name, metav1.DeleteOptions{})
		_ = f.e.Katalyst.NodeV1alpha1().CustomNodeResources().Delete(ctx, name, metav1.DeleteOptions{})
	}
}

// splitList splits a comma-separated annotation.
func splitList(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(s, ",")
}

// newNamespace creates a namespace for the test, its pods deleted at the end.
func newNamespace(t *testing.T, e *Env, suffix string) string {
	t.Helper()
	name := "it-" + strings.ToLower(strings.TrimPrefix(t.Name(), "Test")) + suffix
	if _, err := e.Kube.CoreV1().Namespaces().Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create Namespace %s: %v", name, err)
	}
	t.Cleanup(func() {
		zero := int64(0)
		_ = e.Kube.CoreV1().Pods(name).DeleteCollection(context.Background(), metav1.DeleteOptions{GracePeriodSeconds: &zero}, metav1.ListOptions{})
	})
	return name
}

// listPods lists a namespace's pods, sorted by name.
func listPods(t *testing.T, e *Env, ns string) []corev1.Pod {
	t.Helper()
	l, err := e.Kube.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	sort.Slice(l.Items, func(i, j int) bool { return l.Items[i].Name < l.Items[j].Name })
	return l.Items
}

// placedPod is what a bound pod holds, checked against the fabric.
type placedPod struct {
	Pod, Node string
	NUMA      int
	S0        string
	NICs      []string
}

// checkPods checks bound pods against the fabric: each pod's annotated
// NICs are NICs of its node, as many as it asks, of one NUMA zone (the
// annotated one) and the annotated leaf; numa_bind_result equals the NUMA
// annotation; no NIC of a node is given twice. It returns the pods.
func checkPods(t *testing.T, f *fabric, pods []corev1.Pod, shape podShape) []placedPod {
	t.Helper()
	var out []placedPod
	holder := map[string]string{}
	for _, p := range pods {
		id := p.Namespace + "/" + p.Name
		pp := placedPod{Pod: id, Node: p.Spec.NodeName, S0: p.Annotations[annS0], NICs: splitList(p.Annotations[annNICs])}
		numa, err := strconv.Atoi(p.Annotations[annNUMA])
		if err != nil || pp.Node == "" || int64(len(pp.NICs)) != shape.NICs {
			t.Errorf("pod %s: node %q, NICs %q, NUMA %q", id, pp.Node, p.Annotations[annNICs], p.Annotations[annNUMA])
			continue
		}
		pp.NUMA = numa
		if got := p.Annotations["katalyst.kubewharf.io/numa_bind_result"]; got != p.Annotations[annNUMA] {
			t.Errorf("pod %s: numa_bind_result %q, NUMA %q", id, got, p.Annotations[annNUMA])
		}
		for _, nic := range pp.NICs {
			info, ok := f.nics[pp.Node][nic]
			if !ok || info.NUMA != numa || info.S0 != pp.S0 {
				t.Errorf("pod %s: NIC %s of %s is %+v (known %v), annotated NUMA %d leaf %.8s", id, nic, pp.Node, info, ok, numa, pp.S0)
			}
			key := pp.Node + "/" + nic
			if other, ok := holder[key]; ok {
				t.Errorf("NIC %s is given to both %s and %s", key, other, id)
			}
			holder[key] = id
		}
		out = append(out, pp)
	}
	return out
}
