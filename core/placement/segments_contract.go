// Segments in the job contract: every block of N consecutive ranks within
// one domain of a tier.

package placement

import (
	"fmt"
	"strconv"
)

// Segment annotations of the job contract (docs/design.md "Segments").
const (
	// AnnotationSegmentSize (job, PodGroup): N, a positive integer dividing
	// the gang's pods: ranks iN .. iN+N-1 form segment i.
	AnnotationSegmentSize = "rdmatopo.io/segment-size"
	// AnnotationSegmentTier (job, PodGroup): the tier each segment stays
	// within: node, s0 or s1.
	AnnotationSegmentTier = "rdmatopo.io/segment-tier"
)

// Segment asks that every Size consecutive ranks of the gang sit within
// one domain of Tier. The zero value asks nothing.
type Segment struct {
	Size int
	Tier Tier
}

// Set reports whether the segment asks something: a size above 1 (a
// segment of one pod always fits its domain).
func (s Segment) Set() bool { return s.Size > 1 }

// parseSegment reads the segment annotations (both or neither) into c,
// reporting problems through bad.
func parseSegment(ann map[string]string, c *Contract, bad func(key, format string, args ...any)) {
	size, hasSize := ann[AnnotationSegmentSize]
	tier, hasTier := ann[AnnotationSegmentTier]
	switch {
	case hasSize && !hasTier:
		bad(AnnotationSegmentSize, "needs %s (node, s0 or s1)", AnnotationSegmentTier)
		return
	case hasTier && !hasSize:
		bad(AnnotationSegmentTier, "needs %s", AnnotationSegmentSize)
		return
	case !hasSize:
		return
	}
	n, err := strconv.Atoi(size)
	sizeOK := err == nil && n >= 1 && size == strconv.Itoa(n)
	if !sizeOK {
		bad(AnnotationSegmentSize, "%q is not a segment size (want a positive integer)", size)
	}
	t, err := ParseTier(tier)
	tierOK := err == nil && tier == t.String() && t != TierCluster
	if !tierOK {
		bad(AnnotationSegmentTier, "%q is not a segment tier (want node, s0 or s1)", tier)
	}
	if sizeOK && tierOK {
		c.Segment = Segment{Size: n, Tier: t}
	}
}

// SegmentProblem says what is wrong with a segment size for a gang of pods
// pods ("" when it divides them).
func SegmentProblem(size, pods int) string {
	if size < 1 || pods%size == 0 {
		return ""
	}
	return fmt.Sprintf("%d does not divide the gang's %d pods", size, pods)
}
