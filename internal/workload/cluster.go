package workload

import (
	"sort"
	"time"

	"github.com/kubewharf/katalyst-api/pkg/apis/node/v1alpha1"

	"github.com/rdmatopo/rdmatopo/core/topology"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// Cluster is the state a simulation starts from: Nodes, their katalyst
// CustomNodeResources (KCNRs) and the Pods already bound to them. Slices
// keep input order.
type Cluster struct {
	Nodes []*corev1.Node
	CNRs  []*v1alpha1.CustomNodeResource
	// Pods are bound (spec.nodeName set) and not yet finished, or finished.
	Pods []*corev1.Pod
	// HyperNodes are Volcano's HyperNodes (read for S1 under the plugin's
	// s1Source: hypernode).
	HyperNodes []*topology.HyperNode
}

// Fabric builds the cluster's fabric under cfg, S1s from its HyperNodes
// when cfg says so.
func (c *Cluster) Fabric(cfg topology.Config) *topology.Fabric {
	cfg = cfg.WithDefaults()
	return topology.BuildWithHyperNodes(cfg, c.HyperNodeIndex(cfg), c.Nodes, c.CNRs)
}

// HyperNodeIndex indexes the cluster's HyperNodes for cfg's S1 tier (their
// members were checked when the file was read).
func (c *Cluster) HyperNodeIndex(cfg topology.Config) *topology.HyperNodeIndex {
	idx, _ := topology.NewHyperNodeIndex(cfg.WithDefaults().S1HyperNodeTier, c.HyperNodes)
	return idx
}

// LoadCluster reads a cluster file: multi-document YAML or JSON holding
// v1 Nodes, CustomNodeResources, bound v1 Pods and Volcano HyperNodes (a
// v1 List of them also works). file names the input in errors.
func LoadCluster(file string, data []byte) (*Cluster, error) {
	objs, err := readObjects(file, data)
	if err != nil {
		return nil, err
	}
	c := &Cluster{}
	reg := registry{}
	var clk clock
	clk.next = Epoch.Add(-24 * time.Hour) // bound pods predate the workload
	for _, r := range objs {
		if ierr := clusterKinds.check(r); ierr != nil {
			return nil, ierr
		}
		switch r.kind {
		case KindNode:
			n := &corev1.Node{}
			if ierr := decodeStrict(r, n); ierr != nil {
				return nil, ierr
			}
			if ierr := prepareNode(r, n, reg); ierr != nil {
				return nil, ierr
			}
			c.Nodes = append(c.Nodes, n)
		case KindCNR:
			cnr := &v1alpha1.CustomNodeResource{}
			if ierr := decodeStrict(r, cnr); ierr != nil {
				return nil, ierr
			}
			if cnr.Name == "" {
				return nil, r.errorf("metadata.name", "required (the KCNR is named like its node)")
			}
			if ierr := reg.add(r.origin, KindCNR, "", cnr.Name); ierr != nil {
				return nil, ierr
			}
			c.CNRs = append(c.CNRs, cnr)
		case KindPod:
			p := &corev1.Pod{}
			if ierr := decodeStrict(r, p); ierr != nil {
				return nil, ierr
			}
			if ierr := prepareBoundPod(r, p, reg, &clk); ierr != nil {
				return nil, ierr
			}
			c.Pods = append(c.Pods, p)
		case KindHyperNode:
			hn := &topology.HyperNode{}
			if ierr := decodeStrict(r, hn); ierr != nil {
				return nil, ierr
			}
			if ierr := checkHyperNode(r, hn, reg); ierr != nil {
				return nil, ierr
			}
			c.HyperNodes = append(c.HyperNodes, hn)
		}
	}
	if ierr := checkBoundPods(c, reg); ierr != nil {
		return nil, ierr
	}
	return c, nil
}

// checkBoundPods verifies that every bound pod sits on a node of the file
// and that the pods of a node fit its allocatable resources (kubelet would
// not have admitted more).
func checkBoundPods(c *Cluster, reg registry) *InputError {
	free := nodeRoom(c)
	for _, p := range c.Pods {
		if ierr := admit(free, p, reg[objectKey{KindPod, p.Namespace, p.Name}], "cluster file", "the pods before it"); ierr != nil {
			return ierr
		}
	}
	return nil
}

// CheckRunning verifies that every running pod of a workload (spec.nodeName
// set) sits on a node of the cluster and that the node holds it next to the
// cluster's bound pods and the workload's running pods before it.
func CheckRunning(c *Cluster, s *Set) error {
	if c == nil {
		c = &Cluster{}
	}
	free := nodeRoom(c)
	for _, p := range c.Pods {
		_ = admit(free, p, origin{}, "", "") // the cluster file was checked
	}
	for _, p := range s.Pods {
		if p.Spec.NodeName == "" {
			continue
		}
		if ierr := admit(free, p, s.running[p.Namespace+"/"+p.Name], "cluster", "the cluster's bound pods and the running pods before it"); ierr != nil {
			return ierr
		}
	}
	return nil
}

// nodeRoom returns each node's allocatable resources.
func nodeRoom(c *Cluster) map[string]corev1.ResourceList {
	free := make(map[string]corev1.ResourceList, len(c.Nodes))
	for _, n := range c.Nodes {
		free[n.Name] = n.Status.Allocatable.DeepCopy()
	}
	return free
}

// admit takes a bound pod's requests from what is left on its node, or
// says why the node cannot hold it (where names the input defining nodes,
// before the pods counted already). Finished pods take nothing.
func admit(free map[string]corev1.ResourceList, p *corev1.Pod, o origin, where, before string) *InputError {
	left, ok := free[p.Spec.NodeName]
	if !ok {
		return o.errorf(KindPod, p.Namespace, p.Name, "spec.nodeName", "node %q is not defined in the %s", p.Spec.NodeName, where)
	}
	if p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
		return nil
	}
	req := PodRequests(&p.Spec)
	req[corev1.ResourcePods] = resource.MustParse("1")
	names := make([]string, 0, len(req))
	for name := range req {
		names = append(names, string(name))
	}
	sort.Strings(names)
	for _, name := range names {
		q := req[corev1.ResourceName(name)]
		if q.IsZero() {
			continue
		}
		have := left[corev1.ResourceName(name)]
		if have.Cmp(q) < 0 {
			return o.errorf(KindPod, p.Namespace, p.Name, "spec.nodeName",
				"node %q cannot hold this pod: it requests %s %s, %s of the node's allocatable is left after %s",
				p.Spec.NodeName, q.String(), name, have.String(), before)
		}
		have.Sub(q)
		left[corev1.ResourceName(name)] = have
	}
	return nil
}

