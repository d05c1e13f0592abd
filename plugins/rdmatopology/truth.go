// Node truth: the KCNR is the truth for every pod it lists.
//
// The node agent, not the scheduler, hands out devices. When a node's KCNR
// lists a bound pod on other NICs or zones than the scheduler reserved, the
// session adopts what the KCNR lists (ledger.Adopt frees the planned NICs),
// patches the pod's rdmatopo.io/nics|numa|s0 annotations to the real
// values, records a NICMismatch Event on the pod (once per pod), counts the
// mismatch, and remembers the gang's planned placement so its PodGroup shows
// "planned" beside the realized placement.

package rdmatopology

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"
	"volcano.sh/volcano/pkg/scheduler/api"

	"github.com/rdmatopo/rdmatopo/core/ledger"
	"github.com/rdmatopo/rdmatopo/core/placement"
	"github.com/rdmatopo/rdmatopo/core/topology"
	"github.com/rdmatopo/rdmatopo/plugins/rdmatopology/schedmetrics"
)

// ReasonNICMismatch is the reason of the Event on a pod the node agent gave
// other NICs than the scheduler reserved.
const ReasonNICMismatch = "NICMismatch"

// patchTimeout bounds one annotation patch of a mismatched pod.
const patchTimeout = 10 * time.Second

var (
	// nicMismatches counts bound pods whose KCNR entry differed from their
	// reservation.
	nicMismatches = schedmetrics.Counter("nic_mismatch_total",
		"Bound RDMA pods the node agent gave other NICs or zones than the scheduler reserved.")
	// gangsRealizedWider counts gangs whose realized placement is wider than
	// planned, by planned and realized tier.
	gangsRealizedWider = schedmetrics.CounterVec("gangs_realized_wider_total",
		"RDMA gangs whose placement as the nodes realized it is wider than planned, by planned and realized tier.", "planned", "realized")
)

// PodPatcher writes annotations onto a live pod (a merge patch of
// metadata.annotations).
type PodPatcher func(ctx context.Context, namespace, name string, annotations map[string]string) error

// KubePodPatcher returns a PodPatcher on a Kubernetes client.
func KubePodPatcher(kc kubernetes.Interface) PodPatcher {
	return func(ctx context.Context, namespace, name string, ann map[string]string) error {
		patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": ann}})
		if err != nil {
			return err
		}
		_, err = kc.CoreV1().Pods(namespace).Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{})
		return err
	}
}

// truth is the runtime's memory of adoptions, across sessions.
type truth struct {
	mu sync.Mutex
	// evented marks pods whose NICMismatch Event was recorded.
	evented map[string]bool
	// planned is the placement each gang was planned at, kept while the
	// gang's realized placement differs from it.
	planned map[api.JobID]PlannedPlacement
	// wider marks gangs counted in gangsRealizedWider.
	wider map[api.JobID]bool
}

// PlannedPlacement is the placement the scheduler planned for a gang,
// written as "planned" in rdmatopo.io/placement when the nodes realized
// another one.
type PlannedPlacement = ledger.GangPlacement

// newTruth returns an empty adoption memory.
func newTruth() *truth {
	return &truth{evented: map[string]bool{}, planned: map[api.JobID]PlannedPlacement{}, wider: map[api.JobID]bool{}}
}

