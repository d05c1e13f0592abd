package rdmatopology

// Volcano ≥ 1.12's PodGroup fields spec.networkTopology and
// spec.subGroupPolicy, which the scheduler's Volcano v1.10 types do not
// carry: a PodGroup decoded into them loses both. The scheduler reads them
// raw, from its own PodGroup informer beside Volcano's cache, whose store
// keeps only the identity and those two fields of each PodGroup.
//
// Volcano v1.10's scheduler writes a PodGroup back with a full Update of its
// own typed object, which drops both fields on an API server whose CRD
// carries them. The informer notices: when a PodGroup loses them in a write
// by the scheduler itself (the newest managedFields entry is this process's
// field manager), the last values are kept for placement and written back.

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/retry"
	"k8s.io/klog/v2"
	"volcano.sh/volcano/pkg/scheduler/api"

	"github.com/rdmatopo/rdmatopo/core/placement"
)

// PodGroupResource is Volcano's PodGroup resource, read with a dynamic
// client for the fields v1.10's types lack.
var PodGroupResource = schema.GroupVersionResource{Group: "scheduling.volcano.sh", Version: "v1beta1", Resource: "podgroups"}

// informerPodGroup is the rdmatopo_informer_synced label of the PodGroup
// informer.
const informerPodGroup = "podgroups"

// podGroupTopology is a PodGroup as the native informer's store keeps it:
// its identity, the raw JSON of its native topology fields (nil: absent)
// and the field manager of its newest write.
type podGroupTopology struct {
	metav1.TypeMeta
	metav1.ObjectMeta
	// networkTopology and subGroupPolicy are the fields as written.
	networkTopology, subGroupPolicy json.RawMessage
	// lastManager is the manager of the newest managedFields entry.
	lastManager string
}

// DeepCopyObject copies the trimmed PodGroup (its raw fields are never
// modified in place, so they are shared).
func (p *podGroupTopology) DeepCopyObject() runtime.Object {
	c := *p
	c.ObjectMeta = *p.ObjectMeta.DeepCopy()
	return &c
}

// hasNative reports whether the PodGroup carries a native topology field.
func (p *podGroupTopology) hasNative() bool {
	return p.networkTopology != nil || p.subGroupPolicy != nil
}

// trimPodGroup is the PodGroup informer's transform: it keeps the
// PodGroup's name, namespace, UID and resourceVersion, its native topology
// fields raw, and the manager of its newest write.
func trimPodGroup(obj interface{}) (interface{}, error) {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return obj, nil
	}
	out := &podGroupTopology{}
	out.Name, out.Namespace, out.UID, out.ResourceVersion = u.GetName(), u.GetNamespace(), u.GetUID(), u.GetResourceVersion()
	raw := func(field string) json.RawMessage {
		v, found, err := unstructured.NestedFieldNoCopy(u.Object, "spec", field)
		if err != nil || !found || v == nil {
			return nil
		}
		data, err := json.Marshal(v)
		if err != nil {
			return nil
		}
		return data
	}
	out.networkTopology, out.subGroupPolicy = raw("networkTopology"), raw("subGroupPolicy")
	var newest time.Time
	for _, m := range u.GetManagedFields() {
		if m.Time != nil && !m.Time.Time.Before(newest) {
			newest, out.lastManager = m.Time.Time, m.Manager
		}
	}
	return out, nil
}

// nativeEntry is what the store knows of one PodGroup.
type nativeEntry struct {
	uid types.UID
	// topology is the decoded fields.
	topology *placement.NativeTopology
	// networkTopology and subGroupPolicy are the raw fields, to write
	// back after the scheduler's own write dropped them.
	networkTopology, subGroupPolicy json.RawMessage
}

// nativeTopologies holds the native topology fields of every PodGroup
// that has any, by "namespace/name". The production runtime fills it from
// its PodGroup informer; the simulator and tests call
// SetPodGroupTopology.
type nativeTopologies struct {
	mu     sync.Mutex
	byName map[string]nativeEntry
}

// SetPodGroupTopology records the native topology fields of PodGroup
// namespace/name of that UID (nil forgets them).
func (rt *Runtime) SetPodGroupTopology(namespace, name string, uid types.UID, n *placement.NativeTopology) {
	rt.native.set(namespace+"/"+name, nativeEntry{uid: uid, topology: n})
}

