package main

import (
	"context"
	"io"
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
		bookGrace, bookTTL, period      time.Duration
		qps                             float64
		burst                           int
	)
	fs := newFlags("companion", "[--kubeconfig FILE] [flags]", stdout)
	fs.StringVar(&kubeconfig, "kubeconfig", "", "kubeconfig of the cluster (default: the in-cluster service account)")
	fs.StringVar(&confPath, "scheduler-conf", "", "volcano-scheduler.conf whose rdma-topology arguments (resources, S1 label) apply (default: the built-in conf)")
	fs.StringVar(&namespace, "namespace", os.Getenv("POD_NAMESPACE"), "namespace of the per-node NIC book Leases (default: $POD_NAMESPACE)")
	fs.StringVar(&webhookAddr, "webhook-address", ":9443", "address of the pods/binding admission webhook (TLS); empty: no webhook")
	fs.StringVar(&certFile, "tls-cert-file", "", "webhook serving certificate (PEM), re-read when it changes")
	fs.StringVar(&keyFile, "tls-private-key-file", "", "webhook serving key (PEM)")
	fs.StringVar(&metricsAddr, "metrics-address", ":8080", "address of /metrics, /healthz and /readyz (HTTP)")
	fs.BoolVar(&hyperNodes, "publish-hypernodes", true, "publish Volcano HyperNodes (tier 1 leaf groups, tier 2 S1s)")
	fs.BoolVar(&nodeLabels, "publish-labels", true, "label nodes with their leaf group and S1 (Kueue / KAI Topology levels)")
	fs.BoolVar(&adopt, "adopt", true, "write on bound pods the NICs their KCNR lists (binds the webhook did not answer, or the agent overrode)")
	fs.BoolVar(&profiling, "profiling", false, "serve net/http/pprof under /debug/pprof/ on the metrics address")
	fs.BoolVar(&refuseHardTier, "refuse-hard-tier", false, "refuse a bind whose node puts a hard gang beyond its highest tier (default: allow it, with an Event)")
	fs.DurationVar(&bookGrace, "book-grace", 30*time.Second, "keep a booking at least this long (longer than the informers' lag)")
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
	// The NIC book's writes are one or two per RDMA bind, each awaited by
	// the bind: no client-side rate limit (the API server's flow control
	// still applies).
	bookCfg := rest.CopyConfig(cfg)
	bookCfg.QPS, bookCfg.Burst = -1, 0
	bookClient, err := kubernetes.NewForConfig(bookCfg)
	if err != nil {
		return err
	}
	comp, err := companion.New(companion.Options{
		Topology: c.Topology, Namespace: namespace,
		WebhookAddr: webhookAddr, CertFile: certFile, KeyFile: keyFile,
		MetricsAddr: metricsAddr, PublishHyperNodes: hyperNodes, PublishLabels: nodeLabels,
		Adopt: adopt, RefuseHardTier: refuseHardTier, Profiling: profiling,
		BookGrace: bookGrace, BookTTL: bookTTL, Period: period, BookClient: bookClient,
	}, kube, kat, dyn)
	if err != nil {
		return badInputf("%v", err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := comp.Start(ctx); err != nil {
		return err
	}
	klog.InfoS("Companion running", "namespace", namespace, "webhook", webhookAddr, "metrics", metricsAddr,
		"hyperNodes", hyperNodes, "labels", nodeLabels, "adopt", adopt, "refuseHardTier", refuseHardTier)
	return comp.Run(ctx)
}
