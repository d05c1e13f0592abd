// Time-bounded relaxation: a hard gang with rdmatopo.io/max-wait waits up to
// that long for its highest tier, then is placed as soft (best available).
// The wait starts at the first failed attempt, recorded on the PodGroup as
// rdmatopo.io/waiting-since (RFC 3339), so a scheduler restart keeps it.

package rdmatopology

import (
	"fmt"
	"time"

	"k8s.io/klog/v2"
	"volcano.sh/volcano/pkg/scheduler/api"

	"github.com/rdmatopo/rdmatopo/core/ledger"
	"github.com/rdmatopo/rdmatopo/core/placement"
)

// Now is the runtime's current time (WithClock's, else the wall clock).
func (rt *Runtime) Now() time.Time {
	if rt.clock == nil {
		return time.Now()
	}
	return rt.clock()
}

// waitingSince reads the PodGroup's rdmatopo.io/waiting-since; false when
// absent or unreadable (an unreadable value is logged and rewritten at the
// next failed attempt).
func waitingSince(job *api.JobInfo) (time.Time, bool) {
	if job.PodGroup == nil {
		return time.Time{}, false
	}
	v, ok := job.PodGroup.Annotations[ledger.AnnotationWaitingSince]
	if !ok {
		return time.Time{}, false
	}
	t, err := time.Parse(time.RFC3339, v)
	if err != nil {
		klog.InfoS("Unreadable waiting-since annotation; the wait restarts", "podgroup", klog.KRef(job.Namespace, job.Name), "value", v, "err", err)
		return time.Time{}, false
	}
	return t, true
}

// effectiveContract is the contract the gang is planned with now: its own,
// or, once a hard gang's max-wait has passed since it started waiting, the
// same as soft (relaxed true). The error is Contract's.
func (s *SessionState) effectiveContract(job *api.JobInfo) (c placement.Contract, relaxed bool, err error) {
	c, err = s.contract(job)
	if err != nil || c.Mode != placement.ModeHard || c.MaxWait <= 0 {
		return c, false, err
	}
	since, ok := waitingSince(job)
	if !ok || s.rt.Now().Sub(since) < c.MaxWait {
		return c, false, nil
	}
	// max-wait ends the tier and the segment requirement together.
	c.Mode, c.Segment = placement.ModeSoft, placement.Segment{}
	return c, true, nil
}

// waitNote updates the gang's waiting-since annotation after the session's
// attempt and returns what to add to its waiting reason: how long until it
// is placed as soft, or that it already is. The wait ends (the annotation
// goes) only once minMember pods are bound (whole): a gang placed in this
// session whose binds then fail keeps its wait, so a relaxed gang completes
// as soft instead of waiting max-wait again for its last pods.
func (s *SessionState) waitNote(job *api.JobInfo, waiting, whole bool) string {
	since, ok := waitingSince(job)
	if !waiting {
		if ok && whole {
			s.setAnnotation(job, ledger.AnnotationWaitingSince, "")
		}
		return ""
	}
	now := s.rt.Now()
	if !ok {
		since = now
		s.setAnnotation(job, ledger.AnnotationWaitingSince, now.UTC().Format(time.RFC3339))
	}
	c, err := s.contract(job)
	if err != nil || c.Mode != placement.ModeHard || c.MaxWait <= 0 {
		return ""
	}
	if left := since.Add(c.MaxWait).Sub(now); left > 0 {
		return fmt.Sprintf("; placed as soft (best available) in %s if still waiting (max-wait %s)", left.Round(time.Second), c.MaxWait)
	}
	return fmt.Sprintf("; max-wait %s has passed: placed as soft once free capacity holds it", c.MaxWait)
}
