package rdmatopology

// The plugin's node order (Volcano's NodeOrderFn): towards the plan and the
// gang's leaves.

import "volcano.sh/volcano/pkg/scheduler/api"

// Node scores: the planned node first, then nodes the gang already uses,
// then nodes under the gang's leaves.
const (
	scorePlanned  = 100
	scoreHeldNode = 50
	scoreHeldLeaf = 25
)

// nodeOrder prefers the job's planned nodes, then nodes close to what the
// job already holds.
func (s *SessionState) nodeOrder(task *api.TaskInfo, node *api.NodeInfo) (float64, error) {
	if !s.wantsRDMA(task) {
		return 0, nil
	}
	w := float64(s.args.Weight)
	s.mu.Lock()
	a, planned := s.planned[task.UID]
	s.mu.Unlock()
	if planned && a.Node == node.Name {
		return scorePlanned * w, nil
	}
	h := s.occupancy(task.Job)
	if h.Nodes[node.Name] {
		return scoreHeldNode * w, nil
	}
	if n, ok := s.fabric.Node(node.Name); ok {
		for _, z := range n.Zones {
			for _, nic := range z.NICs {
				if h.S0s[nic.S0] {
					return scoreHeldLeaf * w, nil
				}
			}
		}
	}
	return 0, nil
}
