package kubectlcmd

import (
	"fmt"
	"sort"

	schedulingv1beta1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"

	"github.com/rdmatopo/rdmatopo/internal/explain"
	"github.com/rdmatopo/rdmatopo/internal/live"
	"github.com/rdmatopo/rdmatopo/internal/sim"
	"github.com/rdmatopo/rdmatopo/internal/workload"
)

// nextSession runs the scheduler's next session over the live cluster: one
// cycle of the real Volcano actions and plugins of conf (what `simulate`
// runs), with every gang waiting in the cluster, in Volcano's job order.
func nextSession(conf *sim.Conf, snap *live.Snapshot) (*sim.Report, error) {
	set := &workload.Set{Queues: snap.Queues, PriorityClasses: snap.PriorityClasses}
	w, _ := waitingSet(snap, conf.Topology.WithDefaults().RDMAResource)
	set.PodGroups, set.Pods = w.PodGroups, w.Pods
	if len(set.Queues) == 0 {
		set.Queues = []*schedulingv1beta1.Queue{defaultQueue()}
	}
	s, err := sim.New(conf, snap.Cluster, sim.Options{})
	if err != nil {
		return nil, err
	}
	if err := s.Submit(set); err != nil {
		return nil, err
	}
	if _, err := s.RunCycle(); err != nil {
		return nil, err
	}
	return sim.BuildReport(s), nil
}

// sessionPlan puts the next session's outcome in a waiting gang's
// explanation, in place of the planner's answer for the gang alone: the
// gangs ahead of it in the queue are placed first, as the scheduler places
// them, so "Would be placed now at" is where the scheduler (and simulate)
// would put it, or nothing when that session leaves it waiting.
func sessionPlan(e *explain.Explanation, rep *sim.Report) {
	if e.State != explain.StateWaiting {
		return
	}
	key := e.Namespace + "/" + e.PodGroup
	alone := e.Plan
	e.Plan = nil
	for _, j := range rep.Jobs {
		if j.Namespace != e.Namespace || j.Name != e.PodGroup {
			continue
		}
		if !j.Placed {
			if alone != nil {
				e.Notes = append(e.Notes, fmt.Sprintf("alone it would fit at %s, but the scheduler's next session (the cluster's conf over every waiting gang, in Volcano's order) leaves it waiting: %s",
					alone.Tier, j.Reason))
			}
			return
		}
		p := &explain.Placement{Tier: j.Tier, S0: j.S0, S1: j.S1, Nodes: []string{}}
		seen := map[string]bool{}
		for _, pod := range rep.Pods {
			if pod.Job == key && pod.Node != "" && !seen[pod.Node] {
				seen[pod.Node] = true
				p.Nodes = append(p.Nodes, pod.Node)
			}
		}
		sort.Strings(p.Nodes)
		e.Plan = p
		return
	}
}
