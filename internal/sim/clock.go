package sim

import (
	"time"

	schedulingv1beta1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"

	"github.com/rdmatopo/rdmatopo/core/ledger"
	"github.com/rdmatopo/rdmatopo/core/placement"
)

// DefaultPeriod is vc-scheduler's default schedule period: how far the
// simulated clock advances per cycle unless Options.Period says otherwise.
const DefaultPeriod = time.Second

// simClock is the simulated time: cycle n runs at start + (n-1)*period.
type simClock struct {
	start  time.Time
	period time.Duration
	now    time.Time
	// waits records, per PodGroup ("namespace/name"), when it started
	// waiting and when it was placed.
	waits map[string]*jobWait
}

// jobWait is one PodGroup's wait on the simulated clock.
type jobWait struct {
	// since is its rdmatopo.io/waiting-since (the first failed attempt),
	// zero while the scheduler has not recorded one.
	since time.Time
	// placed is the time of the cycle that first placed it (at least
	// minMember pods bound); zero while unplaced.
	placed time.Time
}

// initClock sets the clock from the options (the rdma-topology runtime
// reads it through Now, see newRuntime).
func (s *Simulator) initClock() {
	c := simClock{start: s.opts.Start, period: s.opts.Period, waits: map[string]*jobWait{}}
	if c.period <= 0 {
		c.period = DefaultPeriod
	}
	if c.start.IsZero() {
		c.start = time.Now().Truncate(time.Second)
	}
	c.now = c.start
	s.clock = c
}

// Now is the simulated time: that of the cycle running or last run (the
// start before the first cycle).
func (s *Simulator) Now() time.Time { return s.clock.now }

// Period is how far the simulated clock advances per cycle.
func (s *Simulator) Period() time.Duration { return s.clock.period }

// tick advances the clock for a new cycle (the first runs at the start).
func (s *Simulator) tick() {
	if s.cycle > 1 {
		s.clock.now = s.clock.now.Add(s.clock.period)
	}
}

// trackWaits records, after a cycle, when each PodGroup started waiting
// (its rdmatopo.io/waiting-since, as the scheduler wrote it) and when it
// was first placed.
func (s *Simulator) trackWaits() {
	open := map[string]bool{}
	for _, key := range s.pgOrder {
		w := s.clock.waits[key]
		if w == nil {
			w = &jobWait{}
			s.clock.waits[key] = w
		}
		if !w.placed.IsZero() {
			continue
		}
		if since, ok := waitingSince(s.podGroups[key]); ok && w.since.IsZero() {
			w.since = since
		}
		open[key] = true
	}
	if len(open) == 0 {
		return
	}
	bound := s.boundByGroup(open)
	for key := range open {
		if pg := s.podGroups[key]; bound[key] > 0 && int32(bound[key]) >= pg.Spec.MinMember {
			s.clock.waits[key].placed = s.clock.now
		}
	}
}

// boundByGroup counts the bound pods of the given PodGroups.
func (s *Simulator) boundByGroup(groups map[string]bool) map[string]int {
	bound := map[string]int{}
	for _, e := range s.pods {
		if e.deleted || e.pod.Spec.NodeName == "" {
			continue
		}
		key := e.pod.Namespace + "/" + e.pod.Annotations[schedulingv1beta1.KubeGroupNameAnnotationKey]
		if groups[key] {
			bound[key]++
		}
	}
	return bound
}

// waitingSince reads a PodGroup's rdmatopo.io/waiting-since.
func waitingSince(pg *schedulingv1beta1.PodGroup) (time.Time, bool) {
	v, ok := pg.Annotations[ledger.AnnotationWaitingSince]
	if !ok {
		return time.Time{}, false
	}
	t, err := time.Parse(time.RFC3339, v)
	return t, err == nil
}

// Waited is how long a PodGroup waited on the simulated clock: from its
// first failed attempt to its placement, 0 when it was placed at once (or
// never attempted); for a PodGroup still unplaced, from the first failed
// attempt to the last cycle.
func (s *Simulator) Waited(namespace, name string) time.Duration {
	w := s.clock.waits[namespace+"/"+name]
	if w == nil || w.since.IsZero() {
		return 0
	}
	end := w.placed
	if end.IsZero() {
		end = s.clock.now
	}
	if d := end.Sub(w.since); d > 0 {
		return d
	}
	return 0
}

// PendingDeadline returns the earliest max-wait deadline still ahead of
// the simulated clock: that of a hard gang with rdmatopo.io/max-wait that
// is unplaced and has started waiting. false when there is none.
func (s *Simulator) PendingDeadline() (time.Time, bool) {
	var first time.Time
	candidates := map[string]time.Time{}
	members := s.groupMembers()
	for _, key := range s.pgOrder {
		pg := s.podGroups[key]
		c, err := s.runtime.GangContract(pg.Namespace, pg.Name, pg.UID, pg.Spec.MinMember, pg.Annotations, members[key])
		if err != nil || c.Mode != placement.ModeHard || c.MaxWait <= 0 {
			continue
		}
		since, ok := waitingSince(pg)
		if !ok {
			continue
		}
		if d := since.Add(c.MaxWait); d.After(s.clock.now) {
			candidates[key] = d
		}
	}
	if len(candidates) == 0 {
		return first, false
	}
	open := make(map[string]bool, len(candidates))
	for key := range candidates {
		open[key] = true
	}
	bound := s.boundByGroup(open)
	found := false
	for key, d := range candidates {
		if n := bound[key]; n > 0 && int32(n) >= s.podGroups[key].Spec.MinMember {
			continue
		}
		if !found || d.Before(first) {
			first, found = d, true
		}
	}
	return first, found
}

// groupMembers returns the pods of the cluster that belong to a PodGroup,
// by PodGroup key, for reading contracts from pods (ParseGangContract
// orders them).
func (s *Simulator) groupMembers() map[string][]placement.MemberAnnotations {
	out := map[string][]placement.MemberAnnotations{}
	for _, e := range s.pods {
		if e.deleted {
			continue
		}
		group := e.pod.Annotations[schedulingv1beta1.KubeGroupNameAnnotationKey]
		if group == "" {
			continue
		}
		gk := e.pod.Namespace + "/" + group
		out[gk] = append(out[gk], placement.MemberAnnotations{Name: e.pod.Name, Annotations: e.pod.Annotations, Labels: e.pod.Labels})
	}
	return out
}