// set records (or, with no topology, forgets) a PodGroup's entry.
func (s *nativeTopologies) set(key string, e nativeEntry) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !e.topology.Set() {
		delete(s.byName, key)
		return
	}
	if s.byName == nil {
		s.byName = map[string]nativeEntry{}
	}
	s.byName[key] = e
}

// get returns the entry of PodGroup key.
func (s *nativeTopologies) get(key string) (nativeEntry, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.byName[key]
	return e, ok
}

// len counts the PodGroups with native fields.
func (s *nativeTopologies) len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.byName)
}

// nativeOf returns the native topology of the job's PodGroup (nil: none,
// or recorded for another PodGroup of the same name).
func (rt *Runtime) nativeOf(job *api.JobInfo) *placement.NativeTopology {
	if job.PodGroup == nil {
		return nil
	}
	e, ok := rt.native.get(job.PodGroup.Namespace + "/" + job.PodGroup.Name)
	if !ok || e.uid != "" && job.PodGroup.UID != "" && e.uid != job.PodGroup.UID {
		return nil
	}
	return e.topology
}

// GangContract reads the contract of PodGroup namespace/name (uid) as a
// session does: from its annotations, the native fields recorded for it
// and its pods (members), tiers mapped as this runtime reads S1s; for
// callers outside a session (the simulator's report and max-wait clock).
func (rt *Runtime) GangContract(namespace, name string, uid types.UID, minMember int32, group map[string]string, members []placement.MemberAnnotations) (placement.Contract, error) {
	var native *placement.NativeTopology
	if e, ok := rt.native.get(namespace + "/" + name); ok && (e.uid == "" || uid == "" || e.uid == uid) {
		native = e.topology
	}
	c, problems := placement.ReadGangContract(placement.ContractInput{Group: group, Native: native, MinMember: minMember,
		Tiers: rt.volcanoTiers(), Pods: members})
	return c, placement.ContractErr(problems)
}

// volcanoTiers maps Volcano's HyperNode tiers as this runtime reads S1s:
// the S1 tier of the plugin's arguments, the tier names of the HyperNodes
// the fabric was given.
func (rt *Runtime) volcanoTiers() placement.VolcanoTiers {
	return placement.VolcanoTiers{S1Tier: rt.cfg.S1HyperNodeTier, Names: rt.Fabric.HyperNodes().TierNames()}
}

// decodeEntry decodes a trimmed PodGroup's native fields.
func decodeEntry(p *podGroupTopology) nativeEntry {
	return nativeEntry{uid: p.UID, topology: placement.DecodeNativeTopology(p.networkTopology, p.subGroupPolicy),
		networkTopology: p.networkTopology, subGroupPolicy: p.subGroupPolicy}
}

// restoreRequest names a PodGroup whose native fields to write back.
type restoreRequest struct {
	namespace, name string
	uid             types.UID
}

// nativeWatcher applies the PodGroup informer's events to the store and
// writes back the fields the scheduler's own writes drop.
type nativeWatcher struct {
	store *nativeTopologies
	// self is this process's field manager.
	self    string
	restore chan restoreRequest
}

// update applies one added or updated PodGroup.
func (w *nativeWatcher) update(obj interface{}) {
	p, ok := obj.(*podGroupTopology)
	if !ok {
		return
	}
	key := p.Namespace + "/" + p.Name
	if !p.hasNative() {
		old, had := w.store.get(key)
		if had && old.uid == p.UID && (old.networkTopology != nil || old.subGroupPolicy != nil) {
			if p.lastManager == w.self {
				// Dropped by this scheduler's own Update of the
				// PodGroup (Volcano v1.10's types): keep and restore.
				select {
				case w.restore <- restoreRequest{namespace: p.Namespace, name: p.Name, uid: p.UID}:
				default:
					klog.InfoS("Restore queue full; the PodGroup's topology fields are kept for placement only", "podGroup", klog.KRef(p.Namespace, p.Name))
				}
				return
			}
		}
	}
	w.store.set(key, decodeEntry(p))
}

