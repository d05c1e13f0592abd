package main

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/kubewharf/katalyst-api/pkg/apis/node/v1alpha1"
	katalystclient "github.com/kubewharf/katalyst-api/pkg/client/clientset/versioned"
	"github.com/kubewharf/katalyst-api/pkg/consts"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rdmatopo/rdmatopo/framework/ledger"
	"github.com/rdmatopo/rdmatopo/internal/sim/nodeagent"
	"github.com/rdmatopo/rdmatopo/internal/testing/builders"
	"github.com/rdmatopo/rdmatopo/internal/workload"
)

// Resources the agent hands out.
const (
	rdmaResource = builders.RDMAResource
	gpuResource  = builders.GPUResource
	// rdmaTorPrefix names the KCNR properties that give a NIC's leaf.
	rdmaTorPrefix = builders.RDMATorPrefix
)

// agent plays katalyst's node agent: a while after a pod is bound
// (lag), it hands the pod GPUs and NICs on its node and lists them in the
// node's KCNR status, which is what the scheduler reads back. It honours
// katalyst's numa_bind_result (the NUMA zones the scheduler planned) and
// takes that zone's free NICs in name order, whatever NICs the scheduler
// annotated; a pod without the hint gets the one zone that fits and is left
// with the fewest free NICs, as kubelet's topology manager with katalyst's
// QRM plugins picks, or, when no single zone fits, NICs from the zones in id
// order (NUMA-misaligned: kubelet would reject it on a single-NUMA node).
// The agent is the only writer of KCNR status.
type agent struct {
	client katalystclient.Interface
	lag    time.Duration

	mu      sync.Mutex
	cnrs    map[string]*v1alpha1.CustomNodeResource
	pending map[string]*pendingPod // by namespace/name
	held    map[string]*heldPod    // by namespace/name
	// realized keeps, for every pod ever confirmed, the leaves of the NICs
	// it was listed on, read from the KCNR's RDMATOR properties when the
	// allocation was written (pods are deleted before the report).
	realized map[string][]string
	dirty    map[string]bool
	// Counters for the report.
	hinted, unhinted, misaligned, writes, writeErrors int
}

type pendingPod struct {
	pod *corev1.Pod
	due time.Time
}

// heldPod is what the agent handed a pod.
type heldPod struct {
	node, consumer string
	nics           []string
}

func newAgent(client katalystclient.Interface, lag time.Duration, cnrs []*v1alpha1.CustomNodeResource) *agent {
	a := &agent{client: client, lag: lag, cnrs: map[string]*v1alpha1.CustomNodeResource{},
		pending: map[string]*pendingPod{}, held: map[string]*heldPod{}, dirty: map[string]bool{},
		realized: map[string][]string{}}
	for _, c := range cnrs {
		a.cnrs[c.Name] = c.DeepCopy()
	}
	return a
}

func podKey(p *corev1.Pod) string { return p.Namespace + "/" + p.Name }

