package rdmatopology

// The claims outlive the leader: they are written to a ConfigMap in the
// scheduler's namespace when they change, and a new leader reads them back
// before its first session plans anything. Without that, the new leader's
// first topology-allocate knows no claim, and a younger gang of a waiting
// hard gang's priority takes the room the older one was kept (the claims
// are named again only by topology-preempt, which runs after it).
//
// The ConfigMap, not the claiming gang's PodGroup, holds them: users who may
// write their PodGroups must not be able to claim a room by writing one, and
// the scheduler's own PodGroup writes (Volcano's, when a status changes)
// would race with a second writer of the same object. A claim read back
// applies only while its gang still waits in the session (as every claim
// does), and topology-preempt renews or drops it in the first session.

import (
	"bytes"
	"context"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"
	"k8s.io/klog/v2"

	"github.com/rdmatopo/rdmatopo/core/preemption"
)

// ClaimsConfigMap is the name of the ConfigMap the claims are kept in, in
// the scheduler's leader-election namespace (volcano-system by default),
// under one key per scheduler (ClaimsKey).
const ClaimsConfigMap = "rdmatopo-claims"

// ClaimsKey is the ConfigMap key of the claims of the scheduler whose
// leader-election lease is named lease.
func ClaimsKey(lease string) string { return lease + ".json" }

// claimsIOTimeout bounds one read or write of the ConfigMap.
const claimsIOTimeout = 10 * time.Second

// WithClaimsStore keeps the claims in the ClaimsConfigMap of namespace,
// under ClaimsKey(lease), on the session's kube client: read back when the
// runtime is built, written when they change. Without it (the simulator,
// tests) claims live only in memory.
func WithClaimsStore(namespace, lease string) Option {
	return func(rt *Runtime) {
		if namespace != "" && lease != "" {
			rt.claimsStore = &claimsStore{namespace: namespace, key: ClaimsKey(lease)}
		}
	}
}

// claimsStore writes the runtime's claims to the ConfigMap and reads them
// back.
type claimsStore struct {
	namespace, key string

	// mu guards what follows: the client, the bytes last read or handed
	// to the writer, the writer's next record, its wake-up channel and the
	// stop channel it runs until, and whether its last write failed.
	mu       sync.Mutex
	client   kubernetes.Interface
	last     []byte
	next     []byte
	wake     chan struct{}
	loopStop <-chan struct{}
	failing  bool
}

// load reads the claims back from the ConfigMap with client, renewed at
// now, and starts a writer that runs until stop closes (one per runtime
// build). A missing ConfigMap is no claim;
// an unreadable one is logged, naming the object and key, and the claims
// start empty (topology-preempt names them again).
func (cs *claimsStore) load(client kubernetes.Interface, stop <-chan struct{}, now time.Time) []*preemption.Claim {
	cs.mu.Lock()
	cs.client = client
	if cs.loopStop != stop {
		cs.loopStop, cs.wake, cs.next = stop, make(chan struct{}, 1), nil
		go cs.writeLoop(stop, cs.wake)
	}
	cs.mu.Unlock()

	ctx, cancel := context.WithTimeout(context.Background(), claimsIOTimeout)
	defer cancel()
	ref := klog.KRef(cs.namespace, ClaimsConfigMap)
	cm, err := client.CoreV1().ConfigMaps(cs.namespace).Get(ctx, ClaimsConfigMap, metav1.GetOptions{})
	empty, _ := preemption.EncodeClaims(nil)
	switch {
	case apierrors.IsNotFound(err):
		cs.setLast(empty)
		return nil
	case err != nil:
		klog.ErrorS(err, "Cannot read the claims of waiting hard gangs; they are named again by topology-preempt", "configMap", ref)
		return nil
	}
	data, ok := cm.Data[cs.key]
	if !ok {
		cs.setLast(empty)
		return nil
	}
	claims, err := preemption.DecodeClaims([]byte(data))
	if err != nil {
		klog.ErrorS(err, "Ignoring unreadable claims of waiting hard gangs; they are named again by topology-preempt", "configMap", ref, "key", cs.key)
		return nil
	}
	for _, c := range claims {
		c.Renewed = metav1.NewTime(now)
	}
	cs.setLast([]byte(data))
	klog.InfoS("Read back the claims of waiting hard gangs", "configMap", ref, "key", cs.key, "claims", len(claims))
	return claims
}

