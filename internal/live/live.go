// Package live reads a live cluster for the read-only tools (`rdmatopo
// topology|simulate --kubeconfig`, `kubectl rdmatopo`): Nodes, katalyst
// CustomNodeResources, pods, PodGroups, Queues, PriorityClasses and the
// scheduler's ConfigMap, every list paged (limit/continue) so that a large
// cluster is never read in one response. Nothing is written.
package live

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"

	katalystclient "github.com/kubewharf/katalyst-api/pkg/client/clientset/versioned"
	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/pager"
	schedulingv1beta1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"
	vcclient "volcano.sh/apis/pkg/client/clientset/versioned"

	"github.com/rdmatopo/rdmatopo/core/placement"
	"github.com/rdmatopo/rdmatopo/core/topology"
	"github.com/rdmatopo/rdmatopo/internal/workload"
)

// DefaultPageSize is how many objects one list request asks for.
const DefaultPageSize = 500

// Where Volcano's stock installation keeps the scheduler conf.
const (
	SchedulerConfigMapNamespace = "volcano-system"
	SchedulerConfigMapName      = "volcano-scheduler-configmap"
	SchedulerConfigMapKey       = "volcano-scheduler.conf"
)

// Clients are the read-only clients of a live cluster.
type Clients struct {
	Kube     kubernetes.Interface
	Katalyst katalystclient.Interface
	Volcano  vcclient.Interface
	Dynamic  dynamic.Interface
	// PageSize bounds every list request (0: DefaultPageSize).
	PageSize int64
	// ReadHyperNodes lists Volcano's HyperNodes (through Dynamic). Set it
	// when the scheduler conf takes S1 from them (s1Source: hypernode);
	// under s1Source: label they change nothing and are not read, so
	// neither a cluster without the HyperNode API nor a user who may not
	// list HyperNodes matters. See fetch for what is an error.
	ReadHyperNodes bool
}

// NewClients builds the clients of a REST config.
func NewClients(cfg *rest.Config, userAgent string) (*Clients, error) {
	cfg = rest.CopyConfig(cfg)
	cfg.UserAgent = userAgent
	c := &Clients{}
	var err error
	if c.Kube, err = kubernetes.NewForConfig(cfg); err != nil {
		return nil, err
	}
	if c.Katalyst, err = katalystclient.NewForConfig(cfg); err != nil {
		return nil, err
	}
	if c.Volcano, err = vcclient.NewForConfig(cfg); err != nil {
		return nil, err
	}
	if c.Dynamic, err = dynamic.NewForConfig(cfg); err != nil {
		return nil, err
	}
	return c, nil
}

func (c *Clients) pageSize() int64 {
	if c.PageSize > 0 {
		return c.PageSize
	}
	return DefaultPageSize
}

// each lists in pages through list, calling fn per item. A resource the
// server does not serve (its CRD is absent) yields nothing when optional.
func each(ctx context.Context, pageSize int64, opts metav1.ListOptions, optional bool,
	list func(context.Context, metav1.ListOptions) (runtime.Object, error), fn func(runtime.Object) error) error {
	p := pager.New(func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) { return list(ctx, o) })
	p.PageSize = pageSize
	err := p.EachListItem(ctx, opts, fn)
	if optional && (apierrors.IsNotFound(err) || meta404(err)) {
		return nil
	}
	return err
}

// collect lists every object of an optional API pagewise (see each) and
// appends a copy of each, of type T, to out.
func collect[T runtime.Object](ctx context.Context, c *Clients, list func(context.Context, metav1.ListOptions) (runtime.Object, error), out *[]T) error {
	return each(ctx, c.pageSize(), metav1.ListOptions{}, true, list, func(o runtime.Object) error {
		*out = append(*out, o.DeepCopyObject().(T))
		return nil
	})
}

// meta404 reports a "the server could not find the requested resource"
// error, which a missing CRD gives.
func meta404(err error) bool {
	e, ok := err.(apierrors.APIStatus)
	return ok && e.Status().Code == 404
}

// FetchCluster lists Nodes, CustomNodeResources and the pods bound to the
// nodes that have not finished, sorted by name. A cluster without the
// CustomNodeResource API yields no KCNRs (every RDMA node is then
// topology-unknown).
func FetchCluster(ctx context.Context, c *Clients) (*workload.Cluster, error) {
	cluster, _, err := fetch(ctx, c, metav1.ListOptions{
		FieldSelector: fields.OneTermNotEqualSelector("spec.nodeName", "").String(),
	})
	return cluster, err
}

