package kubectlcmd

import (
	"context"

	"github.com/spf13/cobra"

	"github.com/rdmatopo/rdmatopo/internal/fabricview"
	"github.com/rdmatopo/rdmatopo/internal/live"
)

func newTopologyCommand(o *Options) *cobra.Command {
	var output string
	cmd := &cobra.Command{
		Use:   "topology",
		Short: "Print the live RDMA fabric: per S1 and S0 leaf its nodes, free and used NICs, and who holds them",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := CheckOutput(output, OutputTable, OutputJSON, OutputYAML); err != nil {
				return err
			}
			ctx, cancel := context.WithTimeout(cmd.Context(), LiveTimeout)
			defer cancel()
			c, conf, err := o.viewClients(ctx)
			if err != nil {
				return err
			}
			cluster, err := live.FetchCluster(ctx, c)
			if err != nil {
				return err
			}
			v := fabricview.Build(conf.Topology, cluster)
			if output != OutputTable {
				return WriteStructured(o.stdout, output, v)
			}
			return v.WriteTable(o.stdout)
		},
	}
	OutputFlag(cmd, &output, OutputTable, OutputJSON, OutputYAML)
	return cmd
}
