package kubectlcmd

import (
	"context"
	"fmt"
	"os"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/rdmatopo/rdmatopo/core/topology"
	"github.com/rdmatopo/rdmatopo/internal/explain"
	"github.com/rdmatopo/rdmatopo/internal/fabricmap"
	"github.com/rdmatopo/rdmatopo/internal/fabricview"
	"github.com/rdmatopo/rdmatopo/internal/live"
	"github.com/rdmatopo/rdmatopo/internal/schedconf"
)

// State is the live fabric as the map and the dashboard show it.
type State struct {
	// Generated is when the cluster was read (RFC 3339).
	Generated string `json:"generated"`
	// Jobs are the cluster's gangs, with their colour in the map.
	Jobs []StateJob `json:"jobs"`
	// Topology is the fabric with its holders.
	Topology *fabricview.View `json:"topology"`
	// SVG is the map (left out of -o json/yaml of `map`).
	SVG string `json:"svg,omitempty"`
}

// StateJob is a job and its colour.
type StateJob struct {
	live.Job
	Color string `json:"color"`
	Label string `json:"label"`
	// WaitingAt lists the S0 leaves a waiting gang would go to, best
	// first (drawn on the map); empty for a placed job.
	WaitingAt []string `json:"waitingAt"`
}

// buildState reads the cluster and draws it.
func buildState(ctx context.Context, o *Options) (*State, error) {
	snap, conf, _, err := o.snapshot(ctx, true)
	if err != nil {
		return nil, err
	}
	return stateOf(conf, snap, time.Now()), nil
}

// stateOf computes the state of a snapshot.
func stateOf(conf *schedconf.Conf, snap *live.Snapshot, now time.Time) *State {
	v := fabricview.Build(conf.Topology, snap.Cluster)
	jobs := snap.Jobs(conf.Topology.WithDefaults().RDMAResource)
	m := fabricmap.FromLive(v, jobs, now)
	for i, j := range jobs {
		if !j.Placed && j.RDMA {
			m.Jobs[i].WaitingAt = waitingAt(conf, snap, j)
		}
	}
	colors := fabricmap.Colors(m)
	st := &State{Generated: now.UTC().Format(time.RFC3339), Jobs: []StateJob{}, Topology: v,
		SVG: string(fabricmap.Render(v.Fabric(), m))}
	for i, j := range jobs {
		sj := StateJob{Job: j, Color: colors[j.Key()], Label: m.Jobs[i].Label, WaitingAt: []string{}}
		for _, id := range m.Jobs[i].WaitingAt {
			sj.WaitingAt = append(sj.WaitingAt, string(id))
		}
		st.Jobs = append(st.Jobs, sj)
	}
	return st
}

// waitingAt is where a waiting gang would go, as explain sees it: the
// leaves of the plan when the fabric holds it now, else the leaves that
// hold the most of its pods (best first).
func waitingAt(conf *schedconf.Conf, snap *live.Snapshot, j live.Job) []topology.S0ID {
	for _, pg := range snap.PodGroups {
		if pg.Namespace != j.Namespace || pg.Name != j.Name {
			continue
		}
		e := explain.Explain(conf.Topology, snap, pg)
		var out []topology.S0ID
		if e.Plan != nil {
			for _, id := range e.Plan.S0 {
				out = append(out, topology.S0ID(id))
			}
			return out
		}
		for _, l := range e.Leaves {
			if l.Pods > 0 {
				out = append(out, topology.S0ID(l.S0))
			}
		}
		return out
	}
	return nil
}

func newMapCommand(o *Options) *cobra.Command {
	var output, file string
	cmd := &cobra.Command{
		Use:   "map [--file FILE.svg]",
		Short: "Draw the live fabric as SVG: each job in its colour, pending gangs with their reasons",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := CheckOutput(output, OutputSVG, OutputTable, OutputJSON, OutputYAML); err != nil {
				return err
			}
			ctx, cancel := context.WithTimeout(cmd.Context(), LiveTimeout)
			defer cancel()
			st, err := buildState(ctx, o)
			if err != nil {
				return err
			}
			if file != "" {
				if err := os.WriteFile(file, []byte(st.SVG), 0o644); err != nil {
					return fmt.Errorf("writing the map: %w", err)
				}
			}
			switch output {
			case OutputSVG:
				if file != "" {
					return nil
				}
				_, err := fmt.Fprint(o.stdout, st.SVG)
				return err
			case OutputTable:
				tw := tabwriter.NewWriter(o.stdout, 0, 4, 2, ' ', 0)
				fmt.Fprintln(tw, "JOB\tCOLOUR\tPLACED\tTIER\tPODS\tREASON")
				for _, j := range st.Jobs {
					placed, tier, reason := "no", j.Tier, j.Reason
					if j.Placed {
						placed = "yes"
					}
					if tier == "" {
						tier = "-"
					}
					if reason == "" {
						reason = "-"
					}
					fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d/%d\t%s\n", j.Key(), j.Color, placed, tier, j.Bound, j.MinMember, reason)
				}
				return tw.Flush()
			}
			st.SVG = ""
			return WriteStructured(o.stdout, output, st)
		},
	}
	OutputFlag(cmd, &output, OutputSVG, OutputTable, OutputJSON, OutputYAML)
	cmd.Flags().StringVarP(&file, "file", "f", "", "write the SVG to this file (with -o svg nothing is printed)")
	return cmd
}
