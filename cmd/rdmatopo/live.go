package main

import (
	"context"
	"fmt"
	"sort"
	"time"

	"github.com/kubewharf/katalyst-api/pkg/apis/node/v1alpha1"
	katalystclient "github.com/kubewharf/katalyst-api/pkg/client/clientset/versioned"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/rdmatopo/rdmatopo/internal/workload"
)

// liveTimeout bounds all reads from a live cluster.
const liveTimeout = 60 * time.Second

// liveClients are the read-only clients of a live cluster.
type liveClients struct {
	kube     kubernetes.Interface
	katalyst katalystclient.Interface
}

// connect builds clients from a kubeconfig file. A kubeconfig that cannot
// be read or used is unusable input.
func connect(kubeconfig string) (*liveClients, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return nil, badInputf("%s: %v", kubeconfig, err)
	}
	return newLiveClients(cfg, kubeconfig)
}

// newLiveClients builds the clients for a REST config.
func newLiveClients(cfg *rest.Config, name string) (*liveClients, error) {
	cfg = rest.CopyConfig(cfg)
	cfg.UserAgent = "rdmatopo"
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, badInputf("%s: %v", name, err)
	}
	kat, err := katalystclient.NewForConfig(cfg)
	if err != nil {
		return nil, badInputf("%s: %v", name, err)
	}
	return &liveClients{kube: kube, katalyst: kat}, nil
}

// dial connects to the cluster of a kubeconfig; tests replace it with fake
// clientsets.
var dial = connect

// loadLiveCluster reads the cluster of a kubeconfig (never writing).
func loadLiveCluster(kubeconfig string) (*workload.Cluster, error) {
	lc, err := dial(kubeconfig)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), liveTimeout)
	defer cancel()
	return fetchCluster(ctx, lc)
}

// fetchCluster lists Nodes, CustomNodeResources and the pods bound to the
// nodes that have not finished, sorted by name. A cluster without the
// CustomNodeResource API yields no KCNRs (every RDMA node is then
// topology-unknown).
func fetchCluster(ctx context.Context, lc *liveClients) (*workload.Cluster, error) {
	nodes, err := lc.kube.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("listing nodes: %w", err)
	}
	var cnrItems []v1alpha1.CustomNodeResource
	cnrs, err := lc.katalyst.NodeV1alpha1().CustomNodeResources().List(ctx, metav1.ListOptions{})
	switch {
	case err == nil:
		cnrItems = cnrs.Items
	case apierrors.IsNotFound(err):
		// The CRD is not installed.
	default:
		return nil, fmt.Errorf("listing customnoderesources: %w", err)
	}
	pods, err := lc.kube.CoreV1().Pods(metav1.NamespaceAll).List(ctx, metav1.ListOptions{
		FieldSelector: fields.OneTermNotEqualSelector("spec.nodeName", "").String(),
	})
	if err != nil {
		return nil, fmt.Errorf("listing pods: %w", err)
	}

	c := &workload.Cluster{}
	known := map[string]bool{}
	for i := range nodes.Items {
		n := nodes.Items[i].DeepCopy()
		known[n.Name] = true
		c.Nodes = append(c.Nodes, n)
	}
	sort.Slice(c.Nodes, func(i, j int) bool { return c.Nodes[i].Name < c.Nodes[j].Name })
	for i := range cnrItems {
		c.CNRs = append(c.CNRs, cnrItems[i].DeepCopy())
	}
	sort.Slice(c.CNRs, func(i, j int) bool { return c.CNRs[i].Name < c.CNRs[j].Name })
	for i := range pods.Items {
		p := pods.Items[i].DeepCopy()
		// The field selector is advisory for some fakes: filter again.
		if p.Spec.NodeName == "" || !known[p.Spec.NodeName] ||
			p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			continue
		}
		c.Pods = append(c.Pods, p)
	}
	sort.Slice(c.Pods, func(i, j int) bool {
		a, b := c.Pods[i], c.Pods[j]
		return a.Namespace < b.Namespace || (a.Namespace == b.Namespace && a.Name < b.Name)
	})
	return c, nil
}
