package placement

// Job is what the scheduler plugin tells the actions about one job for a
// session: which of its pods request RDMA NICs, and the contract its gang
// is planned with now. Both topology actions read a job through it.
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
}

// IsRDMA reports whether any pod of the job requests RDMA NICs.
func (j Job) IsRDMA() bool { return len(j.RDMA) > 0 }

// Requests reports whether the job's pod uid requests RDMA NICs.
func (j Job) Requests(uid string) bool { return j.RDMA[uid] }