// defaultMaxPods is the kubelet's default pod capacity, assumed for nodes
// whose allocatable resources do not list pods.
const defaultMaxPods = "110"

// prepareNode validates a Node and fills what a kubelet would have set.
func prepareNode(r *rawObject, n *corev1.Node, reg registry) *InputError {
	if n.Name == "" {
		return r.errorf("metadata.name", "required")
	}
	r.name = n.Name
	if ierr := reg.add(r.origin, KindNode, "", n.Name); ierr != nil {
		return ierr
	}
	if n.Namespace != "" {
		return r.errorf("metadata.namespace", "a Node is cluster-scoped; remove the namespace")
	}
	if len(n.Status.Allocatable) == 0 && len(n.Status.Capacity) > 0 {
		n.Status.Allocatable = n.Status.Capacity.DeepCopy()
	}
	if len(n.Status.Allocatable) == 0 {
		return r.errorf("status.allocatable", "required: a node without allocatable resources can hold no pod")
	}
	if _, ok := n.Status.Allocatable[corev1.ResourcePods]; !ok {
		// The kubelet always reports it; 110 is its default max-pods.
		n.Status.Allocatable[corev1.ResourcePods] = resource.MustParse(defaultMaxPods)
	}
	if n.UID == "" {
		n.UID = StableUID(KindNode, "", n.Name)
	}
	return nil
}

// prepareBoundPod validates a Pod of the cluster file: it must be bound.
func prepareBoundPod(r *rawObject, p *corev1.Pod, reg registry, clk *clock) *InputError {
	if ierr := preparePod(r, p, reg, clk); ierr != nil {
		return ierr
	}
	if p.Spec.NodeName == "" {
		return r.errorf("spec.nodeName", "required: pods in the cluster file are already bound (pending pods belong in the workload)")
	}
	if field, msg := checkQuantities(&p.Spec); field != "" {
		return r.errorf(field, "%s", msg)
	}
	if p.Status.Phase == "" || p.Status.Phase == corev1.PodPending {
		p.Status.Phase = corev1.PodRunning
	}
	return nil
}

// preparePod validates what every pod needs and applies API defaulting.
func preparePod(r *rawObject, p *corev1.Pod, reg registry, clk *clock) *InputError {
	if p.Name == "" {
		return r.errorf("metadata.name", "required")
	}
	if p.Namespace == "" {
		p.Namespace = DefaultNamespace
	}
	r.name, r.namespace = p.Name, p.Namespace
	if ierr := reg.add(r.origin, KindPod, p.Namespace, p.Name); ierr != nil {
		return ierr
	}
	if len(p.Spec.Containers) == 0 {
		return r.errorf("spec.containers", "required: a pod needs at least one container")
	}
	defaultRequests(&p.Spec)
	if p.UID == "" {
		p.UID = StableUID(KindPod, p.Namespace, p.Name)
	}
	p.CreationTimestamp = timeOr(p.CreationTimestamp, clk)
	return checkSchedulerAnnotations(r, p)
}

// checkHyperNode refuses a HyperNode without a name or a positive tier, or
// with a member that cannot be read (the scheduler would ignore it).
func checkHyperNode(r *rawObject, hn *topology.HyperNode, reg registry) *InputError {
	if hn.Name == "" {
		return r.errorf("metadata.name", "required")
	}
	r.name = hn.Name
	if ierr := reg.add(r.origin, KindHyperNode, "", hn.Name); ierr != nil {
		return ierr
	}
	if hn.Spec.Tier < 1 {
		return r.errorf("spec.tier", "must be >= 1, got %d", hn.Spec.Tier)
	}
	if _, problems := topology.NewHyperNodeIndex(hn.Spec.Tier, []*topology.HyperNode{hn}); len(problems) > 0 {
		return r.errorf(problems[0].Field, "%s", problems[0].Msg)
	}
	return nil
}
