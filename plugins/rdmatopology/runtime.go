package rdmatopology

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	nodev1alpha1 "github.com/kubewharf/katalyst-api/pkg/apis/node/v1alpha1"
	katalystclient "github.com/kubewharf/katalyst-api/pkg/client/clientset/versioned"
	katalystinformers "github.com/kubewharf/katalyst-api/pkg/client/informers/externalversions"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"
	"volcano.sh/volcano/pkg/scheduler/api"
	"volcano.sh/volcano/pkg/scheduler/framework"

	"github.com/rdmatopo/rdmatopo/core/ledger"
	"github.com/rdmatopo/rdmatopo/core/placement"
	"github.com/rdmatopo/rdmatopo/core/preemption"
	"github.com/rdmatopo/rdmatopo/core/topology"
)

// Runtime is the state that outlives sessions: the fabric cache (fed by
// Node and KCNR events), the NIC ledger, and what the plugin and the actions
// keep from one session to the next (holds, claims, adoption memory). Volcano
// rebuilds plugins every session; the plugin builder (Builder) and the
// actions (topologyallocate.New, topologypreempt.New, topologyreclaim.New)
// are handed the Runtime when they are registered, and find the plugin's
// state in an open session through it (ForSession).
//
// NewRuntime builds a Runtime whose fabric the caller feeds (the simulator,
// tests). NewClusterRuntime builds the scheduler's: the first session starts
// the KCNR, Job and HyperNode informers from its client config, and a
// session whose plugin arguments change the topology configuration rebuilds
// it in place (the same Runtime, every state in it new).
type Runtime struct {
	// Fabric is the long-lived, incrementally updated fabric cache.
	Fabric *topology.Cache
	// Ledger is the only record of NIC reservations.
	Ledger *ledger.Ledger

	// planRefused counts the planned nodes refused when a plan was applied
	// (PlanRefused).
	planRefused atomic.Int64

	// Options, fixed when the runtime is built.

	// clock is the time max-wait deadlines and holds are measured on (nil:
	// the wall clock); the simulator gives its simulated clock (wait.go).
	clock func() time.Time
	// patch writes a mismatched pod's real annotations (truth.go); nil:
	// the session's kube client, if any.
	patch PodPatcher
	// recorder emits Events on PodGroups, pods and KCNRs (nil: events are
	// not recorded, unless the cluster runtime makes one on the session's
	// kube client).
	recorder record.EventRecorder

	// claimsStore keeps the claims outside the process for the next
	// leader (claimstore.go); nil: claims live only in memory.
	claimsStore *claimsStore
	// startClaims are claims the runtime starts with (WithClaims).
	startClaims []*preemption.Claim

	// external is true when the fabric is fed by the caller (NewRuntime)
	// rather than by informers this runtime starts (NewClusterRuntime).
	external bool
	// buildMu guards building and rebuilding the cluster runtime, and the
	// arguments last logged.
	buildMu sync.Mutex
	// built is true once the state below belongs to cfg (always for
	// NewRuntime; from the first session on for NewClusterRuntime).
	built bool
	// loggedArgs are the plugin arguments last logged (logged again when
	// they change).
	loggedArgs string
	// warnings remembers the pods warned about for unreadable annotations,
	// across rebuilds (annotation_events.go).
	warnings annotationWarnings
	// quantityWarnings remembers the pending pods warned about for a
	// resource quantity the scheduler cannot count.
	quantityWarnings quantityWarnings

	// State of one topology configuration, made new by reset.

	// cfg is the topology configuration the state was built with; a conf
	// reload with other plugin arguments rebuilds the cluster runtime.
	cfg topology.Config
	// nodes remembers the Node object last fed to the fabric per name, so an
	// unchanged node is not rebuilt every session.
	nodes map[string]*v1.Node
	// stop ends the informers started by this runtime.
	stop chan struct{}
	// truth remembers adoptions of what the KCNRs list (truth.go).
	truth *truth
	// preemption keeps the holds (holds.go) and the claims (claims.go).
	preemption *preemption.Store
	// sent are the tasks of RDMA gangs the last session sent to bind, for
	// the next one to find their failed binds (rebind.go). Only session
	// open and close read and write it, one session at a time.
	sent []sentBind
	// faults follows NIC, leaf and node failures and the pods running
	// gangs lost (faults.go, replace.go).
	faults *faultTracker
	// tasks is the spec.tasks order of Volcano Jobs, for ranks (ranks.go).
	tasks *taskOrders
	// native holds the PodGroups' spec.networkTopology and
	// spec.subGroupPolicy, which Volcano v1.10's types drop (native.go).
	native *nativeTopologies
	// aliases remembers the PodGroups warned about for Volcano
	// network-topology annotations their rdmatopo.io ones overrode
	// (contract.go).
	aliases *aliasWarnings
	// topology reports the fabric's KCNR problems (Events, the gauge
	// rdmatopo_topology_unknown_nics) each time the fabric is synced
	// (topology_events.go).
	topology *topologyReporter
	// lastState is the planner state of the last session opened, as that
	// session left it: the next session takes over what is unchanged
	// (placement.State.Inherit). Only session open reads and writes it,
	// and Volcano opens one session at a time.
	lastState *placement.State
	// sessions maps an open scheduling session's UID to the plugin's state
	// in it (ForSession); guarded by sessionsMu.
	sessionsMu sync.Mutex
	sessions   map[string]*SessionState
}