// preallocate lists a running pod on exactly the NICs its rdmatopo.io/nics
// annotation names (the pods running before the trace starts). It only
// changes the agent's copy; the KCNRs are written after.
func (a *agent) preallocate(p *corev1.Pod) error {
	nics, err := ledger.ParseNICs(p.Annotations[ledger.AnnotationNICs])
	if err != nil {
		return fmt.Errorf("pod %s: %w", podKey(p), err)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	cnr := a.cnrs[p.Spec.NodeName]
	if cnr == nil {
		return fmt.Errorf("pod %s: no KCNR for node %s", podKey(p), p.Spec.NodeName)
	}
	names := make([]string, len(nics))
	for i, n := range nics {
		names[i] = string(n)
	}
	zones := nodeZones(cnr)
	take := map[*numaZone][]*v1alpha1.TopologyZone{}
	var order []*numaZone
	for _, name := range names {
		z, nic := zones.find(name)
		if nic == nil {
			return fmt.Errorf("pod %s: NIC %s not on node %s", podKey(p), name, p.Spec.NodeName)
		}
		if _, ok := take[z]; !ok {
			order = append(order, z)
		}
		take[z] = append(take[z], nic)
	}
	a.record(p, cnr, order, take)
	return nil
}

// observe is called for every pod the driver's informer sees.
func (a *agent) observe(p *corev1.Pod) {
	if p.Spec.NodeName == "" || p.DeletionTimestamp != nil {
		return
	}
	if q := workload.PodRequests(&p.Spec)[rdmaResource]; q.Value() == 0 {
		return // the agent reports RDMA pods only
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	k := podKey(p)
	if _, ok := a.held[k]; ok {
		return
	}
	if pp, ok := a.pending[k]; ok {
		pp.pod = p // newer annotations
		return
	}
	a.pending[k] = &pendingPod{pod: p, due: time.Now().Add(a.lag)}
}

// forget releases a deleted pod's devices.
func (a *agent) forget(p *corev1.Pod) {
	a.mu.Lock()
	defer a.mu.Unlock()
	k := podKey(p)
	delete(a.pending, k)
	h, ok := a.held[k]
	if !ok {
		return
	}
	delete(a.held, k)
	if nodeagent.Release(a.cnrs[h.node], h.consumer) {
		a.dirty[h.node] = true
	}
}

// run confirms due pods and writes changed KCNRs until ctx ends.
func (a *agent) run(ctx context.Context) {
	t := time.NewTicker(250 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		a.confirmDue(time.Now())
		a.flush(ctx)
	}
}

func (a *agent) confirmDue(now time.Time) {
	a.mu.Lock()
	defer a.mu.Unlock()
	var due []*pendingPod
	for k, pp := range a.pending {
		if !now.Before(pp.due) {
			due = append(due, pp)
			delete(a.pending, k)
		}
	}
	// Bind order, so that pods competing for a zone are served as kubelet
	// would admit them (first bound first).
	sort.Slice(due, func(i, j int) bool { return due[i].due.Before(due[j].due) })
	for _, pp := range due {
		a.allocate(pp.pod)
	}
}

// numaZone is one NUMA zone of a KCNR with its NICs in name order.
type numaZone struct {
	id   int
	zone *v1alpha1.TopologyZone
	nics []*v1alpha1.TopologyZone
}

type zoneList []*numaZone

func nodeZones(cnr *v1alpha1.CustomNodeResource) zoneList {
	var out zoneList
	var walk func([]*v1alpha1.TopologyZone)
	walk = func(zs []*v1alpha1.TopologyZone) {
		for _, z := range zs {
			if z == nil {
				continue
			}
			if z.Type == v1alpha1.TopologyTypeNuma {
				id, err := strconv.Atoi(z.Name)
				if err != nil {
					continue
				}
				nz := &numaZone{id: id, zone: z}
				for _, c := range z.Children {
					if c != nil && c.Type == v1alpha1.TopologyTypeNIC {
						nz.nics = append(nz.nics, c)
					}
				}
				sort.Slice(nz.nics, func(i, j int) bool { return nz.nics[i].Name < nz.nics[j].Name })
				out = append(out, nz)
				continue
			}
			walk(z.Children)
		}
	}
	walk(cnr.Status.TopologyZone)
	sort.Slice(out, func(i, j int) bool { return out[i].id < out[j].id })
	return out
}

func (zs zoneList) find(nic string) (*numaZone, *v1alpha1.TopologyZone) {
	for _, z := range zs {
		for _, n := range z.nics {
			if strings.EqualFold(n.Name, nic) {
				return z, n
			}
		}
	}
	return nil, nil
}

func (zs zoneList) byID(id int) *numaZone {
	for _, z := range zs {
		if z.id == id {
			return z
		}
	}
	return nil
}

// free returns allocatable minus allocated of a resource in a zone.
func free(z *v1alpha1.TopologyZone, name corev1.ResourceName) int64 {
	if z.Resources.Allocatable == nil {
		return 0
	}
	q := (*z.Resources.Allocatable)[name]
	n := q.MilliValue()
	for _, al := range z.Allocations {
		if al != nil && al.Requests != nil {
			u := (*al.Requests)[name]
			n -= u.MilliValue()
		}
	}
	return max(n, 0)
}

func (z *numaZone) freeNICs() []*v1alpha1.TopologyZone {
	var out []*v1alpha1.TopologyZone
	for _, n := range z.nics {
		if free(n, rdmaResource) >= 1000 {
			out = append(out, n)
		}
	}
	return out
}

// allocate hands a bound pod its devices (a.mu held).
func (a *agent) allocate(p *corev1.Pod) {
	cnr := a.cnrs[p.Spec.NodeName]
	if cnr == nil {
		return
	}
	req := workload.PodRequests(&p.Spec)
	rq := req[rdmaResource]
	gq := req[gpuResource]
	want, gpus := int(rq.Value()), gq.MilliValue()
	zones := nodeZones(cnr)
	take := map[*numaZone][]*v1alpha1.TopologyZone{}
	var order []*numaZone

	if hint, ok := p.Annotations[consts.PodAnnotationNUMABindResultKey]; ok {
		a.hinted++
		var hinted []*numaZone
		avail := 0
		for _, f := range strings.Split(hint, ",") {
			id, err := strconv.Atoi(strings.TrimSpace(f))
			if z := zones.byID(id); err == nil && z != nil {
				hinted = append(hinted, z)
				avail += len(z.freeNICs())
			}
		}
		if avail >= want {
			left := want
			for _, z := range hinted {
				fn := z.freeNICs()
				n := min(left, len(fn))
				if n > 0 {
					take[z] = fn[:n]
					order = append(order, z)
					left -= n
				}
			}
		}
	} else {
		a.unhinted++
	}
	if len(order) == 0 {
		// One zone that holds the pod, fewest free NICs left, lowest id.
		var best *numaZone
		for _, z := range zones {
			fn := len(z.freeNICs())
			if fn < want || free(z.zone, gpuResource) < gpus {
				continue
			}
			if best == nil || fn < len(best.freeNICs()) {
				best = z
			}
		}
		if best != nil {
			take[best] = best.freeNICs()[:want]
			order = []*numaZone{best}
		} else {
			a.misaligned++
			left := want
			for _, z := range zones {
				fn := z.freeNICs()
				n := min(left, len(fn))
				if n > 0 {
					take[z] = fn[:n]
					order = append(order, z)
					left -= n
				}
			}
		}
	}
	a.record(p, cnr, order, take)
}

// record lists pod p on the chosen NICs and, on their NUMA zones, the NICs
// and the pod's GPU and CPU requests split over the zones (a.mu held).
func (a *agent) record(p *corev1.Pod, cnr *v1alpha1.CustomNodeResource, order []*numaZone, take map[*numaZone][]*v1alpha1.TopologyZone) {
	consumer := nodeagent.Consumer(p)
	req := workload.PodRequests(&p.Spec)
	h := &heldPod{node: cnr.Name, consumer: consumer}
	for _, z := range order {
		for _, nic := range take[z] {
			nic.Allocations = append(nic.Allocations, &v1alpha1.Allocation{
				Consumer: consumer,
				Requests: &corev1.ResourceList{rdmaResource: *resource.NewQuantity(1, resource.DecimalSI)},
			})
			h.nics = append(h.nics, nic.Name)
		}
		share := corev1.ResourceList{rdmaResource: *resource.NewQuantity(int64(len(take[z])), resource.DecimalSI)}
		for _, name := range []corev1.ResourceName{gpuResource, corev1.ResourceCPU} {
			if q, ok := req[name]; ok {
				share[name] = *resource.NewMilliQuantity(q.MilliValue()/int64(len(order)), q.Format)
			}
		}
		z.zone.Allocations = append(z.zone.Allocations, &v1alpha1.Allocation{Consumer: consumer, Requests: &share})
	}
	a.held[podKey(p)] = h
	a.dirty[cnr.Name] = true
	var leaves []string
	for _, nic := range h.nics {
		for _, prop := range cnr.Spec.NodeResourceProperties {
			if prop != nil && strings.EqualFold(prop.PropertyName, rdmaTorPrefix+nic) && len(prop.PropertyValues) > 0 {
				leaves = append(leaves, prop.PropertyValues[0])
			}
		}
	}
	a.realized[podKey(p)] = leaves
}

// flush writes every changed KCNR's status, 8 at a time.
func (a *agent) flush(ctx context.Context) {
	a.mu.Lock()
	var todo []*v1alpha1.CustomNodeResource
	for name := range a.dirty {
		todo = append(todo, a.cnrs[name].DeepCopy())
		delete(a.dirty, name)
	}
	a.mu.Unlock()
	results := parallel(ctx, len(todo), 8, func(i int) error {
		out, err := a.client.NodeV1alpha1().CustomNodeResources().UpdateStatus(ctx, todo[i], metav1.UpdateOptions{})
		a.mu.Lock()
		defer a.mu.Unlock()
		a.writes++
		if err != nil {
			a.writeErrors++
			a.dirty[todo[i].Name] = true // retried at the next tick
			return err
		}
		a.cnrs[out.Name].ResourceVersion = out.ResourceVersion
		return nil
	})
	_ = results
}

// leavesOf returns the leaves of the NICs the agent listed a pod on, one
// per NIC; ok is false when it never confirmed the pod.
func (a *agent) leavesOf(namespace, name string) (leaves []string, ok bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	leaves, ok = a.realized[namespace+"/"+name]
	return leaves, ok
}

// parallel runs f(0..n-1) on workers goroutines and returns the errors.
func parallel(ctx context.Context, n, workers int, f func(i int) error) []error {
	errs := make([]error, n)
	next := make(chan int)
	var wg sync.WaitGroup
	for range min(workers, n) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				errs[i] = f(i)
			}
		}()
	}
	for i := 0; i < n; i++ {
		if ctx.Err() != nil {
			break
		}
		next <- i
	}
	close(next)
	wg.Wait()
	return errs
}