// remove forgets a deleted PodGroup.
func (w *nativeWatcher) remove(obj interface{}) {
	if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = t.Obj
	}
	if p, ok := obj.(*podGroupTopology); ok {
		w.store.set(p.Namespace+"/"+p.Name, nativeEntry{})
	}
}

// restoreLoop writes back the native fields of the PodGroups queued, until
// stop closes.
func (w *nativeWatcher) restoreLoop(client dynamic.Interface, stop <-chan struct{}) {
	for {
		select {
		case <-stop:
			return
		case r := <-w.restore:
			if err := w.restoreOne(client, r); err != nil {
				klog.ErrorS(err, "Cannot write back the PodGroup's topology fields; they are kept for placement", "podGroup", klog.KRef(r.namespace, r.name))
			}
		}
	}
}

// restoreOne writes the stored native fields back onto the PodGroup, if
// it is still the same PodGroup and still lacks them.
func (w *nativeWatcher) restoreOne(client dynamic.Interface, r restoreRequest) error {
	e, ok := w.store.get(r.namespace + "/" + r.name)
	if !ok || e.uid != r.uid {
		return nil
	}
	res := client.Resource(PodGroupResource).Namespace(r.namespace)
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		u, err := res.Get(ctx, r.name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		if err != nil {
			return err
		}
		if u.GetUID() != r.uid {
			return nil
		}
		changed := false
		for field, raw := range map[string]json.RawMessage{"networkTopology": e.networkTopology, "subGroupPolicy": e.subGroupPolicy} {
			if raw == nil {
				continue
			}
			if _, found, _ := unstructured.NestedFieldNoCopy(u.Object, "spec", field); found {
				continue
			}
			var v interface{}
			if err := utiljson.Unmarshal(raw, &v); err != nil { // integers as int64, as unstructured holds them
				return fmt.Errorf("spec.%s: %w", field, err)
			}
			if err := unstructured.SetNestedField(u.Object, v, "spec", field); err != nil {
				return fmt.Errorf("spec.%s: %w", field, err)
			}
			changed = true
		}
		if !changed {
			return nil
		}
		_, err = res.Update(ctx, u, metav1.UpdateOptions{})
		if err == nil {
			klog.V(3).InfoS("Wrote back the PodGroup's topology fields", "podGroup", klog.KRef(r.namespace, r.name))
		}
		return err
	})
}

// fieldManager is the field manager the API server records for writes
// made with cfg: the user agent up to its first "/".
func fieldManager(cfg *rest.Config) string {
	ua := cfg.UserAgent
	if ua == "" {
		ua = rest.DefaultKubernetesUserAgent()
	}
	m, _, _ := strings.Cut(ua, "/")
	return m
}

// startPodGroupInformer watches PodGroups through a dynamic client, keeping
// the native topology fields in rt.native. A cluster whose PodGroup CRD
// lacks the fields simply never shows them.
func (rt *Runtime) startPodGroupInformer(cfg *rest.Config) error {
	client, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return err
	}
	if rt.stop == nil {
		rt.stop = make(chan struct{})
	}
	factory := dynamicinformer.NewDynamicSharedInformerFactory(client, 0)
	inf := factory.ForResource(PodGroupResource).Informer()
	if err := inf.SetTransform(trimPodGroup); err != nil {
		return fmt.Errorf("PodGroup informer transform: %w", err)
	}
	w := &nativeWatcher{store: rt.native, self: fieldManager(cfg), restore: make(chan restoreRequest, 1024)}
	_, err = inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    w.update,
		UpdateFunc: func(_, obj interface{}) { w.update(obj) },
		DeleteFunc: w.remove,
	})
	if err != nil {
		return err
	}
	factory.Start(rt.stop)
	go w.restoreLoop(client, rt.stop)
	ctx, cancel := context.WithTimeout(context.Background(), informerSyncTimeout)
	defer cancel()
	if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		klog.InfoS("PodGroup topology cache not synced yet; continuing", "timeout", informerSyncTimeout)
	}
	observeSynced(informerPodGroup, inf.HasSynced, rt.stop)
	klog.InfoS("Watching PodGroups for spec.networkTopology and spec.subGroupPolicy", "fieldManager", w.self)
	return nil
}
