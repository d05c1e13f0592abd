package explain

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/rdmatopo/rdmatopo/internal/fabricview"
)

// WriteText prints an explanation for people.
func (e *Explanation) WriteText(w io.Writer) error {
	var b strings.Builder
	from := ""
	if e.From != "" {
		from = " (from " + e.From + ")"
	}
	fmt.Fprintf(&b, "PodGroup %s/%s%s: %s, %d/%d pods bound (minMember %d), phase %s\n",
		e.Namespace, e.PodGroup, from, e.State, e.Bound, e.Pods, e.MinMember, e.Phase)
	c := e.Contract
	fmt.Fprintf(&b, "Contract: mode %s, highest tier %s", c.Mode, c.HighestTier)
	if c.MaxWait != "" {
		fmt.Fprintf(&b, ", max-wait %s", c.MaxWait)
	}
	if c.WaitingSince != "" {
		fmt.Fprintf(&b, ", waiting since %s", c.WaitingSince)
	}
	b.WriteString("\n")
	if c.Error != "" {
		fmt.Fprintf(&b, "Contract error: %s\n", c.Error)
	}
	if e.Current != nil {
		fmt.Fprintf(&b, "Sits at: %s\n", describe(e.Current))
	}
	if e.RingCrossings != nil {
		fmt.Fprintf(&b, "Ring over ranks: %d leaf crossings\n", *e.RingCrossings)
		for _, rp := range e.Ranked {
			leaves := "no RDMA NICs"
			if len(rp.S0) > 0 {
				leaves = "S0 " + strings.Join(rp.S0, ",")
			}
			fmt.Fprintf(&b, "  rank %d: %s on %s, %s\n", rp.Rank, rp.Pod, rp.Node, leaves)
		}
	}
	if e.Shape != "" {
		fmt.Fprintf(&b, "Pending pods: %d, largest %s\n", e.Pods-e.Bound, e.Shape)
	}
	if e.Plan != nil {
		fmt.Fprintf(&b, "Would be placed now at: %s\n", describe(e.Plan))
	}
	if e.Blocked != "" {
		fmt.Fprintf(&b, "Blocked: %s\n", e.Blocked)
	}
	if e.Scheduler != "" {
		fmt.Fprintf(&b, "Scheduler says: %s\n", e.Scheduler)
	}
	for _, n := range e.Notes {
		fmt.Fprintf(&b, "Note: %s\n", n)
	}
	for _, fl := range e.FailedLeaves {
		gangs := "none"
		if len(fl.Gangs) > 0 {
			gangs = strings.Join(fl.Gangs, ", ")
		}
		fmt.Fprintf(&b, "Failed leaf %s (%d NICs on %s): gangs that lost pods under it: %s\n", fl.S0, fl.NICs,
			strings.Join(fl.Nodes, ", "), gangs)
	}
	if _, err := io.WriteString(w, b.String()); err != nil {
		return err
	}
	if len(e.Leaves) == 0 {
		return nil
	}
	fmt.Fprintln(w, "\nBest leaves for the gang:")
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "S1\tS0\tPODS THAT FIT\tFREE NICS\tHELD BY (NICS)")
	for _, l := range e.Leaves {
		s1 := l.S1
		if s1 == "" {
			s1 = "-"
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d/%d\t%s\n", s1, l.S0, l.Pods, l.FreeNICs, l.NICs, fabricview.HolderList(l.HeldBy))
	}
	return tw.Flush()
}

// describe renders a placement on one line.
func describe(p *Placement) string {
	tier := p.Tier
	if tier == "" {
		tier = "no RDMA NICs"
	} else {
		tier = "tier " + tier
	}
	s := fmt.Sprintf("%s on nodes %s", tier, strings.Join(p.Nodes, ","))
	if len(p.S0) > 0 {
		s += ", S0 " + strings.Join(p.S0, ",")
	}
	if len(p.S1) > 0 {
		s += ", S1 " + strings.Join(p.S1, ",")
	}
	return s
}

// schedulerNameSource says where the default scheduler's name came from.
func schedulerNameSource(name string) string {
	if name == DefaultSchedulerName {
		return " (what a pod gets when its spec names no scheduler)"
	}
	return ""
}

// firstN returns at most n names, the last one "..." when some are left out.
func firstN(names []string, n int) []string {
	if len(names) <= n {
		return names
	}
	return append(append([]string(nil), names[:n]...), "...")
}
