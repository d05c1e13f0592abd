package sim

import (
	"fmt"
	"strings"
)

// Summary labels of placed jobs without a tier.
const (
	summaryNoRDMA = "no RDMA"
	summaryNoNICs = "RDMA without NIC assignment"
)

// Summary is the line both simulate commands end their table with:
//
//	6 jobs: 5 placed (2 s0, 2 s1, 1 no RDMA), 1 waiting; 18 of 22 pods bound in 2 scheduling cycles.
//
// A placed job is counted by its tier, as "no RDMA" when it requests none
// and as "RDMA without NIC assignment" when its pods got no NICs (a conf
// without rdma-topology).
func Summary(rep *Report) string {
	tiers := map[string]int{}
	placed, bound, pods := 0, 0, 0
	for _, j := range rep.Jobs {
		bound += j.BoundPods
		pods += j.Pods
		if !j.Placed {
			continue
		}
		placed++
		switch {
		case j.Tier != "":
			tiers[j.Tier]++
		case j.RDMA:
			tiers[summaryNoNICs]++
		default:
			tiers[summaryNoRDMA]++
		}
	}
	var byTier []string
	for _, t := range []string{"node", "s0", "s1", "cluster", summaryNoRDMA, summaryNoNICs} {
		if tiers[t] > 0 {
			byTier = append(byTier, fmt.Sprintf("%d %s", tiers[t], t))
		}
	}
	detail := ""
	if len(byTier) > 0 {
		detail = " (" + strings.Join(byTier, ", ") + ")"
	}
	return fmt.Sprintf("%s: %d placed%s, %d waiting; %d of %s bound in %s.",
		plural(len(rep.Jobs), "job"), placed, detail, len(rep.Jobs)-placed, bound, plural(pods, "pod"),
		plural(rep.Cycles, "scheduling cycle"))
}

// plural is "1 job", "2 jobs".
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