// adopt is reconcile's last step: confirm reservations the KCNRs list and
// adopt what they list where it differs from the reservation.
func (s *SessionState) adopt(tasks map[string]*api.TaskInfo) {
	// A consumer no pod of the session has is a deleted pod whose
	// allocation the KCNR has not dropped yet. The consumers are indexed on
	// first use: Adopt asks only when a pod lost a NIC to another.
	var live map[string]bool
	gone := func(consumer string) bool {
		if live == nil {
			live = make(map[string]bool, len(tasks))
			for _, t := range tasks {
				live[ledger.ConsumerID(t.Namespace, t.Name, string(t.UID))] = true
			}
		}
		return !live[consumer]
	}
	mismatches, displaced := s.rt.Ledger.Adopt(s.fabric, gone)
	t := s.rt.truth
	byJob := map[api.JobID][]ledger.Mismatch{}
	// A pod whose reserved NIC went to a pod the KCNR lists holds another
	// free NIC of its node instead: its annotations follow its reservation
	// (it is no mismatch of its own until its KCNR entry says so), and its
	// gang's plan is the one it had before.
	for _, d := range displaced {
		klog.V(3).InfoS("A listed pod took a NIC reserved for a pod its node has not reported yet; the reservation takes another free NIC",
			"pod", klog.KRef(d.Planned.Namespace, d.Planned.Name), "node", d.Planned.Node,
			"planned", d.Planned.NICs(), "now", d.Realized.NICs())
		s.patchPod(t, d.Planned, d.Realized)
		byJob[api.JobID(d.Planned.Job)] = append(byJob[api.JobID(d.Planned.Job)], d)
	}
	for _, m := range mismatches {
		nicMismatches.Inc()
		byJob[api.JobID(m.Planned.Job)] = append(byJob[api.JobID(m.Planned.Job)], m)
		klog.InfoS("Node agent placed a pod on other NICs than reserved; adopting the CustomNodeResource's",
			"pod", klog.KRef(m.Planned.Namespace, m.Planned.Name), "node", m.Planned.Node,
			"planned", m.Planned.NICs(), "realized", m.Realized.NICs(), "contested", m.Contested)
		s.patchPod(t, m.Planned, m.Realized)
		s.mismatchEvent(t, m, tasks[m.Planned.UID])
	}
	s.noteRealized(t, byJob)
}

// noteRealized records, for each gang a pod of which the KCNRs placed
// otherwise (byJob), the placement it was planned with (the first time)
// and whether the nodes realized it at a wider tier.
func (s *SessionState) noteRealized(t *truth, byJob map[api.JobID][]ledger.Mismatch) {
	if len(byJob) == 0 {
		return
	}
	// The planned placement of each gang: its reservations as they were
	// before this adoption.
	jobs := make([]string, 0, len(byJob))
	for id := range byJob {
		jobs = append(jobs, string(id))
	}
	sort.Strings(jobs)
	// The affected gangs' reservations after adoption, in one walk.
	after := make(map[api.JobID]map[string]ledger.Reservation, len(byJob))
	s.rt.Ledger.Each(func(r ledger.Reservation) {
		id := api.JobID(r.Job)
		if _, ok := byJob[id]; !ok {
			return
		}
		if after[id] == nil {
			after[id] = map[string]ledger.Reservation{}
		}
		after[id][r.UID] = r
	})
	for _, id := range jobs {
		jobID := api.JobID(id)
		if jobID == "" {
			continue
		}
		planned := after[jobID]
		if planned == nil {
			planned = map[string]ledger.Reservation{}
		}
		realized := placementOf(s.fabric, planned)
		for _, m := range byJob[jobID] {
			planned[m.Planned.UID] = m.Planned
		}
		plan := placementOf(s.fabric, planned)
		t.mu.Lock()
		if _, ok := t.planned[jobID]; !ok {
			t.planned[jobID] = plan
		}
		first := t.planned[jobID]
		if !t.wider[jobID] && tierRank(realized.Tier) > tierRank(first.Tier) {
			t.wider[jobID] = true
			gangsRealizedWider.WithLabelValues(first.Tier, realized.Tier).Inc()
		}
		t.mu.Unlock()
	}
}

