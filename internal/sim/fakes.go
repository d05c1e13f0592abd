package sim

import (
	"fmt"
	"reflect"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"volcano.sh/volcano/pkg/scheduler/api"
)

// BindHook decides whether the bind of pod to node succeeds; a non-nil
// error fails it (as an API server error would), and the pod goes back to
// pending. It sees the pod as the scheduler hands it to the binder, with
// the annotations plugins set at bind time. It must not modify the pod.
type BindHook func(pod *corev1.Pod, node string) error

// BindRecord is one bind the scheduler asked for.
type BindRecord struct {
	// Pod is a copy of the pod at bind time (annotations included).
	Pod *corev1.Pod
	// Node is the target node.
	Node string
	// Err is the hook's error (nil: bound).
	Err error
}

// recordingBinder is the cache's Binder: it records every bind and asks
// the hook whether it succeeds. Safe for concurrent use.
type recordingBinder struct {
	mu      sync.Mutex
	hook    BindHook
	records []BindRecord
}

// Bind implements cache.Binder.
func (b *recordingBinder) Bind(_ kubernetes.Interface, tasks []*api.TaskInfo) map[api.TaskID]string {
	b.mu.Lock()
	defer b.mu.Unlock()
	var failed map[api.TaskID]string
	for _, t := range tasks {
		rec := BindRecord{Pod: t.Pod.DeepCopy(), Node: t.NodeName}
		if b.hook != nil {
			rec.Err = b.hook(rec.Pod, t.NodeName)
		}
		if rec.Err != nil {
			if failed == nil {
				failed = map[api.TaskID]string{}
			}
			failed[t.UID] = rec.Err.Error()
		}
		b.records = append(b.records, rec)
	}
	return failed
}

// take returns and clears the binds recorded so far.
func (b *recordingBinder) take() []BindRecord {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := b.records
	b.records = nil
	return out
}

// recordingEvictor is the cache's Evictor: it records evictions. Volcano
// calls it from a goroutine; the simulator reads the cache instead.
type recordingEvictor struct {
	mu      sync.Mutex
	reasons map[string]string // ns/name -> reason
}

// Evict implements cache.Evictor.
func (e *recordingEvictor) Evict(p *corev1.Pod, reason string) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.reasons == nil {
		e.reasons = map[string]string{}
	}
	e.reasons[p.Namespace+"/"+p.Name] = reason
	return nil
}

// statusRecorder is the cache's StatusUpdater: it keeps the last PodGroup
// and pod status the scheduler wrote, so the simulator can write them back
// as the API server would. Safe for concurrent use (Volcano updates jobs
// from 16 goroutines).
type statusRecorder struct {
	mu        sync.Mutex
	podGroups map[api.JobID]*api.PodGroup
	pods      map[string]*corev1.Pod
}

// UpdatePodStatus implements cache.StatusUpdater.
func (s *statusRecorder) UpdatePodStatus(pod *corev1.Pod) (*corev1.Pod, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.pods == nil {
		s.pods = map[string]*corev1.Pod{}
	}
	s.pods[pod.Namespace+"/"+pod.Name] = pod.DeepCopy()
	return pod, nil
}

// UpdatePodGroup implements cache.StatusUpdater. It returns pg itself (the
// fake clients return nothing, which would leave the job without a
// PodGroup).
func (s *statusRecorder) UpdatePodGroup(pg *api.PodGroup) (*api.PodGroup, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.podGroups == nil {
		s.podGroups = map[api.JobID]*api.PodGroup{}
	}
	id := api.JobID(pg.Namespace + "/" + pg.Name)
	s.podGroups[id] = &api.PodGroup{PodGroup: *pg.PodGroup.DeepCopy(), Version: pg.Version}
	return pg, nil
}

// UpdateQueueStatus implements cache.StatusUpdater; queue status is not
// simulated (plugins recompute it every session).
func (s *statusRecorder) UpdateQueueStatus(*api.QueueInfo) error { return nil }

// take returns and clears what was recorded.
func (s *statusRecorder) take() (map[api.JobID]*api.PodGroup, map[string]*corev1.Pod) {
	s.mu.Lock()
	defer s.mu.Unlock()
	pgs, pods := s.podGroups, s.pods
	s.podGroups, s.pods = nil, nil
	return pgs, pods
}

// Event is one Kubernetes Event the scheduler emitted.
type Event struct {
	// Cycle is the scheduling cycle (1-based) that emitted it.
	Cycle int
	// Kind, Namespace and Name identify the object.
	Kind      string
	Namespace string
	Name      string
	// Type is Normal or Warning.
	Type    string
	Reason  string
	Message string
}

// eventRecorder implements record.EventRecorder by keeping every event
// (never blocking, unlike record.FakeRecorder). Safe for concurrent use.
type eventRecorder struct {
	mu     sync.Mutex
	cycle  int
	events []Event
}

// Event implements record.EventRecorder.
func (r *eventRecorder) Event(obj runtime.Object, eventType, reason, message string) {
	kind, ns, name := identify(obj)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, Event{Cycle: r.cycle, Kind: kind, Namespace: ns, Name: name,
		Type: eventType, Reason: reason, Message: message})
}

// Eventf implements record.EventRecorder.
func (r *eventRecorder) Eventf(obj runtime.Object, eventType, reason, format string, args ...interface{}) {
	r.Event(obj, eventType, reason, fmt.Sprintf(format, args...))
}

// AnnotatedEventf implements record.EventRecorder.
func (r *eventRecorder) AnnotatedEventf(obj runtime.Object, _ map[string]string, eventType, reason, format string, args ...interface{}) {
	r.Eventf(obj, eventType, reason, format, args...)
}

// setCycle stamps later events with cycle.
func (r *eventRecorder) setCycle(cycle int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.cycle = cycle
}

// all returns a copy of every event so far.
func (r *eventRecorder) all() []Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Event(nil), r.events...)
}

// identify names an event's object.
func identify(obj runtime.Object) (kind, namespace, name string) {
	if ref, ok := obj.(*corev1.ObjectReference); ok {
		return ref.Kind, ref.Namespace, ref.Name
	}
	kind = obj.GetObjectKind().GroupVersionKind().Kind
	if kind == "" {
		t := reflect.TypeOf(obj)
		for t.Kind() == reflect.Ptr {
			t = t.Elem()
		}
		kind = t.Name()
	}
	if m, err := meta.Accessor(obj); err == nil {
		namespace, name = m.GetNamespace(), m.GetName()
	}
	return kind, namespace, name
}
