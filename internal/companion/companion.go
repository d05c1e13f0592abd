package companion

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/pprof"
	"sort"
	"sync"
	"time"

	"github.com/kubewharf/katalyst-api/pkg/apis/node/v1alpha1"
	katalystclient "github.com/kubewharf/katalyst-api/pkg/client/clientset/versioned"
	katalystinformers "github.com/kubewharf/katalyst-api/pkg/client/informers/externalversions"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"

	"github.com/rdmatopo/rdmatopo/core/ledger"
	"github.com/rdmatopo/rdmatopo/core/topology"
)

// Options configure a companion.
type Options struct {
	Topology topology.Config
	// Namespace holds the owner Lease.
	Namespace string
	// Owner configures the election of the NIC book's owner (its
	// Namespace is Namespace); used when the webhook is served.
	Owner OwnerConfig
	// ForwardTimeout bounds a bind forwarded to the owner.
	ForwardTimeout time.Duration
	// WebhookAddr serves the admission webhook over TLS (CertFile,
	// KeyFile); empty: no webhook.
	WebhookAddr       string
	CertFile, KeyFile string
	// MetricsAddr serves /metrics, /healthz and /readyz over HTTP.
	MetricsAddr string
	// Profiling adds net/http/pprof's handlers under /debug/pprof/ to
	// MetricsAddr.
	Profiling bool
	// PublishHyperNodes and PublishLabels turn the publisher's halves on.
	PublishHyperNodes, PublishLabels bool
	// Adopt turns on bringing pods' annotations to what their KCNR lists.
	Adopt bool
	// RefuseHardTier: refuse binds that break a hard gang's tier.
	RefuseHardTier bool
	// RefuseNoFit: refuse binds to a node where no NUMA zone holds the pod.
	RefuseNoFit bool
	// BookGrace and BookTTL bound how long bookings are kept (Book).
	BookGrace, BookTTL time.Duration
	// Period is the publisher's and adopter's resync period.
	Period time.Duration
}

// Companion is a running companion: informers, the fabric cache, the
// publisher, the adopter and the webhook.
type Companion struct {
	opts     Options
	kube     kubernetes.Interface
	dynamic  dynamic.Interface
	metrics  *Metrics
	recorder record.EventRecorder
	chooser  *Chooser

	factory informers.SharedInformerFactory
	katFact katalystinformers.SharedInformerFactory
	pods    cache.SharedIndexInformer
	nodes   cache.SharedIndexInformer
	cnrs    cache.SharedIndexInformer

	mu     sync.Mutex
	fabric *topology.Cache
	// seen marks RDMA pods already counted as unassisted (by UID).
	seen map[string]bool
	// rdma remembers, by UID, whether a bound pod requests RDMA (adopt's
	// goroutine only).
	rdma map[string]bool

	// changed wakes the publisher and the adopter.
	changed chan struct{}
	webhook *Webhook
	book    *Book
	// owner elects the book's owner (nil without a webhook).
	owner *Owner
}

// Pod indexes.
const (
	byNode = "node"
	byGang = "gang"
	byUID  = "uid"
)

// New builds a companion on a cluster's clients.
func New(opts Options, kube kubernetes.Interface, kat katalystclient.Interface, dyn dynamic.Interface) (*Companion, error) {
	if err := CheckConfig(opts.Topology); err != nil {
		return nil, err
	}
	if opts.Namespace == "" {
		return nil, errors.New("companion: the namespace of the owner Lease is required")
	}
	if opts.Period <= 0 {
		opts.Period = 30 * time.Second
	}
	if opts.BookGrace <= 0 {
		opts.BookGrace = 30 * time.Second
	}
	if opts.BookTTL <= opts.BookGrace {
		opts.BookTTL = 4 * opts.BookGrace
	}
	c := &Companion{
		opts: opts, kube: kube, dynamic: dyn, metrics: NewMetrics(),
		chooser: &Chooser{Config: opts.Topology},
		fabric:  topology.NewCache(opts.Topology),
		seen:    map[string]bool{},
		changed: make(chan struct{}, 1),
	}
	if err := c.watch(kube, kat); err != nil {
		return nil, err
	}
	broadcaster := record.NewBroadcaster()
	broadcaster.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: kube.CoreV1().Events("")})
	c.recorder = broadcaster.NewRecorder(scheme.Scheme, corev1.EventSource{Component: "rdmatopo-companion"})
	c.book = &Book{Grace: opts.BookGrace, TTL: opts.BookTTL}
	c.webhook = &Webhook{
		Chooser: c.chooser, Book: c.book,
		Cluster: c, Metrics: c.metrics, Recorder: c.recorder, Client: kube,
		RefuseHardTier: opts.RefuseHardTier, RefuseNoFit: opts.RefuseNoFit,
	}
	if opts.WebhookAddr != "" {
		oc := opts.Owner
		oc.Namespace = opts.Namespace
		owner, err := NewOwner(oc, kube, c.book, nil, func(on bool) {
			if on {
				c.metrics.Owner.Set(1)
			} else {
				c.metrics.Owner.Set(0)
			}
		})
		if err != nil {
			return nil, fmt.Errorf("companion: %w", err)
		}
		c.owner = owner
		c.webhook.Owner = owner
	}
	return c, nil
}

