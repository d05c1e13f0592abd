package topologyreclaim_test

import (
	"testing"

	"volcano.sh/volcano/pkg/scheduler/framework"

	"github.com/rdmatopo/rdmatopo/actions/topologypreempt"
	"github.com/rdmatopo/rdmatopo/actions/topologyreclaim"
)

// TestRegistered: the action is registered under its name, apart from
// topology-preempt (the scheduler conf names each on its own).
func TestRegistered(t *testing.T) {
	a, ok := framework.GetAction(topologyreclaim.ActionName)
	if !ok || a.Name() != topologyreclaim.ActionName {
		t.Fatalf("action %q registered: %v (name %q)", topologyreclaim.ActionName, ok, nameOf(a))
	}
	p, ok := framework.GetAction(topologypreempt.ActionName)
	if !ok || p == a {
		t.Errorf("topology-preempt registered %v, same object as topology-reclaim: %v", ok, p == a)
	}
}

func nameOf(a framework.Action) string {
	if a == nil {
		return ""
	}
	return a.Name()
}