// Snapshot is everything the live tools read.
type Snapshot struct {
	// Cluster holds the Nodes, KCNRs and bound, unfinished pods.
	Cluster *workload.Cluster
	// Pending are the unbound, unfinished pods, sorted by namespace/name.
	Pending []*corev1.Pod
	// PodGroups, Queues and PriorityClasses, sorted by name.
	PodGroups       []*schedulingv1beta1.PodGroup
	Queues          []*schedulingv1beta1.Queue
	PriorityClasses []*schedulingv1.PriorityClass
	// VolcanoJobTasks maps "namespace/name" of the Volcano Jobs a tool
	// read (Fetch reads none; FetchJobTasks adds one) to their task names
	// in spec.tasks order, which ranks depend on.
	VolcanoJobTasks map[string][]string
	// Native maps "namespace/name" of the PodGroups that carry Volcano
	// ≥ 1.12's spec.networkTopology or spec.subGroupPolicy (which the
	// typed PodGroups above lack) to those fields, read raw.
	Native map[string]*placement.NativeTopology
}

// NativeOf returns the native topology fields of a PodGroup (nil: none).
func (s *Snapshot) NativeOf(namespace, name string) *placement.NativeTopology {
	return s.Native[namespace+"/"+name]
}

// listNative reads the PodGroups' native topology fields raw (a server or
// a user that does not let them be listed through Dynamic yields none).
func listNative(ctx context.Context, c *Clients) (map[string]*placement.NativeTopology, error) {
	if c.Dynamic == nil {
		return nil, nil
	}
	out := map[string]*placement.NativeTopology{}
	pgs := c.Dynamic.Resource(podGroupResource)
	err := each(ctx, c.pageSize(), metav1.ListOptions{}, true,
		func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) { return pgs.List(ctx, o) },
		func(o runtime.Object) error {
			u, ok := o.(*unstructured.Unstructured)
			if !ok {
				return nil
			}
			raw := func(field string) []byte {
				v, found, _ := unstructured.NestedFieldNoCopy(u.Object, "spec", field)
				if !found || v == nil {
					return nil
				}
				data, _ := json.Marshal(v)
				return data
			}
			if n := placement.DecodeNativeTopology(raw("networkTopology"), raw("subGroupPolicy")); n.Set() {
				out[u.GetNamespace()+"/"+u.GetName()] = n
			}
			return nil
		})
	if apierrors.IsForbidden(err) {
		return nil, nil
	}
	return out, err
}

// podGroupResource is Volcano's PodGroup resource, for the dynamic client.
var podGroupResource = schema.GroupVersionResource{Group: "scheduling.volcano.sh", Version: "v1beta1", Resource: "podgroups"}

// JobTasks returns the task names of Volcano Job namespace/name in
// spec.tasks order, nil when the snapshot does not have the Job.
func (s *Snapshot) JobTasks(namespace, name string) []string {
	return s.VolcanoJobTasks[namespace+"/"+name]
}

// FetchJobTasks reads the Volcano Job namespace/name into the snapshot's
// VolcanoJobTasks.
func (s *Snapshot) FetchJobTasks(ctx context.Context, c *Clients, namespace, name string) error {
	if c.Volcano == nil {
		return errors.New("no Volcano client")
	}
	job, err := c.Volcano.BatchV1alpha1().Jobs(namespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("Volcano Job %s/%s: %w", namespace, name, err)
	}
	names := make([]string, 0, len(job.Spec.Tasks))
	for _, t := range job.Spec.Tasks {
		names = append(names, t.Name)
	}
	if s.VolcanoJobTasks == nil {
		s.VolcanoJobTasks = map[string][]string{}
	}
	s.VolcanoJobTasks[namespace+"/"+name] = names
	return nil
}

// Fetch reads a snapshot of the cluster.
func Fetch(ctx context.Context, c *Clients) (*Snapshot, error) {
	cluster, pending, err := fetch(ctx, c, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	s := &Snapshot{Cluster: cluster, Pending: pending}
	if c.Volcano != nil {
		pgs := c.Volcano.SchedulingV1beta1().PodGroups(metav1.NamespaceAll)
		if err := collect(ctx, c, func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) { return pgs.List(ctx, o) },
			&s.PodGroups); err != nil {
			return nil, fmt.Errorf("listing podgroups: %w", err)
		}
		qs := c.Volcano.SchedulingV1beta1().Queues()
		if err := collect(ctx, c, func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) { return qs.List(ctx, o) },
			&s.Queues); err != nil {
			return nil, fmt.Errorf("listing queues: %w", err)
		}
	}
	pcs := c.Kube.SchedulingV1().PriorityClasses()
	if err := collect(ctx, c, func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) { return pcs.List(ctx, o) },
		&s.PriorityClasses); err != nil {
		return nil, fmt.Errorf("listing priorityclasses: %w", err)
	}
	if s.Native, err = listNative(ctx, c); err != nil {
		return nil, fmt.Errorf("listing podgroups' topology fields: %w", err)
	}
	sort.Slice(s.PodGroups, func(i, j int) bool {
		a, b := s.PodGroups[i], s.PodGroups[j]
		return a.Namespace < b.Namespace || (a.Namespace == b.Namespace && a.Name < b.Name)
	})
	sort.Slice(s.Queues, func(i, j int) bool { return s.Queues[i].Name < s.Queues[j].Name })
	sort.Slice(s.PriorityClasses, func(i, j int) bool { return s.PriorityClasses[i].Name < s.PriorityClasses[j].Name })
	return s, nil
}

