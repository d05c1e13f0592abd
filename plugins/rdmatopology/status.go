package rdmatopology

// What the session writes back on each RDMA gang's PodGroup when it closes:
// the placement annotation, waiting-since, and the RDMATopologyPlaced
// condition with its Event.

import (
	"sort"
	"strings"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"
	"volcano.sh/apis/pkg/apis/scheduling"
	"volcano.sh/volcano/pkg/scheduler/api"

	"github.com/rdmatopo/rdmatopo/core/ledger"
	"github.com/rdmatopo/rdmatopo/core/placement"
)

// ConditionType is the PodGroup condition the plugin maintains: True with
// the placement once a gang is placed, False with the reason while it waits.
const ConditionType scheduling.PodGroupConditionType = "RDMATopologyPlaced"

// Condition reasons.
const (
	ReasonPlaced  = "Placed"
	ReasonInvalid = string(placement.ReasonInvalidContract)
)

// PlacementAnnotation is the JSON written to rdmatopo.io/placement.
type PlacementAnnotation struct {
	// GangPlacement is the placement the nodes realized.
	ledger.GangPlacement
	// RingCrossings counts the leaf changes along the ring over the gang's
	// pods that hold NICs, in rank order (the last rank back to rank 0);
	// absent when a rank annotation is invalid.
	RingCrossings *int `json:"ringCrossings,omitempty"`
	// Planned is the placement the scheduler planned, present when the
	// nodes realized another one (the KCNRs listed pods on other NICs).
	Planned *PlannedPlacement `json:"planned,omitempty"`
}

// overrideNote is the condition's remark on the job's contract settings
// that a layer of higher precedence overrode ("" when none).
func (s *SessionState) overrideNote(job *api.JobInfo) string {
	c, err := s.contract(job)
	if err != nil || len(c.Overridden) == 0 {
		return ""
	}
	return "; " + overrideMessage(c.Overridden)
}

// ringCrossings counts the leaf changes along the rank ring of the job's
// pods that hold NICs (placement.RingCrossings over each pod's sorted
// leaves), or nil when the pods' ranks are invalid.
func (s *SessionState) ringCrossings(job *api.JobInfo) *int {
	tasks := make([]*api.TaskInfo, 0, len(job.Tasks))
	for _, t := range job.Tasks {
		tasks = append(tasks, t)
	}
	sort.Slice(tasks, func(i, j int) bool { return tasks[i].Name < tasks[j].Name })
	ranks, err := s.taskRanks(tasks)
	if err != nil {
		return nil
	}
	s.mu.Lock()
	rs := s.byJob[job.UID]
	keys := make([]string, len(tasks))
	for i, t := range tasks {
		r, ok := rs[string(t.UID)]
		if !ok {
			continue
		}
		var leaves []string
		for _, l := range s.fabric.NICLeaves(r.Node, r.NICs()) {
			leaves = append(leaves, string(l))
		}
		sort.Strings(leaves)
		keys[i] = strings.Join(leaves, ",")
	}
	s.mu.Unlock()
	idx := make([]int, len(tasks))
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool { return ranks[idx[a]] < ranks[idx[b]] })
	var ring []string
	for _, i := range idx {
		if keys[i] != "" {
			ring = append(ring, keys[i])
		}
	}
	n := placement.RingCrossings(ring)
	return &n
}

// boundTasks counts the job's tasks bound to a node as the session found
// them (Bound, Running, or already Succeeded): not those allocated in this
// session, whose binds may still fail.
func boundTasks(job *api.JobInfo) int {
	return len(job.TaskStatusIndex[api.Bound]) + len(job.TaskStatusIndex[api.Running]) +
		len(job.TaskStatusIndex[api.Succeeded])
}

// setPlacement sets (or, with "", removes) the placement annotation.
func (s *SessionState) setPlacement(job *api.JobInfo, value string) {
	s.setAnnotation(job, ledger.AnnotationPlacement, value)
}

// setAnnotation sets (or, with "", removes) a scheduler-written PodGroup
// annotation; Volcano writes the PodGroup back when the session closes.
func (s *SessionState) setAnnotation(job *api.JobInfo, key, value string) {
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
func (s *SessionState) setCondition(job *api.JobInfo, status v1.ConditionStatus, reason, msg string) {
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
