package explain

import (
	"fmt"
	"sort"

	"github.com/rdmatopo/rdmatopo/internal/sim/simjson"
)

// WithSession puts the scheduler's next session (rep: one cycle of the
// cluster's conf over every waiting gang, in Volcano's order, as
// kubectl-rdmatopo-simulate runs it) in a waiting gang's explanation, in
// place of the planner's answer for the gang alone: the gangs ahead of it
// in the queue are placed first, as the scheduler places them, so "Would
// be placed now at" is where the scheduler (and simulate) would put it, or
// nothing when that session leaves it waiting.
func (e *Explanation) WithSession(rep *simjson.Report) {
	if e.State != StateWaiting {
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
		p := &Placement{Tier: j.Tier, S0: orNil(j.S0), S1: orNil(j.S1), Nodes: []string{}}
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

// orNil is s, nil when empty (a session's placement without leaves reads
// null, as the scheduler's report has it).
func orNil(s []string) []string {
	if len(s) == 0 {
		return nil
	}
	return s
}
