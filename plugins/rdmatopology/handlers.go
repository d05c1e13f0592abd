package rdmatopology

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"
	"volcano.sh/apis/pkg/apis/scheduling"
	"volcano.sh/volcano/pkg/scheduler/api"

	"github.com/kubewharf/katalyst-api/pkg/consts"

	"github.com/rdmatopo/rdmatopo/framework/ledger"
	"github.com/rdmatopo/rdmatopo/framework/placement"
	"github.com/rdmatopo/rdmatopo/framework/topology"
)

// ConditionType is the PodGroup condition the plugin maintains: True with
// the placement once a gang is placed, False with the reason while it waits.
const ConditionType scheduling.PodGroupConditionType = "RDMATopologyPlaced"

// Condition reasons.
const (
	ReasonPlaced  = "Placed"
	ReasonInvalid = string(placement.ReasonInvalidContract)
)

// predicate admits an RDMA task on a node when a NUMA zone there has the
// free GPUs and NICs (after the ledger), within the job's hard tier.
func (s *Session) predicate(task *api.TaskInfo, node *api.NodeInfo) error {
	if !s.RequestsRDMA(task) {
		return nil
	}
	s.mu.Lock()
	a, planned := s.planned[task.UID]
	s.mu.Unlock()
	if planned && a.Node == node.Name {
		for _, nic := range a.NICs() {
			if holder, held := s.State.HolderOf(node.Name, nic); held && holder != string(task.UID) {
				return s.fitError(task, node, fmt.Sprintf("planned NIC %s is held by pod %s", nic, holder))
			}
		}
		return nil
	}
	job := s.ssn.Jobs[task.Job]
	var allowed map[topology.S0ID]bool
	if job != nil {
		var ok bool
		if allowed, ok = s.tierLimit(job, node.Name); !ok {
			return s.fitError(task, node, ErrReasonTierLimit)
		}
	}
	if _, ok := s.State.Fit(node.Name, s.Shape(task), allowed); !ok {
		if allowed != nil {
			return s.fitError(task, node, ErrReasonNoNICFit+" under the gang's S0s")
		}
		return s.fitError(task, node, ErrReasonNoNICFit)
	}
	return nil
}

func (s *Session) fitError(task *api.TaskInfo, node *api.NodeInfo, reason string) error {
	return api.NewFitErrWithStatus(task, node, &api.Status{Code: api.Unschedulable, Reason: reason, Plugin: PluginName})
}

// Node scores: the planned node first, then nodes the gang already uses,
// then nodes under the gang's leaves.
const (
	scorePlanned  = 100
	scoreHeldNode = 50
	scoreHeldLeaf = 25
)

// nodeOrder prefers the job's planned nodes, then nodes close to what the
// job already holds.
func (s *Session) nodeOrder(task *api.TaskInfo, node *api.NodeInfo) (float64, error) {
	if !s.RequestsRDMA(task) {
		return 0, nil
	}
	w := float64(s.args.Weight)
	s.mu.Lock()
	a, planned := s.planned[task.UID]
	s.mu.Unlock()
	if planned && a.Node == node.Name {
		return scorePlanned * w, nil
	}
	h := s.Held(task.Job)
	if h.Nodes[node.Name] {
		return scoreHeldNode * w, nil
	}
	if n, ok := s.Fabric.Node(node.Name); ok {
		for _, z := range n.Zones {
			for _, nic := range z.NICs {
				if h.S0s[nic.S0] {
					return scoreHeldLeaf * w, nil
				}
			}
		}
	}
	return 0, nil
}

