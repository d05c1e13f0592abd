package live

import (
	"encoding/json"
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	schedulingv1beta1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"

	"github.com/rdmatopo/rdmatopo/core/ledger"
	"github.com/rdmatopo/rdmatopo/internal/workload"
)

// Job is a gang as the cluster shows it: its PodGroup, its pods and what
// the scheduler wrote on them.
type Job struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	// UID is the PodGroup's UID: the job's identity for its lifetime.
	UID string `json:"uid"`
	// Created is the PodGroup's creation time (older jobs keep their map
	// colour first).
	Created time.Time `json:"-"`
	// From is the PodGroup's controller ("Job/llm", "PyTorchJob/bert"),
	// empty for a plain PodGroup.
	From      string `json:"from"`
	Phase     string `json:"phase"`
	MinMember int32  `json:"minMember"`
	// Pods counts the job's unfinished pods; Bound those bound to a node.
	Pods  int `json:"pods"`
	Bound int `json:"bound"`
	// Placed is true when at least minMember (and one) pods are bound.
	Placed bool `json:"placed"`
	// RDMA is true when a pod of the job requests the RDMA resource.
	RDMA bool `json:"rdma"`
	// GangPlacement comes from the scheduler's rdmatopo.io/placement
	// annotation on the PodGroup.
	ledger.GangPlacement
	// Reason is what the scheduler last said about a job that is not
	// placed (its PodGroup's Unschedulable condition).
	Reason string `json:"reason"`
}

// Key is "namespace/name".
func (j Job) Key() string { return j.Namespace + "/" + j.Name }

// OwnerOf names a PodGroup's controller as "Kind/name", or "".
func OwnerOf(pg *schedulingv1beta1.PodGroup) string {
	if ref := metav1.GetControllerOf(pg); ref != nil {
		return ref.Kind + "/" + ref.Name
	}
	if len(pg.OwnerReferences) > 0 {
		return pg.OwnerReferences[0].Kind + "/" + pg.OwnerReferences[0].Name
	}
	return ""
}

// PodsOf returns the snapshot's unfinished pods of a PodGroup (bound ones
// first), by namespace/name.
func (s *Snapshot) PodsOf(namespace, podGroup string) (bound, pending []*corev1.Pod) {
	of := func(p *corev1.Pod) bool {
		return p.Namespace == namespace && p.Annotations[schedulingv1beta1.KubeGroupNameAnnotationKey] == podGroup
	}
	for _, p := range s.Cluster.Pods {
		if of(p) {
			bound = append(bound, p)
		}
	}
	for _, p := range s.Pending {
		if of(p) {
			pending = append(pending, p)
		}
	}
	return bound, pending
}

// Jobs summarises every PodGroup that has unfinished pods, by
// namespace/name.
func (s *Snapshot) Jobs(rdmaResource string) []Job {
	var out []Job
	for _, pg := range s.PodGroups {
		bound, pending := s.PodsOf(pg.Namespace, pg.Name)
		if len(bound)+len(pending) == 0 {
			continue
		}
		j := Job{
			Namespace: pg.Namespace, Name: pg.Name, UID: string(pg.UID), Created: pg.CreationTimestamp.Time, From: OwnerOf(pg), Phase: string(pg.Status.Phase),
			MinMember: pg.Spec.MinMember, Pods: len(bound) + len(pending), Bound: len(bound),
			GangPlacement: ledger.GangPlacement{S0: []string{}, S1: []string{}},
		}
		j.Placed = j.Bound > 0 && int32(j.Bound) >= j.MinMember
		for _, p := range append(append([]*corev1.Pod{}, bound...), pending...) {
			q := workload.PodRequests(&p.Spec)[corev1.ResourceName(rdmaResource)]
			if q.Sign() > 0 {
				j.RDMA = true
			}
		}
		if raw := pg.Annotations[ledger.AnnotationPlacement]; raw != "" && j.Placed {
			var pa ledger.GangPlacement
			if json.Unmarshal([]byte(raw), &pa) == nil {
				j.Tier = pa.Tier
				j.S0 = append(j.S0, pa.S0...)
				j.S1 = append(j.S1, pa.S1...)
			}
		}
		if !j.Placed {
			j.Reason = conditionMessage(pg)
		}
		out = append(out, j)
	}
	sort.SliceStable(out, func(a, b int) bool { return out[a].Key() < out[b].Key() })
	return out
}

// conditionMessage is the message of the PodGroup's latest Unschedulable
// condition, or a note that the scheduler has not reported on it yet.
func conditionMessage(pg *schedulingv1beta1.PodGroup) string {
	var best *schedulingv1beta1.PodGroupCondition
	for i := range pg.Status.Conditions {
		c := &pg.Status.Conditions[i]
		if c.Type != schedulingv1beta1.PodGroupUnschedulableType || c.Status != corev1.ConditionTrue {
			continue
		}
		if best == nil || !c.LastTransitionTime.Before(&best.LastTransitionTime) {
			best = c
		}
	}
	if best == nil {
		return "no scheduling attempt reported yet (phase " + string(pg.Status.Phase) + ")"
	}
	if best.Message != "" {
		return best.Message
	}
	return best.Reason
}