// fetch lists Nodes, KCNRs and the pods selected by podOpts, and splits
// the unfinished pods into the cluster's bound ones and pending ones.
func fetch(ctx context.Context, c *Clients, podOpts metav1.ListOptions) (*workload.Cluster, []*corev1.Pod, error) {
	cluster := &workload.Cluster{}
	known := map[string]bool{}
	nodes := c.Kube.CoreV1().Nodes()
	if err := each(ctx, c.pageSize(), metav1.ListOptions{}, false,
		func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) { return nodes.List(ctx, o) },
		func(o runtime.Object) error {
			n := o.(*corev1.Node).DeepCopy()
			known[n.Name] = true
			cluster.Nodes = append(cluster.Nodes, n)
			return nil
		}); err != nil {
		return nil, nil, fmt.Errorf("listing nodes: %w", err)
	}
	if c.Katalyst != nil {
		cnrs := c.Katalyst.NodeV1alpha1().CustomNodeResources()
		if err := collect(ctx, c, func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) { return cnrs.List(ctx, o) },
			&cluster.CNRs); err != nil {
			return nil, nil, fmt.Errorf("listing customnoderesources: %w", err)
		}
	}
	if c.ReadHyperNodes {
		hns, err := listHyperNodes(ctx, c)
		if err != nil {
			return nil, nil, err
		}
		cluster.HyperNodes = hns
	}
	var pending []*corev1.Pod
	pods := c.Kube.CoreV1().Pods(metav1.NamespaceAll)
	if err := each(ctx, c.pageSize(), podOpts, false,
		func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) { return pods.List(ctx, o) },
		func(o runtime.Object) error {
			p := o.(*corev1.Pod).DeepCopy()
			switch {
			case p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed:
			case p.Spec.NodeName == "":
				if podOpts.FieldSelector == "" {
					pending = append(pending, p)
				}
			case known[p.Spec.NodeName]:
				cluster.Pods = append(cluster.Pods, p)
			}
			return nil
		}); err != nil {
		return nil, nil, fmt.Errorf("listing pods: %w", err)
	}
	sort.Slice(cluster.Nodes, func(i, j int) bool { return cluster.Nodes[i].Name < cluster.Nodes[j].Name })
	sort.Slice(cluster.CNRs, func(i, j int) bool { return cluster.CNRs[i].Name < cluster.CNRs[j].Name })
	sort.Slice(cluster.HyperNodes, func(i, j int) bool { return cluster.HyperNodes[i].Name < cluster.HyperNodes[j].Name })
	byName := func(ps []*corev1.Pod) {
		sort.Slice(ps, func(i, j int) bool {
			a, b := ps[i], ps[j]
			return a.Namespace < b.Namespace || (a.Namespace == b.Namespace && a.Name < b.Name)
		})
	}
	byName(cluster.Pods)
	byName(pending)
	return cluster, pending, nil
}

// listHyperNodes lists the HyperNodes for S1. A cluster that does not
// serve the HyperNode API (Volcano before 1.12, or its CRD not installed)
// has none: the scheduler then sees none either, and every node shares the
// default S1. A user who may not list them gets an error that says so,
// since the fabric drawn without them would not be the scheduler's.
func listHyperNodes(ctx context.Context, c *Clients) ([]*topology.HyperNode, error) {
	if c.Dynamic == nil {
		return nil, errors.New("s1Source is hypernode, but there is no client to read HyperNodes with")
	}
	var out []*topology.HyperNode
	hns := c.Dynamic.Resource(topology.HyperNodeResource)
	err := each(ctx, c.pageSize(), metav1.ListOptions{}, true,
		func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) { return hns.List(ctx, o) },
		func(o runtime.Object) error {
			u, ok := o.(*unstructured.Unstructured)
			if !ok {
				return fmt.Errorf("a HyperNode list item is a %T", o)
			}
			hn, err := topology.HyperNodeFromUnstructured(u)
			if err != nil {
				return err
			}
			out = append(out, hn)
			return nil
		})
	switch {
	case apierrors.IsForbidden(err):
		return nil, fmt.Errorf("s1Source is hypernode, so S1s come from HyperNodes, but this user may not list %s.%s: "+
			"grant it list on them: %w",
			topology.HyperNodeResource.Resource, topology.HyperNodeResource.Group, err)
	case err != nil:
		return nil, fmt.Errorf("listing hypernodes: %w", err)
	}
	return out, nil
}

// SchedulerConf reads the scheduler conf from a ConfigMap; found is false
// when the ConfigMap or its key does not exist.
func SchedulerConf(ctx context.Context, c *Clients, namespace, name, key string) (text string, found bool, err error) {
	cm, err := c.Kube.CoreV1().ConfigMaps(namespace).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return "", false, nil
	}
	if err != nil {
		return "", false, fmt.Errorf("reading ConfigMap %s/%s: %w", namespace, name, err)
	}
	text, found = cm.Data[key]
	return text, found, nil
}