// Option sets a Runtime's option when it is built.
type Option func(*Runtime)

// WithClock measures max-wait deadlines and holds on now (the simulator's
// simulated time) instead of the wall clock.
func WithClock(now func() time.Time) Option { return func(rt *Runtime) { rt.clock = now } }

// WithPodPatcher writes the real annotations of pods the node agent gave
// other NICs than reserved with p, instead of the session's kube client.
func WithPodPatcher(p PodPatcher) Option { return func(rt *Runtime) { rt.patch = p } }

// WithRecorder records the runtime's Events with r. Without it the cluster
// runtime records them on the first session's kube client, and a runtime
// from NewRuntime records none.
func WithRecorder(r record.EventRecorder) Option { return func(rt *Runtime) { rt.recorder = r } }

// NewRuntime returns a Runtime whose fabric the caller feeds (UpsertNode,
// UpsertCNR, ...). cfg selects resources and the S1 node label.
func NewRuntime(cfg topology.Config, opts ...Option) *Runtime {
	rt := &Runtime{external: true, built: true}
	for _, o := range opts {
		o(rt)
	}
	rt.reset(cfg.WithDefaults())
	for _, c := range rt.startClaims {
		rt.preemption.Claims.Put(c.Job, c)
	}
	return rt
}

// NewClusterRuntime returns the scheduler's Runtime. It is empty until the
// first session, which builds it from the plugin's arguments and the
// session's client config (informers, and an event recorder unless one is
// given); a session whose arguments change the topology configuration
// rebuilds it (ensure).
func NewClusterRuntime(opts ...Option) *Runtime {
	rt := &Runtime{}
	for _, o := range opts {
		o(rt)
	}
	rt.reset(topology.Config{}.WithDefaults())
	return rt
}

// reset gives the runtime a new, empty state for cfg: fabric, ledger and
// every memory that depends on them. The options and the warnings already
// given are kept.
func (rt *Runtime) reset(cfg topology.Config) {
	rt.cfg = cfg
	rt.Fabric = topology.NewCache(cfg)
	rt.Ledger = ledger.New()
	rt.nodes = map[string]*v1.Node{}
	rt.stop = nil
	rt.truth = newTruth()
	rt.preemption = &preemption.Store{}
	rt.sent = nil
	rt.tasks = &taskOrders{}
	rt.faults = newFaultTracker()
	rt.native = &nativeTopologies{}
	rt.aliases = &aliasWarnings{}
	rt.topology = &topologyReporter{}
	rt.lastState = nil
	rt.sessionsMu.Lock()
	rt.sessions = map[string]*SessionState{}
	rt.sessionsMu.Unlock()
}

// addSession registers the plugin's state of an open session.
func (rt *Runtime) addSession(uid string, s *SessionState) {
	rt.sessionsMu.Lock()
	defer rt.sessionsMu.Unlock()
	rt.sessions[uid] = s
}

// session returns the plugin's state in the session, or nil.
func (rt *Runtime) session(uid string) *SessionState {
	rt.sessionsMu.Lock()
	defer rt.sessionsMu.Unlock()
	return rt.sessions[uid]
}

