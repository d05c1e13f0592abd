// Package kubectlcmd implements the kubectl-rdmatopo plugin's commands on
// cobra and cli-runtime's kubectl flags. Every command only reads the
// cluster; lists are paged. It links no Volcano scheduler package: what
// runs a Volcano session (`simulate`, explain's next session) is the
// second plugin binary, kubectl-rdmatopo-simulate (package simulatecmd),
// which kubectl finds for `kubectl rdmatopo simulate` and which this one
// runs for the rest (simulatebin.go). The flags, conf and output helpers
// both binaries share are exported here.
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
	"github.com/rdmatopo/rdmatopo/core/topology"
	"github.com/rdmatopo/rdmatopo/internal/live"
	"github.com/rdmatopo/rdmatopo/internal/quiet"
	"github.com/rdmatopo/rdmatopo/internal/schedconf"
)

// Output formats.
const (
	OutputTable = "table"
	OutputJSON  = "json"
	OutputYAML  = "yaml"
	OutputSVG   = "svg"
)

// LiveTimeout bounds the reads of one command.
const LiveTimeout = 2 * time.Minute

// usageError is a wrong command line: exit code 2.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

// Usagef is a wrong command line: the command exits with code 2.
func Usagef(format string, args ...any) error { return &usageError{msg: fmt.Sprintf(format, args...)} }

// exitCode ends a command with a code and nothing more on stderr (the
// kubectl-rdmatopo-simulate it ran said why).
type exitCode int

func (e exitCode) Error() string { return fmt.Sprintf("exit status %d", int(e)) }

// Main runs the plugin with args (without the program name) and returns
// the exit code: 0, 2 for a wrong command line, 1 for any other error
// (one line on stderr).
func Main(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	return MainContext(context.Background(), args, stdin, stdout, stderr)
}

// MainContext is Main under a context: cancelling it stops a running
// dashboard.
func MainContext(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	return Execute(ctx, NewRootCommand(stdin, stdout, stderr), args, stderr)
}

// Execute runs a command tree with args and returns the exit code: 0, 2
// for a wrong command line, 1 for any other error (one line on stderr).
func Execute(ctx context.Context, root *cobra.Command, args []string, stderr io.Writer) int {
	root.SetArgs(args)
	err := root.ExecuteContext(ctx)
	if err == nil {
		return 0
	}
	var code exitCode
	if errors.As(err, &code) {
		return int(code)
	}
	fmt.Fprintln(stderr, "error: "+strings.Join(strings.Fields(err.Error()), " "))
	var ue *usageError
	if errors.As(err, &ue) || strings.HasPrefix(err.Error(), "unknown ") || strings.Contains(err.Error(), "accepts ") {
		return 2
	}
	return 1
}

// Options are the flags every command of both plugin binaries shares.
type Options struct {
	flags     *genericclioptions.ConfigFlags
	confFile  string
	configMap string
	pageSize  int64
	verbosity int
	stdin     io.Reader
	stdout    io.Writer
	stderr    io.Writer
	// simulateBinary finds kubectl-rdmatopo-simulate (simulatebin.go).
	simulateBinary func() (string, error)
}

// NewOptions returns the shared flags' values, writing to stdout and
// stderr.
func NewOptions(stdin io.Reader, stdout, stderr io.Writer) *Options {
	return &Options{flags: genericclioptions.NewConfigFlags(true), stdin: stdin, stdout: stdout, stderr: stderr,
		simulateBinary: findSimulateBinary}
}

// Stdout is where the commands print.
func (o *Options) Stdout() io.Writer { return o.stdout }

// AddFlags adds the shared flags (kubectl's, the scheduler conf's, paging
// and logs) to root's persistent flags, and turns the scheduler's logs on
// at --log-level before any command runs.
func (o *Options) AddFlags(root *cobra.Command) {
	root.PersistentPreRun = func(*cobra.Command, []string) {
		quiet.Verbose(o.verbosity)
	}
	o.flags.AddFlags(root.PersistentFlags())
	pf := root.PersistentFlags()
	pf.StringVar(&o.confFile, "scheduler-conf", "", "volcano-scheduler.conf file to use instead of the cluster's scheduler ConfigMap")
	pf.StringVar(&o.configMap, "scheduler-configmap", live.SchedulerConfigMapNamespace+"/"+live.SchedulerConfigMapName,
		"NAMESPACE/NAME of the scheduler's ConfigMap (key "+live.SchedulerConfigMapKey+"); the built-in conf when it does not exist")
	pf.Int64Var(&o.pageSize, "page-size", live.DefaultPageSize, "objects per list request (limit/continue)")
	pf.IntVar(&o.verbosity, "log-level", -1, "verbosity of scheduler logs on stderr; -1 keeps them off")
}

