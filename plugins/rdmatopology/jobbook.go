package rdmatopology

import (
	"slices"
	"sync"

	"volcano.sh/volcano/pkg/scheduler/api"
)

// jobBook is a record per job that outlives sessions (holds, claims),
// shared by the sessions and actions of one runtime. Its zero value is an
// empty book.
type jobBook[T any] struct {
	mu    sync.Mutex
	byJob map[api.JobID]T
}

// put records v for the job, replacing what it had.
func (b *jobBook[T]) put(job api.JobID, v T) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.byJob == nil {
		b.byJob = map[api.JobID]T{}
	}
	b.byJob[job] = v
}

// has reports whether the job has a record.
func (b *jobBook[T]) has(job api.JobID) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	_, ok := b.byJob[job]
	return ok
}

// remove forgets the job's record.
func (b *jobBook[T]) remove(job api.JobID) {
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.byJob, job)
}

// retain visits every record in job order, under the book's lock, and
// forgets those keep returns false for.
func (b *jobBook[T]) retain(keep func(job api.JobID, v T) bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, job := range b.jobsLocked() {
		if !keep(job, b.byJob[job]) {
			delete(b.byJob, job)
		}
	}
}

// values returns the records in job order.
func (b *jobBook[T]) values() []T {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := make([]T, 0, len(b.byJob))
	for _, job := range b.jobsLocked() {
		out = append(out, b.byJob[job])
	}
	return out
}

func (b *jobBook[T]) jobsLocked() []api.JobID {
	jobs := make([]api.JobID, 0, len(b.byJob))
	for job := range b.byJob {
		jobs = append(jobs, job)
	}
	slices.Sort(jobs)
	return jobs
}