// watch sets up the informers (pods indexed by node, gang and UID; nodes
// and KCNRs fed to the fabric cache) and what their changes wake.
func (c *Companion) watch(kube kubernetes.Interface, kat katalystclient.Interface) error {
	c.factory = informers.NewSharedInformerFactory(kube, 0)
	c.katFact = katalystinformers.NewSharedInformerFactory(kat, 0)
	c.pods = c.factory.Core().V1().Pods().Informer()
	c.nodes = c.factory.Core().V1().Nodes().Informer()
	c.cnrs = c.katFact.Node().V1alpha1().CustomNodeResources().Informer()
	if err := c.pods.AddIndexers(cache.Indexers{
		byNode: func(obj any) ([]string, error) {
			p, ok := obj.(*corev1.Pod)
			if !ok || p.Spec.NodeName == "" {
				return nil, nil
			}
			return []string{p.Spec.NodeName}, nil
		},
		byGang: func(obj any) ([]string, error) {
			p, ok := obj.(*corev1.Pod)
			if !ok || GangKey(p) == "" {
				return nil, nil
			}
			return []string{GangKey(p)}, nil
		},
		byUID: func(obj any) ([]string, error) {
			p, ok := obj.(*corev1.Pod)
			if !ok {
				return nil, nil
			}
			return []string{string(p.UID)}, nil
		},
	}); err != nil {
		return err
	}
	wake := cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { c.wake() },
		UpdateFunc: func(any, any) { c.wake() },
		DeleteFunc: func(any) { c.wake() },
	}
	_, _ = c.nodes.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(o any) { c.upsertNode(o) },
		UpdateFunc: func(_, o any) { c.upsertNode(o) },
		DeleteFunc: func(o any) { c.deleteObj(o, c.fabric.DeleteNode) },
	})
	_, _ = c.cnrs.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(o any) { c.upsertCNR(o) },
		UpdateFunc: func(_, o any) { c.upsertCNR(o) },
		DeleteFunc: func(o any) { c.deleteObj(o, c.fabric.DeleteCNR) },
	})
	_, _ = c.pods.AddEventHandler(wake)
	return nil
}

// Metrics returns the companion's metrics.
func (c *Companion) Metrics() *Metrics { return c.metrics }

// Webhook returns the admission handler.
func (c *Companion) Webhook() *Webhook { return c.webhook }

func (c *Companion) wake() {
	select {
	case c.changed <- struct{}{}:
	default:
	}
}

func (c *Companion) upsertNode(o any) {
	if n, ok := o.(*corev1.Node); ok {
		c.mu.Lock()
		c.fabric.UpsertNode(n)
		c.mu.Unlock()
		c.wake()
	}
}

func (c *Companion) upsertCNR(o any) {
	if n, ok := o.(*v1alpha1.CustomNodeResource); ok {
		c.mu.Lock()
		c.fabric.UpsertCNR(n)
		c.mu.Unlock()
		c.wake()
	}
}

func (c *Companion) deleteObj(o any, del func(string)) {
	if t, ok := o.(cache.DeletedFinalStateUnknown); ok {
		o = t.Obj
	}
	if m, ok := o.(metav1.Object); ok {
		c.mu.Lock()
		del(m.GetName())
		c.mu.Unlock()
		c.wake()
	}
}

// Fabric implements Cluster.
func (c *Companion) Fabric() *topology.Fabric {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.fabric.Snapshot()
}

// Pod implements Cluster.
func (c *Companion) Pod(namespace, name string) (*corev1.Pod, bool) {
	o, ok, err := c.pods.GetIndexer().GetByKey(namespace + "/" + name)
	if err != nil || !ok {
		return nil, false
	}
	p, ok := o.(*corev1.Pod)
	return p, ok
}

func (c *Companion) podsBy(index, key string) []*corev1.Pod {
	objs, err := c.pods.GetIndexer().ByIndex(index, key)
	if err != nil {
		return nil
	}
	out := make([]*corev1.Pod, 0, len(objs))
	for _, o := range objs {
		if p, ok := o.(*corev1.Pod); ok {
			out = append(out, p)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].UID < out[j].UID })
	return out
}

// PodsOnNode implements Cluster: the node's pods that have not finished.
func (c *Companion) PodsOnNode(node string) []*corev1.Pod {
	var out []*corev1.Pod
	for _, p := range c.podsBy(byNode, node) {
		if p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed {
			out = append(out, p)
		}
	}
	return out
}

// GangPods implements Cluster.
func (c *Companion) GangPods(key string) []*corev1.Pod { return c.podsBy(byGang, key) }

// PodState implements Cluster.
func (c *Companion) PodState(uid string) PodState {
	ps := c.podsBy(byUID, uid)
	if len(ps) == 0 {
		return PodState{}
	}
	p := ps[0]
	nics, _ := ledger.ParseNICs(p.Annotations[ledger.AnnotationNICs])
	sort.Slice(nics, func(i, j int) bool { return nics[i] < nics[j] })
	return PodState{Known: true, Node: p.Spec.NodeName, NICs: nics}
}

