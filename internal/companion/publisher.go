package companion

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"

	"github.com/rdmatopo/rdmatopo/core/topology"
)

// Publisher writes a Publication into a cluster: HyperNodes under the
// companion's source label, and the companion's labels on Nodes. It writes
// only what differs: an unchanged fabric costs reads, never a write.
type Publisher struct {
	Kube    kubernetes.Interface
	Dynamic dynamic.Interface
	Metrics *Metrics
	// HyperNodes turns the HyperNode half on (off: labels only).
	HyperNodes bool
	// Labels turns the node label half on.
	Labels bool

	// noCRD is set once the HyperNode resource was found missing, so the
	// log says it once.
	noCRD bool
}

// Sync brings the cluster to pub. nodes are the cluster's Nodes (their
// current labels); a node the publication does not list loses the
// companion's labels. It returns the number of writes.
func (p *Publisher) Sync(ctx context.Context, pub *Publication, nodes []*corev1.Node) (int, error) {
	writes := 0
	if p.HyperNodes {
		n, err := p.syncHyperNodes(ctx, pub.HyperNodes)
		writes += n
		if err != nil {
			return writes, err
		}
	}
	if p.Labels {
		n, err := p.syncLabels(ctx, pub.Labels, nodes)
		writes += n
		if err != nil {
			return writes, err
		}
	}
	return writes, nil
}

func (p *Publisher) count(kind, op string) {
	if p.Metrics != nil {
		p.Metrics.PublishWrites.WithLabelValues(kind, op).Inc()
	}
}

// syncHyperNodes creates, updates and deletes the companion's HyperNodes;
// HyperNodes without its source label are never touched (a name clash
// with one is reported).
func (p *Publisher) syncHyperNodes(ctx context.Context, want []*topology.HyperNode) (int, error) {
	client := p.Dynamic.Resource(topology.HyperNodeResource)
	list, err := client.List(ctx, metav1.ListOptions{})
	if err != nil {
		if apierrors.IsNotFound(err) {
			if !p.noCRD {
				klog.InfoS("Volcano's HyperNode resource is not served; HyperNodes are not published", "resource", topology.HyperNodeResource.String())
			}
			p.noCRD = true
			return 0, nil
		}
		return 0, fmt.Errorf("list HyperNodes: %w", err)
	}
	p.noCRD = false
	have := map[string]*unstructured.Unstructured{}
	for i := range list.Items {
		have[list.Items[i].GetName()] = &list.Items[i]
	}
	writes := 0
	wanted := map[string]bool{}
	for _, hn := range want {
		wanted[hn.Name] = true
		obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(hn)
		if err != nil {
			return writes, fmt.Errorf("HyperNode %s: %w", hn.Name, err)
		}
		u := &unstructured.Unstructured{Object: obj}
		unstructured.RemoveNestedField(u.Object, "metadata", "creationTimestamp")
		cur, ok := have[hn.Name]
		switch {
		case !ok:
			if _, err := client.Create(ctx, u, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
				return writes, fmt.Errorf("create HyperNode %s: %w", hn.Name, err)
			}
			writes++
			p.count("hypernode", "create")
		case cur.GetLabels()[SourceLabel] != SourceValue:
			klog.InfoS("A HyperNode of another source has the name the companion would publish; left alone", "hyperNode", hn.Name, "source", cur.GetLabels()[SourceLabel])
		case !sameHyperNode(cur, u):
			u.SetResourceVersion(cur.GetResourceVersion())
			if _, err := client.Update(ctx, u, metav1.UpdateOptions{}); err != nil {
				return writes, fmt.Errorf("update HyperNode %s: %w", hn.Name, err)
			}
			writes++
			p.count("hypernode", "update")
		}
	}
	for name, cur := range have {
		if wanted[name] || cur.GetLabels()[SourceLabel] != SourceValue {
			continue
		}
		if err := client.Delete(ctx, name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{ResourceVersion: ptr(cur.GetResourceVersion())}}); err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
			return writes, fmt.Errorf("delete HyperNode %s: %w", name, err)
		}
		writes++
		p.count("hypernode", "delete")
	}
	return writes, nil
}

func ptr[T any](v T) *T { return &v }

// sameHyperNode compares what the companion sets: the spec's tier and
// members, its labels and annotations. spec.tierName (Volcano ≥ 1.14) is
// derived from the tier and left out: a cluster whose HyperNode CRD
// predates it prunes it, and comparing it would rewrite every HyperNode on
// every pass.
func sameHyperNode(cur, want *unstructured.Unstructured) bool {
	for _, f := range []string{"tier", "members"} {
		a, _, _ := unstructured.NestedFieldNoCopy(cur.Object, "spec", f)
		b, _, _ := unstructured.NestedFieldNoCopy(want.Object, "spec", f)
		if !reflect.DeepEqual(normalize(a), normalize(b)) {
			return false
		}
	}
	for k, v := range want.GetLabels() {
		if cur.GetLabels()[k] != v {
			return false
		}
	}
	for k, v := range want.GetAnnotations() {
		if cur.GetAnnotations()[k] != v {
			return false
		}
	}
	return true
}

// syncLabels patches the nodes whose companion labels differ from want.
func (p *Publisher) syncLabels(ctx context.Context, want map[string]map[string]string, nodes []*corev1.Node) (int, error) {
	writes := 0
	for _, n := range nodes {
		w := want[n.Name]
		patch := map[string]any{}
		for _, k := range []string{LeafGroupLabel, S1GroupLabel} {
			cur, has := n.Labels[k]
			v, ok := w[k]
			switch {
			case ok && (!has || cur != v):
				patch[k] = v
			case !ok && has:
				patch[k] = nil
			}
		}
		if len(patch) == 0 {
			continue
		}
		data, err := json.Marshal(map[string]any{"metadata": map[string]any{"labels": patch}})
		if err != nil {
			return writes, err
		}
		if _, err := p.Kube.CoreV1().Nodes().Patch(ctx, n.Name, types.MergePatchType, data, metav1.PatchOptions{}); err != nil {
			if apierrors.IsNotFound(err) {
				continue
			}
			return writes, fmt.Errorf("label node %s: %w", n.Name, err)
		}
		writes++
		p.count("label", "patch")
	}
	return writes, nil
}

// normalize makes numbers from a server response and from
// ToUnstructured comparable (int64 either way).
func normalize(v any) any {
	switch x := v.(type) {
	case int:
		return int64(x)
	case float64:
		return int64(x)
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = normalize(e)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = normalize(e)
		}
		return out
	}
	return v
}
