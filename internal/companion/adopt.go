package companion

import (
	"context"
	"encoding/json"
	"slices"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	"github.com/rdmatopo/rdmatopo/core/ledger"
	"github.com/rdmatopo/rdmatopo/core/topology"
)

// EventNICsAdopted: the pod's annotations were set to the NICs its KCNR
// lists (the node agent chose them, or chose others than the webhook).
const EventNICsAdopted = "NICsAdopted"

// adopt makes the KCNR the truth for every bound RDMA pod it lists, as the
// scheduler does: a pod whose rdmatopo.io annotations are missing (its
// bind went unassisted) or name other NICs than the KCNR lists gets the
// listed NICs, NUMA ids and leaves written on it, so the gang's next binds,
// explain and map see what the pod really holds. Unassisted binds are
// counted once per pod. numa_bind_result, katalyst's own input, is left
// alone.
func (c *Companion) adopt(ctx context.Context, f *topology.Fabric) {
	// Whether a pod requests RDMA is remembered by UID from pass to pass
	// (a pod's requests do not change), for the pods still listed.
	rdma := make(map[string]bool, len(c.rdma))
	defer func() { c.rdma = rdma }()
	for _, p := range c.allPods() {
		if p.Spec.NodeName == "" || p.DeletionTimestamp != nil || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			continue
		}
		uid := string(p.UID)
		wants, ok := c.rdma[uid]
		if !ok {
			wants = c.chooser.RequestsRDMA(p)
		}
		rdma[uid] = wants
		if !wants {
			continue
		}
		have := p.Annotations[ledger.AnnotationNICs]
		if have == "" && !c.seen[string(p.UID)] {
			// The Binding's annotations reach the pod with the bind: a
			// bound pod without them had none chosen.
			c.seen[string(p.UID)] = true
			c.metrics.Unassisted.Inc()
			klog.V(2).InfoS("RDMA pod bound without NICs chosen at bind", "pod", klog.KObj(p), "node", p.Spec.NodeName)
		}
		r, ok := ledger.Listed(c.opts.Topology, p, f)
		if !ok {
			continue
		}
		want := r.Annotations(f)
		nics, _ := ledger.ParseNICs(have)
		slices.Sort(nics)
		if have != "" && slices.Equal(nics, r.NICs()) && p.Annotations[ledger.AnnotationNUMA] == want[ledger.AnnotationNUMA] {
			continue
		}
		patch := map[string]any{}
		for k, v := range want {
			patch[k] = v
		}
		if _, split := want[ledger.AnnotationContainers]; !split {
			if _, had := p.Annotations[ledger.AnnotationContainers]; had {
				patch[ledger.AnnotationContainers] = nil
			}
		}
		data, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": patch}})
		if err != nil {
			continue
		}
		if _, err := c.kube.CoreV1().Pods(p.Namespace).Patch(ctx, p.Name, types.MergePatchType, data, metav1.PatchOptions{}); err != nil {
			if !apierrors.IsNotFound(err) {
				klog.ErrorS(err, "Cannot write the NICs the KCNR lists on the pod", "pod", klog.KObj(p))
			}
			continue
		}
		c.metrics.Adopted.Inc()
		msg := "the node's KCNR lists NICs %s (NUMA %s) for the pod"
		if have != "" {
			msg += "; the webhook had chosen " + have
		}
		c.recorder.Eventf(p, corev1.EventTypeNormal, EventNICsAdopted, msg, want[ledger.AnnotationNICs], want[ledger.AnnotationNUMA])
	}
}