// removeSession forgets a closed session and returns its state.
func (rt *Runtime) removeSession(uid string) *SessionState {
	rt.sessionsMu.Lock()
	defer rt.sessionsMu.Unlock()
	s := rt.sessions[uid]
	delete(rt.sessions, uid)
	return s
}

// informerSyncTimeout bounds the wait for the KCNR cache at start-up; nodes
// whose KCNR has not arrived are topology-unknown until it does.
const informerSyncTimeout = 30 * time.Second

// ensure builds the cluster runtime for the plugin's arguments: on the
// first session, a KCNR informer built with the katalyst clientset from the
// session's client config (and the Job and HyperNode informers), and an
// event recorder on its kube client unless one was given. When Volcano
// reloads a conf whose rdma-topology arguments change the topology
// configuration, the runtime is rebuilt in place (its informers stopped;
// the new ledger is restored from the pods' annotations and the KCNRs by
// the next reconcile). A runtime from NewRuntime is kept as it is.
func (rt *Runtime) ensure(ssn *framework.Session, args *Args) {
	cfg := args.TopologyConfig().WithDefaults()
	rt.buildMu.Lock()
	defer rt.buildMu.Unlock()
	if rt.external || rt.built && rt.cfg == cfg {
		return
	}
	if rt.built {
		klog.InfoS("rdma-topology arguments changed; rebuilding the topology runtime", "old", fmt.Sprintf("%+v", rt.cfg), "new", fmt.Sprintf("%+v", cfg))
		rt.Stop()
	}
	rt.reset(cfg)
	rt.built = true
	if c := ssn.ClientConfig(); c != nil {
		if err := rt.startInformer(c); err != nil {
			klog.ErrorS(err, "Cannot watch CustomNodeResources; RDMA nodes are topology-unknown")
		}
		if err := rt.startPodGroupInformer(c); err != nil {
			klog.ErrorS(err, "Cannot watch PodGroups; their spec.networkTopology and spec.subGroupPolicy are not read")
		}
		if cfg.S1Source == topology.S1FromHyperNode {
			if err := rt.startHyperNodeInformer(c); err != nil {
				klog.ErrorS(err, "Cannot watch HyperNodes; every node shares the default S1")
			}
		}
	}
	if kc := ssn.KubeClient(); kc != nil && rt.claimsStore != nil {
		if rt.stop == nil {
			rt.stop = make(chan struct{})
		}
		for _, c := range rt.claimsStore.load(kc, rt.stop, rt.Now()) {
			rt.preemption.Claims.Put(c.Job, c)
		}
	}
	if kc := ssn.KubeClient(); kc != nil && rt.recorder == nil {
		b := record.NewBroadcaster()
		b.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: kc.CoreV1().Events("")})
		rt.recorder = b.NewRecorder(scheme.Scheme, v1.EventSource{Component: "vc-scheduler-" + PluginName})
	}
}

// logArgs logs the plugin's effective arguments when they differ from those
// last logged.
func (rt *Runtime) logArgs(args *Args) {
	s := args.String()
	rt.buildMu.Lock()
	defer rt.buildMu.Unlock()
	if s == rt.loggedArgs {
		return
	}
	rt.loggedArgs = s
	klog.InfoS("rdma-topology plugin configured", "args", s)
}

// Stop ends the runtime's informer, if it started one.
func (rt *Runtime) Stop() {
	if rt.stop != nil {
		close(rt.stop)
		rt.stop = nil
	}
}

// startInformer watches KCNRs and feeds the fabric cache.
func (rt *Runtime) startInformer(cfg *rest.Config) error {
	client, err := katalystclient.NewForConfig(cfg)
	if err != nil {
		return err
	}
	rt.stop = make(chan struct{})
	fabric := rt.Fabric
	factory := katalystinformers.NewSharedInformerFactory(client, 0)
	inf := factory.Node().V1alpha1().CustomNodeResources().Informer()
	if err := inf.SetTransform(trimCNR(topology.NewCNRTrimmer())); err != nil {
		return fmt.Errorf("KCNR informer transform: %w", err)
	}
	_, err = inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj interface{}) { upsertCNR(fabric, obj) },
		UpdateFunc: func(_, obj interface{}) { upsertCNR(fabric, obj) },
		DeleteFunc: func(obj interface{}) {
			if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = t.Obj
			}
			if cnr, ok := obj.(*nodev1alpha1.CustomNodeResource); ok {
				fabric.DeleteCNR(cnr.Name)
			}
		},
	})
	if err != nil {
		return err
	}
	factory.Start(rt.stop)
	if err := rt.startJobInformer(cfg); err != nil {
		// Ranks of Volcano Job pods then order tasks by name.
		klog.ErrorS(err, "Cannot watch Volcano Jobs; their tasks are ranked by name")
	}
	ctx, cancel := context.WithTimeout(context.Background(), informerSyncTimeout)
	defer cancel()
	if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		klog.InfoS("CustomNodeResource cache not synced yet; continuing", "timeout", informerSyncTimeout)
	}
	observeSynced(informerCNR, inf.HasSynced, rt.stop)
	klog.InfoS("Watching CustomNodeResources for RDMA topology")
	return nil
}

