package sim

import (
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	schedulingv1beta1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"

	"github.com/rdmatopo/rdmatopo/core/placement"
)

// SegmentPlacement is one block of a gang with segments: its ranks and the
// leaves its pods' NICs use.
type SegmentPlacement struct {
	Ranks []int
	S0    []string
}

// rankJob sets the rank of each of a job's pods (placement.Ranks, the
// Volcano Job's task order as the runtime saw it; -1 for every pod when a
// rdmatopo.io/rank is invalid) and returns the ring's leaf crossings over
// its bound pods with NICs, in rank order, and, when the job's contract
// has segments, each block's ranks and leaves. pods are the job's entries
// of the report, objs the pods they describe.
func (s *Simulator) rankJob(pg *schedulingv1beta1.PodGroup, pods []*PodPlacement, objs []*corev1.Pod) (int, []SegmentPlacement) {
	members := placement.MembersOf(objs)
	ranks, err := s.runtime.PodRanks(objs)
	if err != nil {
		for _, pp := range pods {
			pp.Rank = -1
		}
		return 0, nil
	}
	byRank := make([]*PodPlacement, len(pods))
	for i, pp := range pods {
		pp.Rank = ranks[i]
		byRank[ranks[i]] = pp
	}
	var ring []string
	for _, pp := range byRank {
		if pp.Node != "" && len(pp.S0) > 0 {
			ring = append(ring, strings.Join(pp.S0, ","))
		}
	}
	crossings := placement.RingCrossings(ring)
	c, err := s.runtime.GangContract(pg.Namespace, pg.Name, pg.UID, pg.Spec.MinMember, pg.Annotations, members)
	if err != nil || c.Segment.Size <= 0 {
		return crossings, nil
	}
	var segs []SegmentPlacement
	for start := 0; start < len(byRank); start += c.Segment.Size {
		seg := SegmentPlacement{S0: []string{}}
		seen := map[string]bool{}
		for r := start; r < min(start+c.Segment.Size, len(byRank)); r++ {
			seg.Ranks = append(seg.Ranks, r)
			for _, l := range byRank[r].S0 {
				if !seen[l] {
					seen[l] = true
					seg.S0 = append(seg.S0, l)
				}
			}
		}
		sort.Strings(seg.S0)
		segs = append(segs, seg)
	}
	return crossings, segs
}