// Start starts the informers and waits for their caches.
func (c *Companion) Start(ctx context.Context) error {
	c.factory.Start(ctx.Done())
	c.katFact.Start(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), c.pods.HasSynced, c.nodes.HasSynced, c.cnrs.HasSynced) {
		return errors.New("companion: informer caches did not sync")
	}
	return nil
}

// Run serves the webhook and metrics, takes part in the election of the
// book's owner, and runs the publisher and adopter until ctx ends. Start
// must have returned first.
func (c *Companion) Run(ctx context.Context) error {
	errs := make(chan error, 3)
	var servers []*http.Server
	if c.opts.MetricsAddr != "" {
		mux := http.NewServeMux()
		mux.Handle("/metrics", promhttp.HandlerFor(c.metrics.Registry, promhttp.HandlerOpts{}))
		ok := func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok")) }
		mux.HandleFunc("/healthz", ok)
		mux.HandleFunc("/readyz", func(w http.ResponseWriter, r *http.Request) {
			// Ready once binds sent here are answered: by this replica
			// as the owner, or by the owner they are forwarded to.
			if c.owner != nil && !c.owner.Ready() {
				http.Error(w, "no owner of the NIC book answers yet", http.StatusServiceUnavailable)
				return
			}
			ok(w, r)
		})
		if c.opts.Profiling {
			mux.HandleFunc("/debug/pprof/", pprof.Index)
			mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
			mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
			mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
			mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
		}
		srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
		ln, err := net.Listen("tcp", c.opts.MetricsAddr)
		if err != nil {
			return fmt.Errorf("metrics address %s: %w", c.opts.MetricsAddr, err)
		}
		servers = append(servers, srv)
		go func() { errs <- ignoreClosed(srv.Serve(ln)) }()
	}
	if c.opts.WebhookAddr != "" {
		cert, err := loadCert(c.opts.CertFile, c.opts.KeyFile)
		if err != nil {
			return err
		}
		fw := &Forwarder{Client: NewForwardClient(func() (*tls.Certificate, error) { return cert.get(nil) }),
			Timeout: c.opts.ForwardTimeout, From: c.opts.Owner.Identity}
		c.webhook.Forward = fw.Forward
		mux := http.NewServeMux()
		mux.Handle("/bind", c.webhook)
		srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second,
			TLSConfig: &tls.Config{MinVersion: tls.VersionTLS12, GetCertificate: cert.get}}
		ln, err := net.Listen("tcp", c.opts.WebhookAddr)
		if err != nil {
			return fmt.Errorf("webhook address %s: %w", c.opts.WebhookAddr, err)
		}
		servers = append(servers, srv)
		go func() { errs <- ignoreClosed(srv.ServeTLS(ln, "", "")) }()
	}
	ownerDone := make(chan struct{})
	if c.owner != nil {
		go func() {
			defer close(ownerDone)
			c.owner.Run(ctx)
		}()
	} else {
		close(ownerDone)
	}
	go c.loop(ctx)
	select {
	case <-ctx.Done():
	case err := <-errs:
		if err != nil {
			return err
		}
		<-ctx.Done()
	}
	// The owner stops answering and releases its Lease, so that another
	// replica takes over without waiting for it to expire.
	<-ownerDone
	for _, s := range servers {
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_ = s.Shutdown(sctx)
		cancel()
	}
	return nil
}

func ignoreClosed(err error) error {
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}

// loop runs the publisher and the adopter on every change (coalesced, at
// most every second) and every Period.
func (c *Companion) loop(ctx context.Context) {
	pub := &Publisher{Kube: c.kube, Dynamic: c.dynamic, Metrics: c.metrics, HyperNodes: c.opts.PublishHyperNodes, Labels: c.opts.PublishLabels}
	tick := time.NewTicker(c.opts.Period)
	defer tick.Stop()
	for {
		c.once(ctx, pub)
		select {
		case <-ctx.Done():
			return
		case <-c.changed:
		case <-tick.C:
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(time.Second / 4):
		}
	}
}

// once publishes and adopts once.
func (c *Companion) once(ctx context.Context, pub *Publisher) {
	f := c.Fabric()
	if pub.HyperNodes || pub.Labels {
		if _, err := pub.Sync(ctx, Publish(f), c.nodeList()); err != nil {
			klog.ErrorS(err, "Publishing the fabric failed; retried on the next change")
		}
	}
	if c.opts.Adopt {
		c.adopt(ctx, f)
	}
}

func (c *Companion) nodeList() []*corev1.Node {
	objs := c.nodes.GetIndexer().List()
	out := make([]*corev1.Node, 0, len(objs))
	for _, o := range objs {
		if n, ok := o.(*corev1.Node); ok {
			out = append(out, n)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// allPods lists the informer's pods.
func (c *Companion) allPods() []*corev1.Pod {
	objs := c.pods.GetIndexer().List()
	out := make([]*corev1.Pod, 0, len(objs))
	for _, o := range objs {
		if p, ok := o.(*corev1.Pod); ok {
			out = append(out, p)
		}
	}
	return out
}
