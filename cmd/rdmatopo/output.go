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

// jsonPod is one element of "pods" in `simulate -o json` (docs/design.md, the
// simulate contract). Field order is the documented one.
type jsonPod struct {
	Namespace string   `json:"namespace"`
	Name      string   `json:"name"`
	Job       string   `json:"job"`
	Node      string   `json:"node"`
	NUMA      int      `json:"numa"`
	NICs      []string `json:"nics"`
	S0        []string `json:"s0"`
	S1        []string `json:"s1"`
	// Annotations are the keys the scheduler wrote on the pod
	// (rdmatopo.io/* and katalyst.kubewharf.io/numa_bind_result).
	Annotations map[string]string `json:"annotations"`
	// Evicted is true for a pod evicted during the run (its node is then
	// empty).
	Evicted bool `json:"evicted"`
	// Rank is the pod's rank in its gang (-1: an invalid rdmatopo.io/rank).
	Rank int `json:"rank"`
}

// jsonJob is one element of "jobs".
type jsonJob struct {
	Namespace string   `json:"namespace"`
	Name      string   `json:"name"`
	MinMember int32    `json:"minMember"`
	Placed    bool     `json:"placed"`
	BoundPods int      `json:"boundPods"`
	Tier      string   `json:"tier"`
	S0        []string `json:"s0"`
	S1        []string `json:"s1"`
	Reason    string   `json:"reason"`
	// WaitedSeconds is the simulated time from the job's first failed
	// attempt to its placement (0 when placed at once), or until the last
	// cycle for a job still waiting.
	WaitedSeconds float64 `json:"waitedSeconds"`
	// RingCrossings counts the leaf changes along the rank ring of its
	// bound pods.
	RingCrossings int `json:"ringCrossings"`
	// Segments, with rdmatopo.io/segment-size, are its blocks of ranks
	// and their leaves.
	Segments []jsonSegment `json:"segments,omitempty"`
}

// jsonSegment is one block of a gang with segments.
type jsonSegment struct {
	Ranks []int    `json:"ranks"`
	S0    []string `json:"s0"`
}

// jsonEviction is one element of "evictions".
type jsonEviction struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	Job       string `json:"job"`
	// Preemptor is the gang ("namespace/podgroup") the pod was evicted
	// for.
	Preemptor string `json:"preemptor"`
}

// jsonReport is the single object `simulate -o json` prints.
type jsonReport struct {
	Pods      []jsonPod      `json:"pods"`
	Jobs      []jsonJob      `json:"jobs"`
	Evictions []jsonEviction `json:"evictions"`
}

// nonNil returns s, or an empty list for nil (lists are never null).
func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// nonNilMap returns m, or an empty map for nil (objects are never null).
func nonNilMap(m map[string]string) map[string]string {
	if m == nil {
		return map[string]string{}
	}
	return m
}

// toJSON converts a report to the contract's shape.
func toJSON(rep *sim.Report) jsonReport {
	out := jsonReport{Pods: make([]jsonPod, 0, len(rep.Pods)), Jobs: make([]jsonJob, 0, len(rep.Jobs)),
		Evictions: make([]jsonEviction, 0, len(rep.Evictions))}
	for _, p := range rep.Pods {
		out.Pods = append(out.Pods, jsonPod{
			Namespace: p.Namespace, Name: p.Name, Job: p.Job, Node: p.Node, NUMA: p.NUMA,
			NICs: nonNil(p.NICs), S0: nonNil(p.S0), S1: nonNil(p.S1), Annotations: nonNilMap(p.Annotations),
			Evicted: p.Evicted != "", Rank: p.Rank,
		})
	}
	for _, j := range rep.Jobs {
		out.Jobs = append(out.Jobs, jsonJob{
			Namespace: j.Namespace, Name: j.Name, MinMember: j.MinMember, Placed: j.Placed,
			BoundPods: j.BoundPods, Tier: j.Tier, S0: nonNil(j.S0), S1: nonNil(j.S1), Reason: j.Reason,
			WaitedSeconds: j.WaitedSeconds, RingCrossings: j.RingCrossings, Segments: segmentsOf(j.Segments),
		})
	}
	for _, e := range rep.Evictions {
		out.Evictions = append(out.Evictions, jsonEviction{Namespace: e.Namespace, Name: e.Name, Job: e.Job, Preemptor: e.Preemptor})
	}
	return out
}

// segmentsOf converts a job's segments (nil when it has none).
func segmentsOf(segs []sim.SegmentPlacement) []jsonSegment {
	var out []jsonSegment
	for _, sg := range segs {
		out = append(out, jsonSegment{Ranks: sg.Ranks, S0: nonNil(sg.S0)})
	}
	return out
}

// writeJSON prints the report as one indented JSON object.
func writeJSON(w io.Writer, rep *sim.Report) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(toJSON(rep))
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