// trimCNR returns the KCNR informer's transform: its store keeps only the
// part of each KCNR the fabric reads (topology.CNRTrimmer), with equal
// resource lists shared; managedFields, attributes, siblings, capacities
// and metrics are most of a KCNR and are never read.
func trimCNR(t *topology.CNRTrimmer) cache.TransformFunc {
	return func(obj interface{}) (interface{}, error) {
		if cnr, ok := obj.(*nodev1alpha1.CustomNodeResource); ok {
			return t.Trim(cnr), nil
		}
		return obj, nil
	}
}

// upsertCNR feeds a KCNR event to the fabric cache the informer was
// started for (a rebuilt runtime has another).
func upsertCNR(fabric *topology.Cache, obj interface{}) {
	if cnr, ok := obj.(*nodev1alpha1.CustomNodeResource); ok {
		fabric.UpsertCNR(cnr)
	}
}

// syncNodes feeds the session's Node objects into the fabric; unchanged
// objects (same pointer from the scheduler cache) are skipped. When the
// fabric changed since the last sync (a Node here, or a KCNR from the
// informer or the caller), its topology problems are reported: one Warning
// Event per node and reason code on the node's KCNR, not repeated while the
// same problems persist, and the gauge rdmatopo_topology_unknown_nics.
func (rt *Runtime) syncNodes(ssn *framework.Session) {
	for name, ni := range ssn.Nodes {
		if ni.Node == nil || rt.nodes[name] == ni.Node {
			continue
		}
		rt.nodes[name] = ni.Node
		rt.Fabric.UpsertNode(ni.Node)
	}
	if lister, ok := nodeLister(ssn); ok {
		rt.forgetDeleted(ssn.Nodes, lister)
	}
	rt.topology.report(rt.recorder, rt.Fabric.Snapshot())
}

// nodeLister returns the scheduler's Node lister, once its informer has
// synced; false in a session without one (tests, the simulator).
func nodeLister(ssn *framework.Session) (corelisters.NodeLister, bool) {
	f := ssn.InformerFactory()
	if f == nil {
		return nil, false
	}
	inf := f.Core().V1().Nodes()
	if !inf.Informer().HasSynced() {
		return nil, false
	}
	return inf.Lister(), true
}

// forgetDeleted drops from the fabric the nodes synced before whose Node
// object is gone, so that their NICs leave the gauges (free NICs per S1,
// topology-unknown NICs) and the planner's view. A node missing from the
// session is not necessarily gone: Volcano's snapshot also leaves out the
// nodes that are not Ready, which stay in the fabric (unusable, see
// LimitNodes); the lister tells the two apart.
func (rt *Runtime) forgetDeleted(session map[string]*api.NodeInfo, lister corelisters.NodeLister) {
	for name := range rt.nodes {
		if _, ok := session[name]; ok {
			continue
		}
		if _, err := lister.Get(name); !apierrors.IsNotFound(err) {
			continue
		}
		delete(rt.nodes, name)
		rt.Fabric.DeleteNode(name)
		klog.V(3).InfoS("Node deleted; dropped from the fabric", "node", klog.KRef("", name))
	}
}

// PlanRefused is how many planned nodes this runtime's sessions saw refused
// when a plan was applied (a predicate or the node's idle resources said no
// to a node the planner chose); the rdmatopo_plan_refused_total metric
// counts the same by predicate, for every runtime of the process.
func (rt *Runtime) PlanRefused() int64 { return rt.planRefused.Load() }