// allocate reserves the task's NICs in the ledger (the planned ones, or the
// best fit on its node) and writes the rdmatopo.io/* annotations that go
// with the bind. A task that cannot get NICs marks its job not ready, so the
// statement is discarded.
func (s *Session) allocate(task *api.TaskInfo) {
	if !s.RequestsRDMA(task) {
		stripAnnotations(task)
		return
	}
	s.mu.Lock()
	a, planned := s.planned[task.UID]
	s.mu.Unlock()
	if !planned || a.Node != task.NodeName {
		var allowed map[topology.S0ID]bool
		ok := true
		if job := s.ssn.Jobs[task.Job]; job != nil {
			allowed, ok = s.tierLimit(job, task.NodeName)
		}
		if ok {
			a, ok = s.State.Fit(task.NodeName, s.Shape(task), allowed)
		}
		if !ok {
			s.markBroken(task, "no NICs fit on node "+task.NodeName)
			return
		}
	}
	a.PodUID = string(task.UID)
	r := ledger.Reservation{UID: string(task.UID), Namespace: task.Namespace, Name: task.Name,
		Job: string(task.Job), Node: task.NodeName, Zones: a.Zones}
	if err := s.reserve(r); err != nil {
		s.markBroken(task, err.Error())
		return
	}
	s.annotate(task, a)
	klog.V(4).InfoS("Reserved NICs", "pod", klog.KRef(task.Namespace, task.Name), "node", task.NodeName, "nics", a.NICs())
}

// deallocate releases what allocate reserved (a discarded statement, an
// evicted task).
func (s *Session) deallocate(task *api.TaskInfo) {
	s.mu.Lock()
	delete(s.broken, task.Job)
	s.mu.Unlock()
	s.release(string(task.UID), task.Job)
	stripAnnotations(task)
}

func (s *Session) markBroken(task *api.TaskInfo, why string) {
	klog.ErrorS(nil, "RDMA task allocated without NICs; its gang will be discarded", "pod", klog.KRef(task.Namespace, task.Name), "reason", why)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.broken[task.Job] = why
}

// AnnotationNUMABindResult is katalyst's pod annotation naming the NUMA
// zone(s) a pod is bound to. The scheduler writes the planned zones there
// (the same ids as ledger.AnnotationNUMA, comma-separated) so that the node
// agent prefers them; docs/node-contract.md says what the node must run for
// that.
const AnnotationNUMABindResult = consts.PodAnnotationNUMABindResultKey

// schedulerKeys are the pod annotations only the scheduler writes.
var schedulerKeys = []string{ledger.AnnotationNICs, ledger.AnnotationNUMA, ledger.AnnotationS0, AnnotationNUMABindResult}

// annotate replaces the task's pod with a copy carrying the scheduler's
// annotations for assignment a; the binder sends them with the Binding.
// katalyst's numa_bind_result gets the same NUMA ids as rdmatopo.io/numa,
// replacing whatever the pod carried.
func (s *Session) annotate(task *api.TaskInfo, a placement.Assignment) {
	pod := task.Pod.DeepCopy()
	if pod.Annotations == nil {
		pod.Annotations = map[string]string{}
	}
	var numa []int
	for _, z := range a.Zones {
		numa = append(numa, z.NUMA)
	}
	nics := a.NICs()
	pod.Annotations[ledger.AnnotationNICs] = ledger.FormatNICs(nics)
	pod.Annotations[ledger.AnnotationNUMA] = ledger.FormatNUMA(numa)
	pod.Annotations[AnnotationNUMABindResult] = ledger.FormatNUMA(numa)
	pod.Annotations[ledger.AnnotationS0] = ledger.FormatS0(s.Fabric.NICLeaves(a.Node, nics))
	task.Pod = pod
}

// stripAnnotations removes scheduler-only keys a user set on a pending pod:
// they never grant anything and must not reach the Binding.
func stripAnnotations(task *api.TaskInfo) {
	if task.Pod == nil {
		return
	}
	found := false
	for _, k := range schedulerKeys {
		if _, ok := task.Pod.Annotations[k]; ok {
			found = true
		}
	}
	if !found {
		return
	}
	pod := task.Pod.DeepCopy()
	for _, k := range schedulerKeys {
		delete(pod.Annotations, k)
	}
	task.Pod = pod
}

// PlacementAnnotation is the JSON written to rdmatopo.io/placement.
type PlacementAnnotation struct {
	Tier string   `json:"tier"`
	S0   []string `json:"s0"`
	S1   []string `json:"s1"`
	// Planned is the placement the scheduler planned, present when the
	// nodes realized another one (the KCNRs listed pods on other NICs).
	Planned *PlannedPlacement `json:"planned,omitempty"`
}

