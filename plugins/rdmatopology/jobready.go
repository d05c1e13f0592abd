package rdmatopology

// The plugin's job-ready and job-pipelined votes (Volcano's JobReadyFn and
// JobPipelinedFn).

import "volcano.sh/volcano/pkg/scheduler/api"

// jobReady vetoes a job with an RDMA task allocated without NICs.
func (s *SessionState) jobReady(job *api.JobInfo) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, broken := s.broken[job.UID]
	return !broken
}

func (s *SessionState) pipelineAllowed(job api.JobID) bool {
	return s.holds.PipelineAllowed(string(job))
}