func (cs *claimsStore) setLast(b []byte) {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	cs.last = b
}

// save hands the writer the claims when they differ from those last read
// or handed to it: no write when nothing changed.
func (cs *claimsStore) save(claims []*preemption.Claim) {
	data, err := preemption.EncodeClaims(claims)
	if err != nil {
		klog.ErrorS(err, "Cannot encode the claims of waiting hard gangs")
		return
	}
	cs.mu.Lock()
	defer cs.mu.Unlock()
	if cs.wake == nil || bytes.Equal(data, cs.last) {
		return
	}
	cs.last, cs.next = data, data
	select {
	case cs.wake <- struct{}{}:
	default:
	}
}

// writeLoop writes the latest record handed to it until stop closes. A
// failed write is logged and the record is written again with the next
// change, or when the next session hands it over again (save forgets it
// was handed).
func (cs *claimsStore) writeLoop(stop <-chan struct{}, wake <-chan struct{}) {
	for {
		select {
		case <-stop:
			return
		case <-wake:
		}
		cs.mu.Lock()
		data, client := cs.next, cs.client
		cs.next = nil
		cs.mu.Unlock()
		if data == nil || client == nil {
			continue
		}
		err := cs.write(client, data)
		cs.mu.Lock()
		wasFailing := cs.failing
		cs.failing = err != nil
		if err != nil && bytes.Equal(cs.last, data) {
			cs.last = nil
		}
		cs.mu.Unlock()
		ref := klog.KRef(cs.namespace, ClaimsConfigMap)
		switch {
		case err != nil && !wasFailing:
			klog.ErrorS(err, "Cannot keep the claims of waiting hard gangs; a new leader would not know them (retried every session)", "configMap", ref, "key", cs.key)
		case err != nil:
			klog.V(3).InfoS("Still cannot keep the claims of waiting hard gangs", "configMap", ref, "key", cs.key, "err", err)
		case wasFailing:
			klog.InfoS("Kept the claims of waiting hard gangs again", "configMap", ref, "key", cs.key)
		}
	}
}

// write puts data under the store's key, creating the ConfigMap if there
// is none, and leaves the other keys as they are.
func (cs *claimsStore) write(client kubernetes.Interface, data []byte) error {
	cms := client.CoreV1().ConfigMaps(cs.namespace)
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		ctx, cancel := context.WithTimeout(context.Background(), claimsIOTimeout)
		defer cancel()
		cm, err := cms.Get(ctx, ClaimsConfigMap, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			_, err = cms.Create(ctx, &v1.ConfigMap{
				ObjectMeta: metav1.ObjectMeta{
					Name:      ClaimsConfigMap,
					Namespace: cs.namespace,
					Labels:    map[string]string{"app.kubernetes.io/name": "rdmatopo", "app.kubernetes.io/component": "scheduler"},
				},
				Data: map[string]string{cs.key: string(data)},
			}, metav1.CreateOptions{})
			if apierrors.IsAlreadyExists(err) {
				return apierrors.NewConflict(v1.Resource("configmaps"), ClaimsConfigMap, err)
			}
			return err
		}
		if err != nil {
			return err
		}
		if cm.Data[cs.key] == string(data) {
			return nil
		}
		cm = cm.DeepCopy()
		if cm.Data == nil {
			cm.Data = map[string]string{}
		}
		cm.Data[cs.key] = string(data)
		_, err = cms.Update(ctx, cm, metav1.UpdateOptions{})
		return err
	})
}
