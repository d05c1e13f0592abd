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
	var (
		kubeconfig, confPath, namespace string
		webhookAddr, certFile, keyFile  string
		metricsAddr                     string
		hyperNodes, nodeLabels, adopt   bool
		refuseHardTier, profiling       bool
		refuseNoFit                     bool
		bookGrace, bookTTL, period      time.Duration
		qps                             float64
		burst                           int
		ownerLease, advertise           string
		owner                           companion.OwnerConfig
		forwardTimeout                  time.Duration
	)
	fs := newFlags("companion", "[--kubeconfig FILE] [flags]", stdout)
	fs.StringVar(&kubeconfig, "kubeconfig", "", "kubeconfig of the cluster (default: the in-cluster service account)")
	fs.StringVar(&confPath, "scheduler-conf", "", "volcano-scheduler.conf whose rdma-topology arguments (resources, S1 label) apply (default: the built-in conf)")
	fs.StringVar(&namespace, "namespace", os.Getenv("POD_NAMESPACE"), "namespace of the owner Lease (default: $POD_NAMESPACE)")
	fs.StringVar(&webhookAddr, "webhook-address", ":9443", "address of the pods/binding admission webhook (TLS); empty: no webhook")
	fs.StringVar(&certFile, "tls-cert-file", "", "webhook serving certificate (PEM), re-read when it changes")
	fs.StringVar(&keyFile, "tls-private-key-file", "", "webhook serving key (PEM)")
	fs.StringVar(&metricsAddr, "metrics-address", ":8080", "address of /metrics, /healthz and /readyz (HTTP)")
	fs.BoolVar(&hyperNodes, "publish-hypernodes", true, "publish Volcano HyperNodes (tier 1 leaf groups, tier 2 S1s)")
	fs.BoolVar(&nodeLabels, "publish-labels", true, "label nodes with their leaf group and S1 (Kueue / KAI Topology levels)")
	fs.BoolVar(&adopt, "adopt", true, "write on bound pods the NICs their KCNR lists (binds the webhook did not answer, or the agent overrode)")
	fs.BoolVar(&profiling, "profiling", false, "serve net/http/pprof under /debug/pprof/ on the metrics address")
	fs.BoolVar(&refuseHardTier, "refuse-hard-tier", false, "refuse a bind whose node puts a hard gang beyond its highest tier (default: allow it, with an Event)")
	fs.StringVar(&ownerLease, "owner-lease", "rdmatopo-companion-owner", "name of the Lease that elects the replica choosing NICs (the owner of the NIC book)")
	fs.StringVar(&advertise, "advertise-address", "", "host:port the other replicas forward binds to, this replica's webhook (default: $POD_IP and the --webhook-address port)")
	fs.DurationVar(&owner.LeaseDuration, "owner-lease-duration", 15*time.Second, "another replica takes the owner Lease this long after it was last renewed")
	fs.DurationVar(&owner.RenewDeadline, "owner-renew-deadline", 10*time.Second, "the owner stops choosing NICs this long after its last successful renew (below --owner-lease-duration)")
	fs.DurationVar(&owner.RetryPeriod, "owner-retry-period", 2*time.Second, "how often the owner Lease is renewed or tried")
	fs.DurationVar(&owner.Grace, "owner-grace", 5*time.Second, "a new owner waits this long before it lists the bound pods and answers (above the webhook's timeoutSeconds)")
	fs.DurationVar(&forwardTimeout, "forward-timeout", time.Second, "give up a bind forwarded to the owner after this long; it goes on without NICs (below the webhook's timeoutSeconds)")
	fs.BoolVar(&refuseNoFit, "refuse-no-fit", false, "refuse a bind to a node where no NUMA zone holds the pod's RDMA request, GPUs and CPUs (default: allow it unannotated, with an Event; the node agent decides)")
	fs.DurationVar(&bookGrace, "book-grace", 30*time.Second, "keep a booking of a pod the informer does not hold at least this long (longer than the informers' lag)")
	fs.DurationVar(&bookTTL, "book-ttl", 2*time.Minute, "drop a booking after this long in any case")
	fs.DurationVar(&period, "resync-period", 30*time.Second, "publish and adopt at least this often")
	fs.Float64Var(&qps, "kube-api-qps", 50, "client QPS to kube-apiserver")
	fs.IntVar(&burst, "kube-api-burst", 100, "client burst to kube-apiserver")
	if err := fs.parse(args, 0); err != nil {
		return err
	}
	if *fs.v < 0 {
		quiet.Verbose(1)
	}
	if namespace == "" {
		return badInputf("companion: --namespace (or $POD_NAMESPACE) is required")
	}
	if bookTTL <= bookGrace {
		return badInputf("companion: --book-ttl %s must exceed --book-grace %s", bookTTL, bookGrace)
	}
	if webhookAddr != "" {
		if advertise == "" {
			var err error
			if advertise, err = defaultAdvertise(webhookAddr, os.Getenv("POD_IP")); err != nil {
				return badInputf("companion: %v", err)
			}
		}
		name, _ := os.Hostname()
		owner.LeaseName, owner.Identity = ownerLease, companion.Identity(name, advertise)
		if err := owner.Validate(); err != nil {
			return badInputf("companion: %v", err)
		}
	}
	c, err := loadConf(confPath)
	if err != nil {
		return err
	}
	var cfg *rest.Config
	if kubeconfig != "" {
		cfg, err = clientcmd.BuildConfigFromFlags("", kubeconfig)
	} else {
		cfg, err = rest.InClusterConfig()
	}
	if err != nil {
		return badInputf("companion: %v", err)
	}
	cfg = rest.CopyConfig(cfg)
	cfg.UserAgent = "rdmatopo-companion"
	cfg.QPS, cfg.Burst = float32(qps), burst
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	kat, err := katalystclient.NewForConfig(cfg)
	if err != nil {
		return err
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return err
	}
	comp, err := companion.New(companion.Options{
		Topology: c.Topology, Namespace: namespace,
		WebhookAddr: webhookAddr, CertFile: certFile, KeyFile: keyFile,
		MetricsAddr: metricsAddr, PublishHyperNodes: hyperNodes, PublishLabels: nodeLabels,
		Adopt: adopt, RefuseHardTier: refuseHardTier, RefuseNoFit: refuseNoFit, Profiling: profiling,
		BookGrace: bookGrace, BookTTL: bookTTL, Period: period,
		Owner: owner, ForwardTimeout: forwardTimeout,
	}, kube, kat, dyn)
	if err != nil {
		return badInputf("%v", err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := comp.Start(ctx); err != nil {
		return err
	}
	klog.InfoS("Companion running", "namespace", namespace, "webhook", webhookAddr, "identity", owner.Identity, "metrics", metricsAddr,
		"hyperNodes", hyperNodes, "labels", nodeLabels, "adopt", adopt, "refuseHardTier", refuseHardTier, "refuseNoFit", refuseNoFit)
	return comp.Run(ctx)
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
