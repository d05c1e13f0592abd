package topologyreclaim_test

import (
	"testing"

	"github.com/rdmatopo/rdmatopo/actions/topologypreempt"
	"github.com/rdmatopo/rdmatopo/actions/topologyreclaim"
	"github.com/rdmatopo/rdmatopo/core/topology"
	"github.com/rdmatopo/rdmatopo/plugins/rdmatopology"
)

// TestName: the action has its own name, apart from topology-preempt (the
// scheduler conf names each on its own).
func TestName(t *testing.T) {
	rt := rdmatopology.NewRuntime(topology.Config{})
	if got := topologyreclaim.New(rt).Name(); got != topologyreclaim.ActionName {
		t.Errorf("name %q, want %q", got, topologyreclaim.ActionName)
	}
	if got := topologypreempt.New(rt).Name(); got == topologyreclaim.ActionName {
		t.Errorf("topology-preempt is named %q too", got)
	}
}
