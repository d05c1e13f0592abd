package rdmatopology

import (
	"fmt"

	"volcano.sh/volcano/pkg/scheduler/api"

	"github.com/rdmatopo/rdmatopo/framework/placement"
)

// contractOf is a job's contract as read once in a session.
type contractOf struct {
	c   placement.Contract
	err error
}

// Contract reads the job's contract from its PodGroup or, when the PodGroup
// states none, from its pods (placement.ParseGangContract), strictly. An
// error means the gang must not be placed: it wraps
// placement.ErrInvalidContract and names the PodGroup and every bad
// annotation (or the pods that disagree). Read once per session.
func (s *Session) Contract(job *api.JobInfo) (placement.Contract, error) {
	s.mu.Lock()
	r, ok := s.contracts[job.UID]
	s.mu.Unlock()
	if ok {
		return r.c, r.err
	}
	r.c, r.err = JobContract(job)
	s.mu.Lock()
	if s.contracts == nil {
		s.contracts = map[api.JobID]contractOf{}
	}
	s.contracts[job.UID] = r
	s.mu.Unlock()
	return r.c, r.err
}

// JobContract reads a job's contract from its PodGroup and its pods (see
// Session.Contract), without a session's cache.
func JobContract(job *api.JobInfo) (placement.Contract, error) {
	if job.PodGroup == nil {
		return placement.DefaultContract(), nil
	}
	pods := make([]placement.MemberAnnotations, 0, len(job.Tasks))
	for _, t := range job.Tasks {
		if t.Pod != nil {
			pods = append(pods, placement.MemberAnnotations{Name: t.Pod.Name, Annotations: t.Pod.Annotations})
		}
	}
	c, err := placement.ParseGangContract(job.PodGroup.Annotations, pods)
	if err != nil {
		return c, fmt.Errorf("PodGroup %s/%s: %w", job.Namespace, job.Name, err)
	}
	return c, nil
}
