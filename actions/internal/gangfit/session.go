package gangfit

import (
	"volcano.sh/volcano/pkg/scheduler/api"
	"volcano.sh/volcano/pkg/scheduler/framework"

	"github.com/rdmatopo/rdmatopo/core/preemption"
)

// ClaimedAgainst returns the claims that keep the job out of their rooms
// (preemption.Against): those of older pending gangs of its priority that
// are still short of their minimum in the session. A job with pods placed
// is kept out of none. Both actions plan gangs with them excluded
// (preemption.KeepOff).
func ClaimedAgainst(ssn *framework.Session, p *preemption.Access, job *api.JobInfo) []*preemption.Claim {
	if job == nil || job.ReadyTaskNum() > 0 {
		return nil
	}
	return preemption.Against(p.Claims(), string(job.UID), job.Priority, job.CreationTimestamp, func(uid string, prio int32) bool {
		claimer := ssn.Jobs[api.JobID(uid)]
		return claimer != nil && claimer.Priority == prio && claimer.ReadyTaskNum() < claimer.MinAvailable
	})
}