// NewRootCommand builds the command tree.
func NewRootCommand(stdin io.Reader, stdout, stderr io.Writer) *cobra.Command {
	o := NewOptions(stdin, stdout, stderr)
	root := &cobra.Command{
		Use:   "kubectl-rdmatopo",
		Short: "Read-only views of a live cluster's RDMA fabric and the gangs rdmatopo places",
		Long: "kubectl rdmatopo shows a live cluster's RDMA fabric (per S1 and S0 leaf: free and used NICs and who holds them),\n" +
			"explains why a gang waits or where it sits, simulates what the scheduler would do, and draws or serves the fabric map.\n" +
			"It never writes to the cluster.",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetIn(stdin)
	root.SetOut(stdout)
	root.SetErr(stderr)
	o.AddFlags(root)
	root.AddCommand(newTopologyCommand(o), newExplainCommand(o), newSimulateCommand(o), newMapCommand(o),
		newDashboardCommand(o), newVersionCommand(o))
	return root
}

// Clients connects to the cluster the kubectl flags select.
func (o *Options) Clients() (*live.Clients, error) {
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
func (o *Options) namespace() (string, error) {
	ns, _, err := o.flags.ToRawKubeConfigLoader().Namespace()
	return ns, err
}

// ConfSource says where the scheduler conf came from.
type ConfSource struct {
	Kind string `json:"kind"` // file, configmap, built-in
	Name string `json:"name"`
}

func (s ConfSource) String() string { return s.Kind + " " + s.Name }

// ConfError wraps a conf's error as every command reports it.
func ConfError(src ConfSource, err error) error {
	return fmt.Errorf("scheduler conf (%s): %w (pass --scheduler-conf FILE to use another conf)", src, err)
}

// Conf returns the scheduler conf: --scheduler-conf, else the cluster's
// ConfigMap when it exists, else the built-in one, checked as the
// scheduler would run it. It sets c.ReadHyperNodes from the conf's
// s1Source.
func (o *Options) Conf(ctx context.Context, c *live.Clients) (*schedconf.Conf, ConfSource, error) {
	src := ConfSource{Kind: "built-in", Name: "config/" + config.SchedulerConfFile}
	text := config.SchedulerConf
	switch {
	case o.confFile != "":
		data, err := os.ReadFile(o.confFile)
		if err != nil {
			return nil, src, Usagef("--scheduler-conf: %v", err)
		}
		src, text = ConfSource{Kind: "file", Name: o.confFile}, string(data)
	case o.configMap != "":
		ns, name, ok := strings.Cut(o.configMap, "/")
		if !ok || ns == "" || name == "" {
			return nil, src, Usagef("--scheduler-configmap %q: want NAMESPACE/NAME", o.configMap)
		}
		cm, found, err := live.SchedulerConf(ctx, c, ns, name, live.SchedulerConfigMapKey)
		if err != nil {
			return nil, src, err
		}
		if found {
			src, text = ConfSource{Kind: "configmap", Name: o.configMap}, cm
		}
	}
	parsed, err := schedconf.Parse(text)
	if err != nil {
		return nil, src, ConfError(src, err)
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
func (o *Options) viewConf(ctx context.Context, c *live.Clients) (*schedconf.Conf, ConfSource, error) {
	parsed, src, err := o.Conf(ctx, c)
	var cerr *schedconf.ConfError
	if err == nil || !errors.As(err, &cerr) {
		return parsed, src, err
	}
	text := config.SchedulerConf
	switch src.Kind {
	case "file":
		data, rerr := os.ReadFile(o.confFile)
		if rerr != nil {
			return nil, src, Usagef("--scheduler-conf: %v", rerr)
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
	cfg, found, terr := schedconf.TopologyArgs(text)
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
	return &schedconf.Conf{Text: text, Topology: cfg}, src, nil
}

// outputFlag adds -o with the given formats, the first being the default.
func OutputFlag(cmd *cobra.Command, target *string, formats ...string) {
	cmd.Flags().StringVarP(target, "output", "o", formats[0], "output format: "+strings.Join(formats, ", "))
}

// checkOutput validates -o.
func CheckOutput(got string, formats ...string) error {
	for _, f := range formats {
		if got == f {
			return nil
		}
	}
	return Usagef("-o %q: must be one of %s", got, strings.Join(formats, ", "))
}

// writeStructured prints v as indented JSON or as YAML.
func WriteStructured(w io.Writer, format string, v any) error {
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
func (o *Options) viewClients(ctx context.Context) (*live.Clients, *schedconf.Conf, error) {
	c, err := o.Clients()
	if err != nil {
		return nil, nil, err
	}
	conf, _, err := o.viewConf(ctx, c)
	if err != nil {
		return nil, nil, err
	}
	return c, conf, nil
}

// Snapshot connects and reads the cluster and the scheduler conf, checked
// as the scheduler would run it.
func (o *Options) Snapshot(ctx context.Context) (*live.Snapshot, *schedconf.Conf, ConfSource, error) {
	return o.snapshot(ctx, false)
}

// snapshot connects and reads the cluster and the scheduler conf (for a
// view, leniently: see viewConf).
func (o *Options) snapshot(ctx context.Context, view bool) (*live.Snapshot, *schedconf.Conf, ConfSource, error) {
	c, err := o.Clients()
	if err != nil {
		return nil, nil, ConfSource{}, err
	}
	getConf := o.Conf
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
