package main

import (
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"

	"github.com/rdmatopo/rdmatopo/internal/sim"
)

// writeJSON prints the report as one indented JSON object.
func writeJSON(w io.Writer, rep *sim.Report) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(sim.JSONReport(rep))
}

// shortID abbreviates an S0 hash for the table (the JSON has it whole).
func shortID(id string) string {
	if strings.HasPrefix(id, "unknown:") {
		return "?" + strings.TrimPrefix(id, "unknown:")
	}
	if len(id) > 8 {
		return id[:8]
	}
	return id
}

// listCell renders up to three items and a count of the rest.
func listCell(items []string, short func(string) string) string {
	if len(items) == 0 {
		return "-"
	}
	parts := make([]string, 0, 4)
	for i, it := range items {
		if i == 3 {
			parts = append(parts, fmt.Sprintf("+%d", len(items)-3))
			break
		}
		parts = append(parts, short(it))
	}
	return strings.Join(parts, ",")
}

// writeTable prints one line per job and a summary. A placed job's tier is
// "-" when it requests no RDMA and "?" when its pods got no NICs. RING is
// the leaf changes along the ring over its ranks ("-" when no pod holds
// NICs). wide adds one line per pod: its rank, node, NUMA zone and leaves.
func writeTable(w io.Writer, rep *sim.Report, wide bool) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "JOB\tFROM\tPLACED\tTIER\tS0\tS1\tPODS\tRING\tREASON")
	for _, j := range rep.Jobs {
		from := j.Owner
		if from == "" {
			from = "PodGroup"
		}
		yes, tier, reason := "no", j.Tier, j.Reason
		switch {
		case !j.Placed:
			tier = "-"
		case tier != "":
		case j.RDMA:
			// Placed, but no NIC was assigned (a conf without rdma-topology).
			tier = "?"
		default:
			tier = "-"
		}
		if j.Placed {
			yes = "yes"
		}
		if reason == "" {
			reason = "-"
		}
		ring := "-"
		if len(j.S0) > 0 {
			ring = fmt.Sprint(j.RingCrossings)
		}
		fmt.Fprintf(tw, "%s/%s\t%s\t%s\t%s\t%s\t%s\t%d/%d\t%s\t%s\n", j.Namespace, j.Name, from, yes, tier,
			listCell(j.S0, shortID), listCell(j.S1, func(s string) string { return s }), j.BoundPods, j.MinMember, ring, reason)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if wide {
		if err := writePods(w, rep.Pods); err != nil {
			return err
		}
	}
	if _, err := fmt.Fprintf(w, "\n%s\n", sim.Summary(rep)); err != nil {
		return err
	}
	return writeEvictions(w, rep.Evictions)
}

// writePods prints, after the jobs, one line per pod in job and rank
// order: its rank ("?" when a rank annotation of its gang is invalid),
// node, NUMA zone of its NICs and their leaves.
func writePods(w io.Writer, pods []sim.PodPlacement) error {
	sorted := append([]sim.PodPlacement(nil), pods...)
	sort.SliceStable(sorted, func(a, b int) bool {
		if sorted[a].Job != sorted[b].Job {
			return sorted[a].Job < sorted[b].Job
		}
		return sorted[a].Rank < sorted[b].Rank
	})
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "POD\tJOB\tRANK\tNODE\tNUMA\tS0")
	for _, p := range sorted {
		rank, node, numa := "?", "-", "-"
		if p.Rank >= 0 {
			rank = fmt.Sprint(p.Rank)
		}
		if p.Node != "" {
			node = p.Node
		}
		if p.NUMA >= 0 && len(p.NICs) > 0 {
			numa = fmt.Sprint(p.NUMA)
		}
		fmt.Fprintf(tw, "%s/%s\t%s\t%s\t%s\t%s\t%s\n", p.Namespace, p.Name, p.Job, rank, node, numa, listCell(p.S0, shortID))
	}
	return tw.Flush()
}

// writeEvictions adds, when the run evicted pods, one line naming them
// and the gangs they were evicted for.
func writeEvictions(w io.Writer, evictions []sim.Eviction) error {
	if len(evictions) == 0 {
		return nil
	}
	items := make([]string, 0, len(evictions))
	for _, e := range evictions {
		item := e.Namespace + "/" + e.Name
		if e.Preemptor != "" {
			item += " (for " + e.Preemptor + ")"
		}
		items = append(items, item)
	}
	_, err := fmt.Fprintf(w, "%s evicted: %s.\n", plural(len(evictions), "pod"), strings.Join(items, ", "))
	return err
}

// plural renders "1 job", "2 jobs".
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
