package topologyallocate_test

// The shipped conf, which these tests run, lists topology-preempt and
// topology-reclaim next to topology-allocate: register them as the
// scheduler binary does.
import (
	_ "github.com/rdmatopo/rdmatopo/actions/topologypreempt"
	_ "github.com/rdmatopo/rdmatopo/actions/topologyreclaim"
)
