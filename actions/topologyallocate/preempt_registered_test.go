package topologyallocate_test

// The shipped conf, which these tests run, lists topology-preempt next to
// topology-allocate: register it as the scheduler binary does.
import _ "github.com/rdmatopo/rdmatopo/actions/topologypreempt"
