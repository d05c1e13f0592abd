package placement

// Job is what the scheduler plugin tells the actions about one job for a
// session: which of its pods request RDMA NICs, the contract its gang is
// planned with now and, when asked, the planner request of its pending
// pods. Both topology actions read a job through it.
type Job struct {
	// RDMA holds the UIDs of the job's pods that request RDMA NICs; empty
	// when the job is no RDMA gang.
	RDMA map[string]bool
	// Contract is the contract the gang is planned with now: its own, or,
	// once a hard gang's max-wait has passed since it started waiting, the
	// same as soft (Relaxed). Zero for a job without RDMA pods.
	Contract Contract
	// Relaxed is set when Contract is a hard contract relaxed to soft.
	Relaxed bool
	// Request is the planner request of the pending pods the job was asked
	// for (each pod's shape and rank, the gang's occupancy and contract),
	// zero when none was: the caller sets each pod's Group and what the
	// session admits (Allowed, Admit, Need) before planning it.
	Request Gang
}

// IsRDMA reports whether any pod of the job requests RDMA NICs.
func (j Job) IsRDMA() bool { return len(j.RDMA) > 0 }

// Requests reports whether the job's pod uid requests RDMA NICs.
func (j Job) Requests(uid string) bool { return j.RDMA[uid] }