// close writes each RDMA gang's outcome on its PodGroup: the placement
// annotation and a True condition once placed, a False condition with the
// reason while it waits. User-set placement annotations are replaced.
func (s *Session) close() {
	defer s.observeSession()
	for _, job := range s.ssn.Jobs {
		if job.PodGroup == nil {
			continue
		}
		if !s.IsRDMAJob(job) {
			if _, forged := job.PodGroup.Annotations[ledger.AnnotationPlacement]; forged {
				s.setPlacement(job, "")
			}
			continue
		}
		h := s.Held(job.UID)
		if h.Empty() {
			s.setPlacement(job, "")
		} else {
			nodes := len(h.Nodes)
			tier := placement.TierOf(nodes, len(h.S0s), len(h.S1s))
			ann := PlacementAnnotation{Tier: tier.String(), S0: []string{}, S1: []string{}}
			for id := range h.S0s {
				ann.S0 = append(ann.S0, string(id))
			}
			for id := range h.S1s {
				if id != "" {
					ann.S1 = append(ann.S1, string(id))
				}
			}
			sort.Strings(ann.S0)
			sort.Strings(ann.S1)
			ann.Planned = s.plannedFor(job, ann)
			data, _ := json.Marshal(ann)
			s.setPlacement(job, string(data))
			if _, err := Contract(job); err == nil && int32(h.Pods) > 0 && job.ReadyTaskNum() >= job.MinAvailable {
				s.setCondition(job, v1.ConditionTrue, ReasonPlaced,
					fmt.Sprintf("placed at tier %s on %d node(s) under S0 %s", tier, nodes, strings.Join(ann.S0, ",")))
			}
		}
		_, cerr := Contract(job)
		s.mu.Lock()
		f := s.failures[job.UID]
		s.mu.Unlock()
		waiting := f != nil && job.ReadyTaskNum() < job.MinAvailable
		note := s.waitNote(job, waiting && cerr == nil)
		switch {
		case cerr != nil:
			// Never placed under a contract it does not have: one stable
			// False condition (one Event), whether or not pods run.
			s.setCondition(job, v1.ConditionFalse, ReasonInvalid, cerr.Error())
		case waiting:
			s.setCondition(job, v1.ConditionFalse, string(f.Code), f.Message+note)
		}
	}
}

// setPlacement sets (or, with "", removes) the placement annotation.
func (s *Session) setPlacement(job *api.JobInfo, value string) {
	s.setAnnotation(job, ledger.AnnotationPlacement, value)
}

// setAnnotation sets (or, with "", removes) a scheduler-written PodGroup
// annotation; Volcano writes the PodGroup back when the session closes.
func (s *Session) setAnnotation(job *api.JobInfo, key, value string) {
	cur, ok := job.PodGroup.Annotations[key]
	if (value == "" && !ok) || (value != "" && cur == value) {
		return
	}
	ann := make(map[string]string, len(job.PodGroup.Annotations)+1)
	for k, v := range job.PodGroup.Annotations {
		ann[k] = v
	}
	if value == "" {
		delete(ann, key)
	} else {
		ann[key] = value
	}
	job.PodGroup.Annotations = ann
}

// setCondition records the plugin's condition on the job's PodGroup.
func (s *Session) setCondition(job *api.JobInfo, status v1.ConditionStatus, reason, msg string) {
	for _, c := range job.PodGroup.Status.Conditions {
		if c.Type == ConditionType && c.Status == status && c.Reason == reason && c.Message == msg {
			return // unchanged: no update, no repeated Event
		}
	}
	cond := &scheduling.PodGroupCondition{
		Type:               ConditionType,
		Status:             status,
		TransitionID:       string(s.ssn.UID),
		LastTransitionTime: metav1.Now(),
		Reason:             reason,
		Message:            msg,
	}
	if err := s.ssn.UpdatePodGroupCondition(job, cond); err != nil {
		klog.ErrorS(err, "Cannot update PodGroup condition", "podgroup", klog.KRef(job.Namespace, job.Name))
	}
	kind := v1.EventTypeWarning
	if status == v1.ConditionTrue {
		kind = v1.EventTypeNormal
	}
	s.ssn.RecordPodGroupEvent(job.PodGroup, kind, reason, msg)
}
