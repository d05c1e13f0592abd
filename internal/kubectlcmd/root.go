// Package kubectlcmd implements the kubectl-rdmatopo plugin's commands on
// cobra and cli-runtime's kubectl flags. Every command only reads the
// cluster; lists are paged.
package kubectlcmd

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"sigs.k8s.io/yaml"

	"github.com/rdmatopo/rdmatopo/config"
	"github.com/rdmatopo/rdmatopo/framework/topology"
	"github.com/rdmatopo/rdmatopo/internal/live"
	"github.com/rdmatopo/rdmatopo/internal/quiet"
	"github.com/rdmatopo/rdmatopo/internal/sim"
)

// Output formats.
const (
	OutputTable = "table"
	OutputJSON  = "json"
	OutputYAML  = "yaml"
	OutputSVG   = "svg"
)

// liveTimeout bounds the reads of one command.
const liveTimeout = 2 * time.Minute

// usageError is a wrong command line: exit code 2.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error { return &usageError{msg: fmt.Sprintf(format, args...)} }

// Main runs the plugin with args (without the program name) and returns
// the exit code: 0, 2 for a wrong command line, 1 for any other error
// (one line on stderr).
func Main(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	return MainContext(context.Background(), args, stdin, stdout, stderr)
}

// MainContext is Main under a context: cancelling it stops a running
// dashboard.
func MainContext(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	root := NewRootCommand(stdin, stdout, stderr)
	root.SetArgs(args)
	err := root.ExecuteContext(ctx)
	if err == nil {
		return 0
	}
	fmt.Fprintln(stderr, "error: "+strings.Join(strings.Fields(err.Error()), " "))
	var ue *usageError
	if errors.As(err, &ue) || strings.HasPrefix(err.Error(), "unknown ") || strings.Contains(err.Error(), "accepts ") {
		return 2
	}
	return 1
}

// options are the flags every command shares.
type options struct {
	flags     *genericclioptions.ConfigFlags
	confFile  string
	configMap string
	pageSize  int64
	verbosity int
	stdout    io.Writer
	stderr    io.Writer
}

// NewRootCommand builds the command tree.
func NewRootCommand(stdin io.Reader, stdout, stderr io.Writer) *cobra.Command {
	o := &options{flags: genericclioptions.NewConfigFlags(true), stdout: stdout, stderr: stderr}
	root := &cobra.Command{
		Use:   "kubectl-rdmatopo",
		Short: "Read-only views of a live cluster's RDMA fabric and the gangs rdmatopo places",
		Long: "kubectl rdmatopo shows a live cluster's RDMA fabric (per S1 and S0 leaf: free and used NICs and who holds them),\n" +
			"explains why a gang waits or where it sits, simulates what the scheduler would do, and draws or serves the fabric map.\n" +
			"It never writes to the cluster.",
		SilenceUsage:  true,
		SilenceErrors: true,
		PersistentPreRun: func(*cobra.Command, []string) {
			quiet.Verbose(o.verbosity)
		},
	}
	root.SetIn(stdin)
	root.SetOut(stdout)
	root.SetErr(stderr)
	o.flags.AddFlags(root.PersistentFlags())
	pf := root.PersistentFlags()
	pf.StringVar(&o.confFile, "scheduler-conf", "", "volcano-scheduler.conf file to use instead of the cluster's scheduler ConfigMap")
	pf.StringVar(&o.configMap, "scheduler-configmap", live.SchedulerConfigMapNamespace+"/"+live.SchedulerConfigMapName,
		"NAMESPACE/NAME of the scheduler's ConfigMap (key "+live.SchedulerConfigMapKey+"); the built-in conf when it does not exist")
	pf.Int64Var(&o.pageSize, "page-size", live.DefaultPageSize, "objects per list request (limit/continue)")
	pf.IntVar(&o.verbosity, "log-level", -1, "verbosity of scheduler logs on stderr; -1 keeps them off")
	root.AddCommand(newTopologyCommand(o), newExplainCommand(o), newSimulateCommand(o), newMapCommand(o),
		newDashboardCommand(o), newVersionCommand(o))
	return root
}

// clients connects to the cluster the kubectl flags select.
func (o *options) clients() (*live.Clients, error) {
	cfg, err := o.flags.ToRESTConfig()
	if err != nil {
		return nil, err
	}
	cfg.QPS, cfg.Burst = 50, 100
	c, err := live.NewClients(cfg, "kubectl-rdmatopo")
	if err != nil {
		return nil, err
	}
	c.PageSize = o.pageSize
	return c, nil
}

// namespace is the namespace of -n, or the kubeconfig context's.
func (o *options) namespace() (string, error) {
	ns, _, err := o.flags.ToRawKubeConfigLoader().Namespace()
	return ns, err
}

// confSource says where the scheduler conf came from.
type confSource struct {
	Kind string `json:"kind"` // file, configmap, built-in
	Name string `json:"name"`
}

func (s confSource) String() string { return s.Kind + " " + s.Name }

