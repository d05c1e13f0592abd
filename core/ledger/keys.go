package ledger

// Keys of the job contract beyond mode and highest tier (annotations.go),
// and the PodGroup keys the scheduler writes for waiting gangs.
const (
	// KeyPrefix is the prefix of every rdmatopo annotation. On a job or
	// PodGroup, a key under it that is not part of the contract (or written
	// by the scheduler) is an input error, so a typo never goes unnoticed.
	KeyPrefix = "rdmatopo.io/"
	// AnnotationMaxWait (PodGroup): a Go duration; with mode hard, how long
	// the gang waits for its highest tier before it is placed as soft.
	AnnotationMaxWait = "rdmatopo.io/max-wait"
	// AnnotationWaitingSince (PodGroup, written by the scheduler): RFC 3339
	// time of the first failed attempt to place the gang.
	AnnotationWaitingSince = "rdmatopo.io/waiting-since"
)
