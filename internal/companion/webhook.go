package companion

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"

	"github.com/rdmatopo/rdmatopo/core/ledger"
	"github.com/rdmatopo/rdmatopo/core/placement"
	"github.com/rdmatopo/rdmatopo/core/topology"
)

// Event reasons the webhook records on pods.
const (
	// EventNICsChosen: the webhook chose the pod's NICs at bind.
	EventNICsChosen = "NICsChosen"
	// EventTierExceeded: the node the scheduler chose puts the pod's hard
	// gang beyond its highest tier.
	EventTierExceeded = "TierExceeded"
	// EventNoNICFit: no zone of the target node holds the pod; the node
	// agent decides.
	EventNoNICFit = "NoNICFit"
)

// Cluster is what a replica's informers know, as the webhook reads it.
type Cluster interface {
	View
	// Fabric is the current fabric.
	Fabric() *topology.Fabric
	// Pod returns a pod by namespace and name.
	Pod(namespace, name string) (*corev1.Pod, bool)
	// GangPods lists the pods of a gang (GangKey).
	GangPods(key string) []*corev1.Pod
}

// Ownership says whether this replica answers binds (Owner).
type Ownership interface {
	// Answering reports whether this replica may choose NICs now, or why not.
	Answering() (bool, string)
	// Leader is the forwarding address of the owner last seen ("" when
	// none), and whether it is this replica.
	Leader() (address string, self bool)
}

// Webhook answers AdmissionReviews of pods/binding CREATE.
type Webhook struct {
	Chooser *Chooser
	// Book is the owner's book of the NICs it handed out.
	Book     *Book
	Cluster  Cluster
	Metrics  *Metrics
	Recorder record.EventRecorder
	// Client reads a pod the informer does not hold yet.
	Client kubernetes.Interface
	// RefuseHardTier makes the webhook refuse a bind that puts a hard
	// gang beyond its highest tier (default: allow it, with an Event).
	RefuseHardTier bool
	// RefuseNoFit makes the webhook refuse a bind to a node whose RDMA
	// topology it knows but where no NUMA zone (or zones, as the node's
	// policy allows) holds the pod (default: allow it unannotated, with
	// an Event; the node agent decides).
	RefuseNoFit bool
	// Owner says whether this replica answers; nil: it always does.
	Owner Ownership
	// Forward sends a bind to the owner at an address; nil: binds this
	// replica does not answer go on unassisted.
	Forward func(ctx context.Context, address string, req *admissionv1.AdmissionRequest) (*admissionv1.AdmissionResponse, error)
}

// ServeHTTP implements http.Handler for admission.k8s.io/v1 reviews.
func (w *Webhook) ServeHTTP(rw http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(io.LimitReader(r.Body, 4<<20))
	if err != nil {
		http.Error(rw, err.Error(), http.StatusBadRequest)
		return
	}
	review := &admissionv1.AdmissionReview{}
	if err := json.Unmarshal(body, review); err != nil || review.Request == nil {
		http.Error(rw, fmt.Sprintf("not an AdmissionReview: %v", err), http.StatusBadRequest)
		return
	}
	resp := w.admit(r.Context(), review.Request, r.Header.Get(ForwardedHeader) != "")
	resp.UID = review.Request.UID
	out := admissionv1.AdmissionReview{TypeMeta: review.TypeMeta, Response: resp}
	rw.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(rw).Encode(out)
}

// allow is an admission that changes nothing.
func allow() *admissionv1.AdmissionResponse { return &admissionv1.AdmissionResponse{Allowed: true} }

// Admit answers one request from the API server: for a Binding of a pod
// that requests RDMA and carries no NIC choice yet, the owner of the book
// chooses the NICs on the target node, books them and returns a JSON patch
// adding the annotations to the Binding (kube-apiserver merges them into
// the pod); another replica forwards the request to the owner and returns
// its answer. Anything else is allowed unchanged; so is an RDMA bind no
// owner can answer (counted by reason) or the owner cannot help (counted,
// logged, and for a pod that does not fit, an Event).
func (w *Webhook) Admit(ctx context.Context, req *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
	return w.admit(ctx, req, false)
}

