package sim

import (
	"math"

	"volcano.sh/volcano/pkg/scheduler/api"
	"volcano.sh/volcano/pkg/scheduler/conf"
	"volcano.sh/volcano/pkg/scheduler/framework"
)

// tieBreakPluginName is a plugin the simulator appends, in a tier of its
// own, after the conf's tiers. It only supplies a best-node function: among
// the nodes with the highest score it picks the one with the smallest
// name. Volcano picks one of them at random (util.SelectBestNode), and the
// order in which its 16 predicate workers return candidates varies from run
// to run, so without it a simulation is not reproducible. Every plugin of
// the conf that has a best-node function still decides first; the choice
// made here is one Volcano could have made.
const tieBreakPluginName = "rdmatopo-simulate-tiebreak"

func init() {
	framework.RegisterPluginBuilder(tieBreakPluginName, func(framework.Arguments) framework.Plugin {
		return tieBreak{}
	})
}

// tieBreak is the plugin; it has no state.
type tieBreak struct{}

func (tieBreak) Name() string { return tieBreakPluginName }

func (tieBreak) OnSessionOpen(ssn *framework.Session) {
	ssn.AddBestNodeFn(tieBreakPluginName, bestNode)
}

func (tieBreak) OnSessionClose(*framework.Session) {}

// bestNode returns the smallest-named node among the highest-scored ones.
func bestNode(_ *api.TaskInfo, scores map[float64][]*api.NodeInfo) *api.NodeInfo {
	best := math.Inf(-1)
	var pick *api.NodeInfo
	for score, nodes := range scores {
		for _, n := range nodes {
			if n == nil {
				continue
			}
			if score > best || (score == best && n.Name < pick.Name) {
				best, pick = score, n
			}
		}
	}
	return pick
}

// withTieBreak returns the tiers with the tie-break plugin appended.
func withTieBreak(tiers []conf.Tier) []conf.Tier {
	enabled := true
	out := append([]conf.Tier(nil), tiers...)
	return append(out, conf.Tier{Plugins: []conf.PluginOption{{
		Name:            tieBreakPluginName,
		EnabledBestNode: &enabled,
	}}})
}
