package kubectlcmd

import (
	"context"

	"github.com/spf13/cobra"

	"github.com/rdmatopo/rdmatopo/internal/fabricview"
	"github.com/rdmatopo/rdmatopo/internal/live"
	"github.com/rdmatopo/rdmatopo/internal/schedconf"
)

func newTopologyCommand(o *Options) *cobra.Command {
	var output string
	return outputCommand(&cobra.Command{
		Use:   "topology",
		Short: "Print the live RDMA fabric: per S1 and S0 leaf its nodes, free and used NICs, and who holds them",
		Args:  cobra.NoArgs,
	}, &output, []string{OutputTable, OutputJSON, OutputYAML}, func(cmd *cobra.Command, _ []string) error {
		return o.withView(cmd, func(ctx context.Context, c *live.Clients, conf *schedconf.Conf) error {
			cluster, err := live.FetchCluster(ctx, c)
			if err != nil {
				return err
			}
			v := fabricview.Build(conf.Topology, cluster)
			if output != OutputTable {
				return WriteStructured(o.stdout, output, v)
			}
			return v.WriteTable(o.stdout)
		})
	})
}

// outputCommand gives cmd -o among formats (the first the default) and
// runs run once -o is one of them.
func outputCommand(cmd *cobra.Command, output *string, formats []string, run func(cmd *cobra.Command, args []string) error) *cobra.Command {
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		if err := CheckOutput(*output, formats...); err != nil {
			return err
		}
		return run(cmd, args)
	}
	OutputFlag(cmd, output, formats...)
	return cmd
}

// withView runs f within LiveTimeout, connected to the cluster, with the
// scheduler conf read for a view (viewConf).
func (o *Options) withView(cmd *cobra.Command, f func(ctx context.Context, c *live.Clients, conf *schedconf.Conf) error) error {
	ctx, cancel := context.WithTimeout(cmd.Context(), LiveTimeout)
	defer cancel()
	c, conf, err := o.viewClients(ctx)
	if err != nil {
		return err
	}
	return f(ctx, c, conf)
}
