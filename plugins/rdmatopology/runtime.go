package rdmatopology

import (
	"context"
	"fmt"
	"sync"
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

	"github.com/rdmatopo/rdmatopo/framework/ledger"
	"github.com/rdmatopo/rdmatopo/framework/placement"
	"github.com/rdmatopo/rdmatopo/framework/topology"
)

// Runtime is the process-wide state that outlives sessions: the fabric cache
// (fed by Node and KCNR events) and the NIC ledger. Volcano rebuilds plugins
// every session; the Runtime is what they share.
//
// In the vc-scheduler binary the first session starts a KCNR informer from
// the session's client config and feeds the cache. Simulators and tests build
// their own Runtime, feed it directly and install it with SetRuntime.
type Runtime struct {
	// Fabric is the long-lived, incrementally updated fabric cache.
	Fabric *topology.Cache
	// Ledger is the only record of NIC reservations.
	Ledger *ledger.Ledger

	// external is true when the fabric is fed by the caller (simulate,
	// tests) rather than by an informer this package starts.
	external bool
	// nodes remembers the Node object last fed to the fabric per name, so an
	// unchanged node is not rebuilt every session.
	nodes map[string]*v1.Node
	// recorder emits Events on PodGroups (nil: events are not recorded).
	recorder record.EventRecorder
	// stop ends the informer started by this runtime.
	stop chan struct{}
	// truth remembers adoptions of what the KCNRs list (truth.go).
	truth *truth
	// clock is the time max-wait deadlines are measured on (nil: the wall
	// clock); the simulator installs its simulated clock (wait.go).
	clock func() time.Time
	// holds are the preempting gangs' holds (holds.go).
	holds jobBook[*Hold]
	// sent are the tasks of RDMA gangs the last session sent to bind, for
	// the next one to find their failed binds (rebind.go). Only session
	// open and close read and write it, one session at a time.
	sent []sentBind
	// claims are the rooms kept for waiting hard gangs (claims.go).
	claims jobBook[*Claim]
	// tasks is the spec.tasks order of Volcano Jobs, for ranks (ranks.go).
	tasks taskOrders
	// aliases remembers the PodGroups warned about for Volcano
	// network-topology annotations their rdmatopo.io ones overrode
	// (contract.go).
	aliases aliasWarnings
	// topology reports the fabric's KCNR problems (Events, the gauge
	// rdmatopo_topology_unknown_nics) each time the fabric is synced
	// (topology_events.go).
	topology topologyReporter
	// cfg is the topology configuration the runtime was built with; a conf
	// reload with other plugin arguments rebuilds the production runtime.
	cfg topology.Config
	// lastState is the planner state of the last session opened, as that
	// session left it: the next session takes over what is unchanged
	// (placement.State.Inherit). Only session open reads and writes it,
	// and Volcano opens one session at a time.
	lastState *placement.State
	// carried holds what actions keep from one session to the next
	// (Session.Carried); guarded by sessionsMu.
	carried map[any]any
	// sessions maps an open scheduling session's UID to the plugin's state
	// in it (ForSession); guarded by sessionsMu.
	sessionsMu sync.Mutex
	sessions   map[string]*Session
}

// NewRuntime returns a Runtime whose fabric the caller feeds (UpsertNode,
// UpsertCNR, ...). cfg selects resources and the S1 node label.
func NewRuntime(cfg topology.Config) *Runtime {
	cfg = cfg.WithDefaults()
	return &Runtime{
		Fabric:   topology.NewCache(cfg),
		Ledger:   ledger.New(),
		external: true,
		nodes:    map[string]*v1.Node{},
		cfg:      cfg,
		sessions: map[string]*Session{},
	}
}

// addSession registers the plugin's state of an open session.
func (rt *Runtime) addSession(uid string, s *Session) {
	rt.sessionsMu.Lock()
	defer rt.sessionsMu.Unlock()
	rt.sessions[uid] = s
}

// Carried returns what an action keeps across sessions under key, in the
// runtime that outlives them: the value made by mk the first time the key
// is asked for, the same value every time after. The action owns the
// value and must check, each session, that what it kept still holds.
func (s *Session) Carried(key any, mk func() any) any {
	rt := s.rt
	rt.sessionsMu.Lock()
	defer rt.sessionsMu.Unlock()
	if v, ok := rt.carried[key]; ok {
		return v
	}
	if rt.carried == nil {
		rt.carried = map[any]any{}
	}
	v := mk()
	rt.carried[key] = v
	return v
}

// session returns the plugin's state in the session, or nil.
func (rt *Runtime) session(uid string) *Session {
	rt.sessionsMu.Lock()
	defer rt.sessionsMu.Unlock()
	return rt.sessions[uid]
}

// removeSession forgets a closed session and returns its state.
func (rt *Runtime) removeSession(uid string) *Session {
	rt.sessionsMu.Lock()
	defer rt.sessionsMu.Unlock()
	s := rt.sessions[uid]
	delete(rt.sessions, uid)
	return s
}

