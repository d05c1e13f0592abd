package rdmatopology

import (
	"errors"
	"fmt"
	"testing"

	"volcano.sh/volcano/pkg/scheduler/api"
)

func TestRefusedBy(t *testing.T) {
	task := &api.TaskInfo{Namespace: "ns", Name: "p"}
	node := &api.NodeInfo{Name: "n1"}
	taint := api.NewFitErrWithStatus(task, node, &api.Status{Code: api.UnschedulableAndUnresolvable, Reason: "untolerated taint", Plugin: "TaintToleration"})
	mixed := api.NewFitErrWithStatus(task, node, &api.Status{Code: api.Success, Plugin: "NodeAffinity"},
		&api.Status{Code: api.Unschedulable, Reason: "port", Plugin: "NodePorts"})
	tests := map[string]struct {
		err  error
		want string
	}{
		"a predicate's plugin":           {fmt.Errorf("predicates refuse ns/p on n1: %w", taint), "TaintToleration"},
		"the first failing status":       {mixed, "NodePorts"},
		"a fit error naming no plugin":   {api.NewFitError(task, node, "no room"), "predicates"},
		"idle resources":                 {fmt.Errorf("node n1 has too few idle resources for ns/p: %w", errIdle), "IdleResources"},
		"the statement refused the task": {errors.New("allocate ns/p on n1: boom"), "Allocate"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if got := refusedBy(tc.err); got != tc.want {
				t.Errorf("refusedBy(%v) = %q, want %q", tc.err, got, tc.want)
			}
		})
	}
}
