package main

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/kubewharf/katalyst-api/pkg/apis/node/v1alpha1"
	katalystclient "github.com/kubewharf/katalyst-api/pkg/client/clientset/versioned"
	"github.com/kubewharf/katalyst-api/pkg/consts"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rdmatopo/rdmatopo/core/ledger"
	"github.com/rdmatopo/rdmatopo/core/topology"
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

// agent plays katalyst's node agent: a while after a pod is bound (lag), it
// hands the pod GPUs and NICs on its node and lists them in the node's KCNR
// status, which is what the scheduler reads back. What a pod gets is
// nodeagent.Decide's choice in the agent's mode (nodeagent.Default: honour
// katalyst's numa_bind_result, and without it the lowest zone with room, as
// kubelet's topology manager admits a stock Volcano pod), and the KCNR
// lists it as nodeagent.Record writes it. This type only decides when the
// agent acts and writes the KCNRs to the API server; it is the only writer
// of KCNR status.
type agent struct {
	client katalystclient.Interface
	lag    time.Duration
	mode   nodeagent.Mode
	cfg    topology.Config

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
}

func newAgent(client katalystclient.Interface, lag time.Duration, mode nodeagent.Mode, cnrs []*v1alpha1.CustomNodeResource) *agent {
	a := &agent{client: client, lag: lag, mode: mode, cfg: topology.Config{}.WithDefaults(),
		cnrs: map[string]*v1alpha1.CustomNodeResource{}, pending: map[string]*pendingPod{},
		held: map[string]*heldPod{}, dirty: map[string]bool{}, realized: map[string][]string{}}
	for _, c := range cnrs {
		a.cnrs[c.Name] = c.DeepCopy()
	}
	return a
}

func podKey(p *corev1.Pod) string { return p.Namespace + "/" + p.Name }

// preallocate lists a running pod on exactly the NICs its rdmatopo.io/nics
// annotation names (the pods running before the trace starts), as
// nodeagent.Exact gives them. It only changes the agent's copy; the KCNRs
// are written after.
func (a *agent) preallocate(p *corev1.Pod) error {
	nics, err := ledger.ParseNICs(p.Annotations[ledger.AnnotationNICs])
	if err != nil {
		return fmt.Errorf("pod %s: %w", podKey(p), err)
	}
	if len(nics) == 0 {
		return nil
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	cnr := a.cnrs[p.Spec.NodeName]
	if cnr == nil {
		return fmt.Errorf("pod %s: no KCNR for node %s", podKey(p), p.Spec.NodeName)
	}
	r, how := nodeagent.Decide(nodeagent.Exact, a.cfg, cnr, nil, p)
	if how == nodeagent.Unplaced {
		return fmt.Errorf("pod %s: annotation %s=%q: the pod requests no %s or node %s lists none of these NICs",
			podKey(p), ledger.AnnotationNICs, p.Annotations[ledger.AnnotationNICs], a.cfg.RDMAResource, p.Spec.NodeName)
	}
	for _, n := range nics {
		if !slices.ContainsFunc(r.Zones, func(u ledger.ZoneUse) bool { return slices.Contains(u.NICs, n) }) {
			return fmt.Errorf("pod %s: annotation %s names NIC %s, which node %s does not list", podKey(p), ledger.AnnotationNICs, n, p.Spec.NodeName)
		}
	}
	a.record(p, cnr, r)
	return nil
}

// observe is called for every pod the driver's informer sees.
func (a *agent) observe(p *corev1.Pod) {
	if p.Spec.NodeName == "" || p.DeletionTimestamp != nil {
		return
	}
	if q := workload.PodRequests(&p.Spec)[corev1.ResourceName(a.cfg.RDMAResource)]; q.Value() == 0 {
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

// allocate hands a bound pod its devices (a.mu held). The agent's copy of
// the KCNR is current (it lists every pod the agent confirmed), so nothing
// is held beside it.
func (a *agent) allocate(p *corev1.Pod) {
	cnr := a.cnrs[p.Spec.NodeName]
	if cnr == nil {
		return
	}
	if _, ok := p.Annotations[consts.PodAnnotationNUMABindResultKey]; ok {
		a.hinted++
	} else {
		a.unhinted++
	}
	r, how := nodeagent.Decide(a.mode, a.cfg, cnr, nil, p)
	if how == nodeagent.Unplaced {
		return
	}
	if how.Misaligned() {
		a.misaligned++
	}
	a.record(p, cnr, r)
}

// record lists pod p's reservation r in the agent's copy of its node's
// KCNR and keeps the leaves of its NICs (a.mu held).
func (a *agent) record(p *corev1.Pod, cnr *v1alpha1.CustomNodeResource, r ledger.Reservation) {
	consumer := nodeagent.Consumer(p)
	nodeagent.Record(cnr, a.cfg, consumer, r)
	a.held[podKey(p)] = &heldPod{node: cnr.Name, consumer: consumer}
	a.dirty[cnr.Name] = true
	var leaves []string
	for _, u := range r.Zones {
		for _, nic := range u.NICs {
			for _, prop := range cnr.Spec.NodeResourceProperties {
				if prop != nil && strings.EqualFold(prop.PropertyName, rdmaTorPrefix+string(nic)) && len(prop.PropertyValues) > 0 {
					leaves = append(leaves, prop.PropertyValues[0])
				}
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