// admit is Admit; forwarded: another replica sent the request.
func (w *Webhook) admit(ctx context.Context, req *admissionv1.AdmissionRequest, forwarded bool) *admissionv1.AdmissionResponse {
	if req.Operation != admissionv1.Create || req.SubResource != "binding" || req.Resource.Resource != "pods" {
		return allow()
	}
	b := &corev1.Binding{}
	if err := json.Unmarshal(req.Object.Raw, b); err != nil {
		klog.ErrorS(err, "Cannot read the Binding of an admission request", "pod", klog.KRef(req.Namespace, req.Name))
		return allow()
	}
	ns, name := req.Namespace, req.Name
	if b.Namespace != "" {
		ns = b.Namespace
	}
	if b.Name != "" {
		name = b.Name
	}
	if b.Annotations[ledger.AnnotationNICs] != "" {
		// rdmatopo's own scheduler placed it; its binder sent the NICs.
		if w.Metrics != nil {
			w.Metrics.Binds.WithLabelValues(ResultAnnotated).Inc()
		}
		return allow()
	}
	pod, ok := w.Cluster.Pod(ns, name)
	if !ok && w.Client != nil {
		p, err := w.Client.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
		if err == nil {
			pod, ok = p, true
		}
	}
	if !ok || !w.Chooser.RequestsRDMA(pod) {
		return allow()
	}
	start := time.Now()
	if answering, why := w.answering(); !answering {
		return w.notOwner(ctx, req, pod, why, forwarded)
	}
	resp, result := w.admitRDMA(ctx, pod, b.Target.Name, b.Annotations)
	if resp.Patch != nil || !resp.Allowed {
		// The answer names NICs (or refuses): it stands only if this
		// replica still holds the book now, as it is sent.
		if answering, why := w.answering(); !answering {
			w.Book.Forget(string(pod.UID))
			klog.V(2).InfoS("Lost the NIC book while choosing; the bind goes on without NICs", "pod", klog.KObj(pod), "reason", why)
			return w.unassisted(why)
		}
	}
	if w.Metrics != nil {
		w.Metrics.Binds.WithLabelValues(result).Inc()
		w.Metrics.Latency.Observe(time.Since(start).Seconds())
	}
	return resp
}

func (w *Webhook) answering() (bool, string) {
	if w.Owner == nil {
		return true, ""
	}
	return w.Owner.Answering()
}

// notOwner answers an RDMA bind this replica may not choose for: it
// forwards a request from the API server to the owner and returns the
// owner's answer; a forwarded request, or one no owner can take, goes on
// unassisted.
func (w *Webhook) notOwner(ctx context.Context, req *admissionv1.AdmissionRequest, pod *corev1.Pod, why string, forwarded bool) *admissionv1.AdmissionResponse {
	if forwarded || w.Owner == nil || w.Forward == nil {
		return w.unassisted(why)
	}
	address, self := w.Owner.Leader()
	switch {
	case self:
		return w.unassisted(why)
	case address == "":
		return w.unassisted(ReasonNoOwner)
	}
	resp, err := w.Forward(ctx, address, req)
	if err != nil {
		klog.V(2).InfoS("Cannot forward the bind to the owner of the NIC book; it goes on without NICs", "pod", klog.KObj(pod), "owner", address, "err", err)
		return w.unassisted(ReasonOwnerUnreachable)
	}
	if w.Metrics != nil {
		w.Metrics.Forwarded.Inc()
	}
	return resp
}

// unassisted lets an RDMA bind through without NICs, counted by reason.
func (w *Webhook) unassisted(reason string) *admissionv1.AdmissionResponse {
	if w.Metrics != nil {
		w.Metrics.UnassistedAnswers.WithLabelValues(reason).Inc()
	}
	return allow()
}

