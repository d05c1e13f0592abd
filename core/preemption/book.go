package preemption

import (
	"slices"
	"sync"
)

// Book is a record per job that outlives sessions (holds, claims). It is
// safe for concurrent use; its zero value is an empty book.
type Book[T any] struct {
	mu    sync.Mutex
	byJob map[string]T
}

// Put records v for the job, replacing what it had.
func (b *Book[T]) Put(job string, v T) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.byJob == nil {
		b.byJob = map[string]T{}
	}
	b.byJob[job] = v
}

// Has reports whether the job has a record.
func (b *Book[T]) Has(job string) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	_, ok := b.byJob[job]
	return ok
}

// Remove forgets the job's record.
func (b *Book[T]) Remove(job string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.byJob, job)
}

// Retain visits every record in job order, under the book's lock, and
// forgets those keep returns false for.
func (b *Book[T]) Retain(keep func(job string, v T) bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, job := range b.jobsLocked() {
		if !keep(job, b.byJob[job]) {
			delete(b.byJob, job)
		}
	}
}

// Values returns the records in job order.
func (b *Book[T]) Values() []T {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := make([]T, 0, len(b.byJob))
	for _, job := range b.jobsLocked() {
		out = append(out, b.byJob[job])
	}
	return out
}

func (b *Book[T]) jobsLocked() []string {
	jobs := make([]string, 0, len(b.byJob))
	for job := range b.byJob {
		jobs = append(jobs, job)
	}
	slices.Sort(jobs)
	return jobs
}

// Store is the preemption state of one runtime: the holds and the claims.
type Store struct {
	// Holds are the holds of waiting gangs, by job.
	Holds Book[*Hold]
	// Claims are the rooms kept for waiting hard gangs, by job.
	Claims Book[*Claim]
}
