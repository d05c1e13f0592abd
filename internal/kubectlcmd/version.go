package kubectlcmd

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/rdmatopo/rdmatopo/internal/version"
)

func newVersionCommand(o *Options) *cobra.Command {
	var output string
	return outputCommand(&cobra.Command{
		Use:   "version",
		Short: "Print the plugin's version, git commit and the Volcano release it is built for",
		Args:  cobra.NoArgs,
	}, &output, []string{OutputTable, OutputJSON, OutputYAML}, func(*cobra.Command, []string) error {
		v := version.Get()
		if output != OutputTable {
			return WriteStructured(o.stdout, output, v)
		}
		_, err := fmt.Fprintf(o.stdout, "kubectl-rdmatopo %s (commit %s), built for Volcano %s with %s\n",
			v.Version, v.GitCommit, v.Volcano, v.Go)
		return err
	})
}