// patchPod writes the realized reservation's annotations on its pod. A
// container split the plan had and r lost is overwritten with "" (a merge
// patch of string values cannot remove a key; "" reads as no split).
func (s *SessionState) patchPod(t *truth, planned, r ledger.Reservation) {
	patch := s.rt.patch
	if patch == nil {
		kc := s.ssn.KubeClient()
		if kc == nil {
			return
		}
		patch = KubePodPatcher(kc)
	}
	ann := r.Annotations(s.fabric)
	if _, ok := ann[ledger.AnnotationContainers]; !ok && len(planned.Containers) > 0 {
		ann[ledger.AnnotationContainers] = ""
	}
	ctx, cancel := context.WithTimeout(context.Background(), patchTimeout)
	defer cancel()
	if err := patch(ctx, r.Namespace, r.Name, ann); err != nil {
		klog.ErrorS(err, "Cannot patch the realized NICs onto the pod", "pod", klog.KRef(r.Namespace, r.Name))
	}
}

// mismatchEvent records the NICMismatch Event on the pod, once per pod.
func (s *SessionState) mismatchEvent(t *truth, m ledger.Mismatch, task *api.TaskInfo) {
	t.mu.Lock()
	done := t.evented[m.Planned.UID]
	t.evented[m.Planned.UID] = true
	t.mu.Unlock()
	if done || s.rt.recorder == nil {
		return
	}
	ref := &v1.ObjectReference{Kind: "Pod", APIVersion: "v1", Namespace: m.Planned.Namespace, Name: m.Planned.Name, UID: types.UID(m.Planned.UID)}
	if task != nil && task.Pod != nil {
		ref.ResourceVersion = task.Pod.ResourceVersion
	}
	s.rt.recorder.Event(ref, v1.EventTypeWarning, ReasonNICMismatch,
		fmt.Sprintf("node %s gave NICs %s (NUMA %s) instead of the reserved %s (NUMA %s); the scheduler adopted the node's choice",
			m.Planned.Node, ledger.FormatNICs(m.Realized.NICs()), ledger.FormatNUMA(m.Realized.NUMAs()),
			ledger.FormatNICs(m.Planned.NICs()), ledger.FormatNUMA(m.Planned.NUMAs())))
}

// forget drops what the runtime remembers of pods and gangs that are gone.
func (t *truth) forget(live map[string]*api.TaskInfo, jobs map[api.JobID]*api.JobInfo) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for uid := range t.evented {
		if _, ok := live[uid]; !ok {
			delete(t.evented, uid)
		}
	}
	for id := range t.planned {
		if _, ok := jobs[id]; !ok {
			delete(t.planned, id)
			delete(t.wider, id)
		}
	}
}

// plannedFor returns the planned placement to write beside the realized
// one, or nil when they agree: the runtime's record, else (after a restart)
// the one the PodGroup already carries.
func (s *SessionState) plannedFor(job *api.JobInfo, realized PlacementAnnotation) *PlannedPlacement {
	p, ok := s.plannedOf(job)
	if !ok || (p.Tier == realized.Tier && equalStrings(p.S0, realized.S0) && equalStrings(p.S1, realized.S1)) {
		return nil
	}
	return &p
}

// plannedOf returns the placement the gang was planned at, if the nodes
// ever placed one of its pods otherwise: the runtime's record, else (after
// a restart) the one the PodGroup carries.
func (s *SessionState) plannedOf(job *api.JobInfo) (PlannedPlacement, bool) {
	t := s.rt.truth
	t.mu.Lock()
	p, ok := t.planned[job.UID]
	t.mu.Unlock()
	if !ok && job.PodGroup != nil {
		var cur struct {
			Planned *PlannedPlacement `json:"planned"`
		}
		if raw := job.PodGroup.Annotations[ledger.AnnotationPlacement]; raw != "" && json.Unmarshal([]byte(raw), &cur) == nil && cur.Planned != nil {
			p, ok = *cur.Planned, true
		}
	}
	return p, ok
}

// placementOf summarizes reservations as a placement: tier, S0s, S1s.
func placementOf(f *topology.Fabric, rs map[string]ledger.Reservation) PlannedPlacement {
	return summarize(occupancyOf(f, rs))
}

// tierRank orders tier names, tightest first; unknown names rank last.
func tierRank(name string) int {
	if t, err := placement.ParseTier(name); err == nil {
		return int(t)
	}
	return int(placement.TierCluster) + 1
}

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func equalStrings(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