// informerSyncTimeout bounds the wait for the KCNR cache at start-up; nodes
// whose KCNR has not arrived are topology-unknown until it does.
const informerSyncTimeout = 30 * time.Second

// ensureRuntime returns the installed runtime, creating the production one on
// first use: a KCNR informer built with the katalyst clientset from the
// session's client config, and an event recorder on its kube client. When
// Volcano reloads a conf whose rdma-topology arguments change the topology
// configuration, the production runtime is rebuilt (its informer stopped;
// the new ledger is restored from the pods' annotations and the KCNRs by
// the next reconcile). A runtime installed with SetRuntime is kept as is.
//
// The informer is started, and its first sync awaited, outside the lock, so
// other callers (ForSession, CurrentRuntime) never wait on the API server.
func ensureRuntime(ssn *framework.Session, args *Args) *Runtime {
	cfg := args.TopologyConfig().WithDefaults()
	runtimeMu.Lock()
	old := current
	if old != nil && (old.external || old.cfg == cfg) {
		runtimeMu.Unlock()
		return old
	}
	runtimeMu.Unlock()

	rt := NewRuntime(cfg)
	rt.external = false
	if c := ssn.ClientConfig(); c != nil {
		if err := rt.startInformer(c); err != nil {
			klog.ErrorS(err, "Cannot watch CustomNodeResources; RDMA nodes are topology-unknown")
		}
		if cfg.S1Source == topology.S1FromHyperNode {
			if err := rt.startHyperNodeInformer(c); err != nil {
				klog.ErrorS(err, "Cannot watch HyperNodes; every node shares the default S1")
			}
		}
	}
	if kc := ssn.KubeClient(); kc != nil {
		b := record.NewBroadcaster()
		b.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: kc.CoreV1().Events("")})
		rt.recorder = b.NewRecorder(scheme.Scheme, v1.EventSource{Component: "vc-scheduler-" + PluginName})
	}

	runtimeMu.Lock()
	defer runtimeMu.Unlock()
	if current != old {
		// Installed meanwhile (SetRuntime, or a concurrent first session):
		// keep that one.
		rt.Stop()
		return current
	}
	if old != nil {
		klog.InfoS("rdma-topology arguments changed; rebuilding the topology runtime", "old", fmt.Sprintf("%+v", old.cfg), "new", fmt.Sprintf("%+v", cfg))
		old.Stop()
	}
	current = rt
	return rt
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
	factory := katalystinformers.NewSharedInformerFactory(client, 0)
	inf := factory.Node().V1alpha1().CustomNodeResources().Informer()
	_, err = inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj interface{}) { rt.upsertCNR(obj) },
		UpdateFunc: func(_, obj interface{}) { rt.upsertCNR(obj) },
		DeleteFunc: func(obj interface{}) {
			if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = t.Obj
			}
			if cnr, ok := obj.(*nodev1alpha1.CustomNodeResource); ok {
				rt.Fabric.DeleteCNR(cnr.Name)
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
	observeSynced(informerCNR, inf.HasSynced, rt.stop)
	ctx, cancel := context.WithTimeout(context.Background(), informerSyncTimeout)
	defer cancel()
	if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		klog.InfoS("CustomNodeResource cache not synced yet; continuing", "timeout", informerSyncTimeout)
	}
	klog.InfoS("Watching CustomNodeResources for RDMA topology")
	return nil
}

func (rt *Runtime) upsertCNR(obj interface{}) {
	if cnr, ok := obj.(*nodev1alpha1.CustomNodeResource); ok {
		rt.Fabric.UpsertCNR(cnr)
	}
}

// syncNodes feeds the session's Node objects into the fabric; unchanged
// objects (same pointer from the scheduler cache) are skipped. When the
// fabric changed since the last sync (a Node here, or a KCNR from the
// informer or the caller), its topology problems are reported: one Warning
// Event per node and reason code on the node's KCNR, not repeated while the
// same problems persist, and the gauge rdmatopo_topology_unknown_nics.
func (rt *Runtime) syncNodes(ssn *framework.Session) {
	runtimeMu.Lock()
	defer runtimeMu.Unlock()
	if rt.nodes == nil {
		rt.nodes = map[string]*v1.Node{}
	}
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
// LimitNodes); the lister tells the two apart. Callers hold runtimeMu.
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

// The one process-wide registry: the installed runtime, which owns
// everything else (fabric, ledger, open sessions, holds, adoption memory).
// Volcano v1.10 builds plugins and actions per session and gives them no
// shared context, so this pointer is how sessions find the state that
// outlives them.
var (
	runtimeMu sync.Mutex
	// current is the installed runtime; nil until the first session or
	// SetRuntime.
	current *Runtime
)

// SetRuntime installs rt as the process-wide runtime (nil uninstalls it, so
// the next session starts from nothing, as after a scheduler restart).
func SetRuntime(rt *Runtime) {
	runtimeMu.Lock()
	defer runtimeMu.Unlock()
	current = rt
}

// CurrentRuntime returns the installed runtime, or nil.
func CurrentRuntime() *Runtime {
	runtimeMu.Lock()
	defer runtimeMu.Unlock()
	return current
}