// admitRDMA chooses and books an RDMA pod's NICs on node (this replica
// owns the book).
func (w *Webhook) admitRDMA(ctx context.Context, pod *corev1.Pod, node string, have map[string]string) (*admissionv1.AdmissionResponse, string) {
	f := w.Cluster.Fabric()
	key := GangKey(pod)
	var gang []*corev1.Pod
	if key != "" {
		gang = w.Cluster.GangPods(key)
	}
	var choice *Choice
	var noFit string
	booked, err := w.Book.Reserve(node, string(pod.UID), w.Cluster, func(onNode []*corev1.Pod, bk Bookings) (*Booking, error) {
		c, why, err := w.Chooser.Choose(Request{Pod: pod, Node: node, Fabric: f, OnNode: onNode, Gang: gang, Bookings: bk, Booked: w.Book.Booked})
		if err != nil || c == nil {
			noFit = why
			return nil, err
		}
		choice = c
		return &Booking{Namespace: pod.Namespace, Name: pod.Name, Job: key, Zones: c.Assignment.Zones}, nil
	})
	if err != nil {
		klog.ErrorS(err, "Cannot choose NICs at bind; the bind goes on without them", "pod", klog.KObj(pod), "node", node)
		return allow(), ResultError
	}
	if booked == nil {
		if _, known := f.Node(node); known && w.RefuseNoFit {
			msg := fmt.Sprintf("no NUMA zone of node %s holds the pod's RDMA request (%s)", node, noFit)
			w.event(pod, corev1.EventTypeWarning, EventNoNICFit, "%s; bind refused", msg)
			return refuse(msg), ResultRefused
		}
		w.event(pod, corev1.EventTypeWarning, EventNoNICFit, "no NUMA zone of node %s holds the pod's RDMA request (%s); the node agent chooses its NICs", node, noFit)
		return allow(), ResultNoFit
	}
	if choice == nil {
		// The same bind, retried: the booking stands.
		choice = &Choice{Assignment: assignmentOf(node, string(pod.UID), *booked)}
	} else if choice.Hard && choice.Tier > choice.HighestTier {
		if w.Metrics != nil {
			w.Metrics.HardTierBroken.Inc()
		}
		msg := fmt.Sprintf("node %s puts gang %s at tier %s, beyond its hard highest tier %s", node, key, choice.Tier, choice.HighestTier)
		w.event(pod, corev1.EventTypeWarning, EventTierExceeded, "%s", msg)
		if w.RefuseHardTier {
			w.Book.Forget(string(pod.UID))
			return refuse(msg), ResultRefused
		}
	}
	ann := choice.Annotations(f)
	patch, err := annotationPatch(have, ann)
	if err != nil {
		w.Book.Forget(string(pod.UID))
		klog.ErrorS(err, "Cannot build the Binding patch", "pod", klog.KObj(pod))
		return allow(), ResultError
	}
	klog.V(3).InfoS("NICs chosen at bind", "pod", klog.KObj(pod), "node", node, "nics", ann[ledger.AnnotationNICs], "numa", ann[ledger.AnnotationNUMA])
	w.event(pod, corev1.EventTypeNormal, EventNICsChosen, "NICs %s (NUMA %s) on node %s", ann[ledger.AnnotationNICs], ann[ledger.AnnotationNUMA], node)
	pt := admissionv1.PatchTypeJSONPatch
	return &admissionv1.AdmissionResponse{Allowed: true, PatchType: &pt, Patch: patch}, ResultAssisted
}

// refuse is an admission that refuses the bind.
func refuse(msg string) *admissionv1.AdmissionResponse {
	return &admissionv1.AdmissionResponse{Allowed: false, Result: &metav1.Status{
		Status: metav1.StatusFailure, Reason: metav1.StatusReasonForbidden, Code: http.StatusForbidden, Message: "rdmatopo: " + msg,
	}}
}

// assignmentOf turns a booking back into an assignment.
func assignmentOf(node, uid string, x Booking) placement.Assignment {
	return placement.Assignment{PodUID: uid, Node: node, Zones: x.Zones}
}

func (w *Webhook) event(pod *corev1.Pod, typ, reason, format string, args ...any) {
	if w.Recorder != nil {
		w.Recorder.Eventf(pod, typ, reason, format, args...)
	}
}

// annotationPatch is a JSON patch adding the annotations to an object whose
// metadata.annotations are have (nil: absent).
func annotationPatch(have, add map[string]string) ([]byte, error) {
	type op struct {
		Op    string `json:"op"`
		Path  string `json:"path"`
		Value any    `json:"value"`
	}
	if have == nil {
		return json.Marshal([]op{{Op: "add", Path: "/metadata/annotations", Value: add}})
	}
	keys := make([]string, 0, len(add))
	for k := range add {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	ops := make([]op, 0, len(keys))
	for _, k := range keys {
		path := "/metadata/annotations/" + strings.NewReplacer("~", "~0", "/", "~1").Replace(k)
		ops = append(ops, op{Op: "add", Path: path, Value: add[k]})
	}
	return json.Marshal(ops)
}
