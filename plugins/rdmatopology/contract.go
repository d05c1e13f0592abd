package rdmatopology

import (
	"fmt"
	"strings"
	"sync"

	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"
	"volcano.sh/volcano/pkg/scheduler/api"

	"github.com/rdmatopo/rdmatopo/core/placement"
)

// contractOf is a job's contract as read once in a session.
type contractOf struct {
	c   placement.Contract
	err error
}

// contract reads the job's contract from its PodGroup or, when the PodGroup
// states none, from its pods (placement.ParseGangContract), strictly. An
// error means the gang must not be placed: it wraps
// placement.ErrInvalidContract and names the PodGroup and every bad
// annotation (or the pods that disagree). Read once per session.
func (s *SessionState) contract(job *api.JobInfo) (placement.Contract, error) {
	s.mu.Lock()
	r, ok := s.contracts[job.UID]
	s.mu.Unlock()
	if ok {
		return r.c, r.err
	}
	r.c, r.err = JobContract(job, s.rt.nativeOf(job), s.rt.volcanoTiers())
	if len(r.c.Overridden) > 0 {
		s.rt.aliases.warn(s.rt.recorder, job, r.c.Overridden)
	}
	s.mu.Lock()
	if s.contracts == nil {
		s.contracts = map[api.JobID]contractOf{}
	}
	s.contracts[job.UID] = r
	s.mu.Unlock()
	return r.c, r.err
}

// JobContract reads a job's contract from its PodGroup (annotations and,
// from native, spec.networkTopology and spec.subGroupPolicy, with tiers
// mapped by tiers) and its pods (see SessionState.contract), without a
// session's cache.
func JobContract(job *api.JobInfo, native *placement.NativeTopology, tiers placement.VolcanoTiers) (placement.Contract, error) {
	if job.PodGroup == nil {
		return placement.DefaultContract(), nil
	}
	pods := make([]placement.MemberAnnotations, 0, len(job.Tasks))
	for _, t := range job.Tasks {
		if t.Pod != nil {
			pods = append(pods, placement.MemberAnnotations{Name: t.Pod.Name, Annotations: t.Pod.Annotations, Labels: t.Pod.Labels})
		}
	}
	c, problems := placement.ReadGangContract(placement.ContractInput{Group: job.PodGroup.Annotations, Native: native,
		MinMember: job.PodGroup.Spec.MinMember, Tiers: tiers, Pods: pods})
	if err := placement.ContractErr(problems); err != nil {
		return c, fmt.Errorf("PodGroup %s/%s: %w", job.Namespace, job.Name, err)
	}
	return c, nil
}

// ReasonOverriddenAnnotation is the Warning Event reason on a PodGroup whose
// contract layers disagree: a Volcano network-topology annotation, the
// PodGroup's spec.networkTopology or spec.subGroupPolicy, and the
// rdmatopo.io annotations, later ones winning (docs/design.md).
const ReasonOverriddenAnnotation = "OverriddenAnnotation"

// aliasWarnings remembers the PodGroups warned about overridden Volcano
// annotations, so each is reported once per runtime.
type aliasWarnings struct {
	mu     sync.Mutex
	warned map[api.JobID]string
}

// warn logs and records (recorder may be nil) the overridden annotations
// of the job's PodGroup, once per distinct message.
func (w *aliasWarnings) warn(recorder record.EventRecorder, job *api.JobInfo, overridden []string) {
	msg := overrideMessage(overridden)
	w.mu.Lock()
	if w.warned == nil || len(w.warned) >= maxWarnedPods {
		w.warned = map[api.JobID]string{}
	}
	done := w.warned[job.UID] == msg
	w.warned[job.UID] = msg
	w.mu.Unlock()
	if done {
		return
	}
	klog.InfoS("Volcano network-topology annotation overridden", "podGroup", klog.KRef(job.Namespace, job.Name), "annotations", overridden)
	if recorder != nil && job.PodGroup != nil {
		ref := &v1.ObjectReference{Kind: "PodGroup", APIVersion: "scheduling.volcano.sh/v1beta1",
			Namespace: job.Namespace, Name: job.PodGroup.Name, UID: job.PodGroup.UID}
		recorder.Event(ref, v1.EventTypeWarning, ReasonOverriddenAnnotation, msg)
	}
}

// overrideMessage says which contract settings were overridden and by
// what; the PodGroup's condition carries it too.
func overrideMessage(overridden []string) string {
	return "contract settings overridden by a layer of higher precedence: " + strings.Join(overridden, "; ")
}
