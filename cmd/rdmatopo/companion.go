package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"syscall"
	"time"

	katalystclient "github.com/kubewharf/katalyst-api/pkg/client/clientset/versioned"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"

	"github.com/rdmatopo/rdmatopo/internal/companion"
	"github.com/rdmatopo/rdmatopo/internal/quiet"
)

// runCompanion implements `rdmatopo companion`: the long-running companion
// beside a scheduler rdmatopo does not replace (docs/companion.md).
func runCompanion(args []string, stdout, stderr io.Writer) error {
	var o companionOpts
	fs := o.flags(stdout)
	if err := fs.parse(args, 0); err != nil {
		return err
	}
	if *fs.v < 0 {
		quiet.Verbose(1)
	}
	if err := o.check(); err != nil {
		return err
	}
	c, err := loadConf(o.confPath)
	if err != nil {
		return err
	}
	o.Topology = c.Topology
	kube, kat, dyn, err := companionClients(o.kubeconfig, o.qps, o.burst)
	if err != nil {
		return err
	}
	comp, err := companion.New(o.Options, kube, kat, dyn)
	if err != nil {
		return badInputf("%v", err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := comp.Start(ctx); err != nil {
		return err
	}
	klog.InfoS("Companion running", "namespace", o.Namespace, "webhook", o.WebhookAddr, "identity", o.Owner.Identity, "metrics", o.MetricsAddr,
		"hyperNodes", o.PublishHyperNodes, "labels", o.PublishLabels, "adopt", o.Adopt, "refuseHardTier", o.RefuseHardTier, "refuseNoFit", o.RefuseNoFit)
	return comp.Run(ctx)
}

// companionOpts are rdmatopo companion's flags: the companion's options and
// what the command itself reads.
type companionOpts struct {
	companion.Options
	kubeconfig, confPath  string
	ownerLease, advertise string
	qps                   float64
	burst                 int
}

// flags binds the command's flags to o.
func (o *companionOpts) flags(stdout io.Writer) *flagSet {
	fs := newFlags("companion", "[--kubeconfig FILE] [flags]", stdout)
	fs.StringVar(&o.kubeconfig, "kubeconfig", "", "kubeconfig of the cluster (default: the in-cluster service account)")
	fs.StringVar(&o.confPath, "scheduler-conf", "", "volcano-scheduler.conf whose rdma-topology arguments (resources, S1 label) apply (default: the built-in conf)")
	fs.StringVar(&o.Namespace, "namespace", os.Getenv("POD_NAMESPACE"), "namespace of the owner Lease (default: $POD_NAMESPACE)")
	fs.StringVar(&o.WebhookAddr, "webhook-address", ":9443", "address of the pods/binding admission webhook (TLS); empty: no webhook")
	fs.StringVar(&o.CertFile, "tls-cert-file", "", "webhook serving certificate (PEM), re-read when it changes")
	fs.StringVar(&o.KeyFile, "tls-private-key-file", "", "webhook serving key (PEM)")
	fs.StringVar(&o.MetricsAddr, "metrics-address", ":8080", "address of /metrics, /healthz and /readyz (HTTP)")
	fs.BoolVar(&o.PublishHyperNodes, "publish-hypernodes", true, "publish Volcano HyperNodes (tier 1 leaf groups, tier 2 S1s)")
	fs.BoolVar(&o.PublishLabels, "publish-labels", true, "label nodes with their leaf group and S1 (Kueue / KAI Topology levels)")
	fs.BoolVar(&o.Adopt, "adopt", true, "write on bound pods the NICs their KCNR lists (binds the webhook did not answer, or the agent overrode)")
	fs.BoolVar(&o.Profiling, "profiling", false, "serve net/http/pprof under /debug/pprof/ on the metrics address")
	fs.BoolVar(&o.RefuseHardTier, "refuse-hard-tier", false, "refuse a bind whose node puts a hard gang beyond its highest tier (default: allow it, with an Event)")
	fs.StringVar(&o.ownerLease, "owner-lease", "rdmatopo-companion-owner", "name of the Lease that elects the replica choosing NICs (the owner of the NIC book)")
	fs.StringVar(&o.advertise, "advertise-address", "", "host:port the other replicas forward binds to, this replica's webhook (default: $POD_IP and the --webhook-address port)")
	fs.DurationVar(&o.Owner.LeaseDuration, "owner-lease-duration", 15*time.Second, "another replica takes the owner Lease this long after it was last renewed")
	fs.DurationVar(&o.Owner.RenewDeadline, "owner-renew-deadline", 10*time.Second, "the owner stops choosing NICs this long after its last successful renew (below --owner-lease-duration)")
	fs.DurationVar(&o.Owner.RetryPeriod, "owner-retry-period", 2*time.Second, "how often the owner Lease is renewed or tried")
	fs.DurationVar(&o.Owner.Grace, "owner-grace", 5*time.Second, "a new owner waits this long before it lists the bound pods and answers (above the webhook's timeoutSeconds)")
	fs.DurationVar(&o.ForwardTimeout, "forward-timeout", time.Second, "give up a bind forwarded to the owner after this long; it goes on without NICs (below the webhook's timeoutSeconds)")
	fs.BoolVar(&o.RefuseNoFit, "refuse-no-fit", false, "refuse a bind to a node where no NUMA zone holds the pod's RDMA request, GPUs and CPUs (default: allow it unannotated, with an Event; the node agent decides)")
	fs.DurationVar(&o.BookGrace, "book-grace", 30*time.Second, "keep a booking of a pod the informer does not hold at least this long (longer than the informers' lag)")
	fs.DurationVar(&o.BookTTL, "book-ttl", 2*time.Minute, "drop a booking after this long in any case")
	fs.DurationVar(&o.Period, "resync-period", 30*time.Second, "publish and adopt at least this often")
	fs.Float64Var(&o.qps, "kube-api-qps", 50, "client QPS to kube-apiserver")
	fs.IntVar(&o.burst, "kube-api-burst", 100, "client burst to kube-apiserver")
	return fs
}

// check checks the flags and fills in the owner's identity: this host and
// the address other replicas forward binds to.
func (o *companionOpts) check() error {
	if o.Namespace == "" {
		return badInputf("companion: --namespace (or $POD_NAMESPACE) is required")
	}
	if o.BookTTL <= o.BookGrace {
		return badInputf("companion: --book-ttl %s must exceed --book-grace %s", o.BookTTL, o.BookGrace)
	}
	if o.WebhookAddr == "" {
		return nil
	}
	if o.advertise == "" {
		var err error
		if o.advertise, err = defaultAdvertise(o.WebhookAddr, os.Getenv("POD_IP")); err != nil {
			return badInputf("companion: %v", err)
		}
	}
	name, _ := os.Hostname()
	o.Owner.LeaseName, o.Owner.Identity = o.ownerLease, companion.Identity(name, o.advertise)
	if err := o.Owner.Validate(); err != nil {
		return badInputf("companion: %v", err)
	}
	return nil
}

// companionClients builds the companion's clients from kubeconfig (empty:
// the in-cluster service account).
func companionClients(kubeconfig string, qps float64, burst int) (kubernetes.Interface, katalystclient.Interface, dynamic.Interface, error) {
	var cfg *rest.Config
	var err error
	if kubeconfig != "" {
		cfg, err = clientcmd.BuildConfigFromFlags("", kubeconfig)
	} else {
		cfg, err = rest.InClusterConfig()
	}
	if err != nil {
		return nil, nil, nil, badInputf("companion: %v", err)
	}
	cfg = rest.CopyConfig(cfg)
	cfg.UserAgent = "rdmatopo-companion"
	cfg.QPS, cfg.Burst = float32(qps), burst
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, nil, nil, err
	}
	kat, err := katalystclient.NewForConfig(cfg)
	if err != nil {
		return nil, nil, nil, err
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, nil, nil, err
	}
	return kube, kat, dyn, nil
}

// defaultAdvertise is the address other replicas forward binds to when
// --advertise-address is not given: the webhook's own host, else podIP,
// with the webhook's port.
func defaultAdvertise(webhookAddr, podIP string) (string, error) {
	host, port, err := net.SplitHostPort(webhookAddr)
	if err != nil {
		return "", fmt.Errorf("--webhook-address %q: %w", webhookAddr, err)
	}
	if ip := net.ParseIP(host); host != "" && (ip == nil || !ip.IsUnspecified()) {
		return webhookAddr, nil
	}
	if podIP == "" {
		return "", fmt.Errorf("--advertise-address is required when the webhook listens on all addresses (%q) and $POD_IP is unset", webhookAddr)
	}
	return net.JoinHostPort(podIP, port), nil
}