// conf returns the scheduler conf: --scheduler-conf, else the cluster's
// ConfigMap when it exists, else the built-in one. It sets
// c.ReadHyperNodes from the conf's s1Source.
func (o *options) conf(ctx context.Context, c *live.Clients) (*sim.Conf, confSource, error) {
	src := confSource{Kind: "built-in", Name: "config/" + config.SchedulerConfFile}
	text := config.SchedulerConf
	switch {
	case o.confFile != "":
		data, err := os.ReadFile(o.confFile)
		if err != nil {
			return nil, src, usagef("--scheduler-conf: %v", err)
		}
		src, text = confSource{Kind: "file", Name: o.confFile}, string(data)
	case o.configMap != "":
		ns, name, ok := strings.Cut(o.configMap, "/")
		if !ok || ns == "" || name == "" {
			return nil, src, usagef("--scheduler-configmap %q: want NAMESPACE/NAME", o.configMap)
		}
		cm, found, err := live.SchedulerConf(ctx, c, ns, name, live.SchedulerConfigMapKey)
		if err != nil {
			return nil, src, err
		}
		if found {
			src, text = confSource{Kind: "configmap", Name: o.configMap}, cm
		}
	}
	parsed, err := sim.ParseConf(text)
	if err != nil {
		return nil, src, fmt.Errorf("scheduler conf (%s): %w (pass --scheduler-conf FILE to use another conf)", src, err)
	}
	// HyperNodes are read only when they give the S1s.
	c.ReadHyperNodes = parsed.Topology.WithDefaults().S1Source == topology.S1FromHyperNode
	return parsed, src, nil
}

// viewConf is the conf for the read-only views (topology, map, dashboard,
// explain), which need only the rdma-topology plugin's arguments: a conf
// the scheduler cannot run (no rdma-topology beside topology-allocate, an
// unknown action) is reported on stderr and the views go on with its
// plugin arguments, or the defaults when it has none.
func (o *options) viewConf(ctx context.Context, c *live.Clients) (*sim.Conf, confSource, error) {
	parsed, src, err := o.conf(ctx, c)
	var cerr *sim.ConfError
	if err == nil || !errors.As(err, &cerr) {
		return parsed, src, err
	}
	text := config.SchedulerConf
	switch src.Kind {
	case "file":
		data, rerr := os.ReadFile(o.confFile)
		if rerr != nil {
			return nil, src, usagef("--scheduler-conf: %v", rerr)
		}
		text = string(data)
	case "configmap":
		ns, name, _ := strings.Cut(o.configMap, "/")
		cm, _, rerr := live.SchedulerConf(ctx, c, ns, name, live.SchedulerConfigMapKey)
		if rerr != nil {
			return nil, src, rerr
		}
		text = cm
	}
	cfg, found, terr := sim.TopologyArgs(text)
	if terr != nil {
		return nil, src, fmt.Errorf("scheduler conf (%s): %w. Pass --scheduler-conf FILE to use another conf", src, terr)
	}
	args := "its rdma-topology arguments"
	if !found {
		args = "rdma-topology's default arguments"
	}
	fmt.Fprintf(o.stderr, "warning: scheduler conf (%s): %v; `simulate` refuses it, and the scheduler places no RDMA pod under it when rdma-topology is missing or its arguments are invalid (rdmatopo_conf_valid 0). Shown with %s; pass --scheduler-conf FILE to read with another conf\n",
		src, cerr, args)
	c.ReadHyperNodes = cfg.S1Source == topology.S1FromHyperNode
	return &sim.Conf{Text: text, Topology: cfg}, src, nil
}

// outputFlag adds -o with the given formats, the first being the default.
func outputFlag(cmd *cobra.Command, target *string, formats ...string) {
	cmd.Flags().StringVarP(target, "output", "o", formats[0], "output format: "+strings.Join(formats, ", "))
}

// checkOutput validates -o.
func checkOutput(got string, formats ...string) error {
	for _, f := range formats {
		if got == f {
			return nil
		}
	}
	return usagef("-o %q: must be one of %s", got, strings.Join(formats, ", "))
}

// writeStructured prints v as indented JSON or as YAML.
func writeStructured(w io.Writer, format string, v any) error {
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	if format == OutputYAML {
		if data, err = yaml.JSONToYAML(data); err != nil {
			return err
		}
		_, err = w.Write(data)
		return err
	}
	_, err = fmt.Fprintf(w, "%s\n", data)
	return err
}

// viewClients connects and reads the scheduler conf leniently (viewConf).
func (o *options) viewClients(ctx context.Context) (*live.Clients, *sim.Conf, error) {
	c, err := o.clients()
	if err != nil {
		return nil, nil, err
	}
	conf, _, err := o.viewConf(ctx, c)
	if err != nil {
		return nil, nil, err
	}
	return c, conf, nil
}

// snapshot connects and reads the cluster and the scheduler conf (for a
// view, leniently: see viewConf).
func (o *options) snapshot(ctx context.Context, view bool) (*live.Snapshot, *sim.Conf, confSource, error) {
	c, err := o.clients()
	if err != nil {
		return nil, nil, confSource{}, err
	}
	getConf := o.conf
	if view {
		getConf = o.viewConf
	}
	conf, src, err := getConf(ctx, c)
	if err != nil {
		return nil, nil, src, err
	}
	snap, err := live.Fetch(ctx, c)
	if err != nil {
		return nil, nil, src, err
	}
	return snap, conf, src, nil
}
