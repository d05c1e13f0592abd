package main

import (
	"context"
	"time"

	katalystclient "github.com/kubewharf/katalyst-api/pkg/client/clientset/versioned"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/rdmatopo/rdmatopo/core/topology"
	"github.com/rdmatopo/rdmatopo/internal/live"
	"github.com/rdmatopo/rdmatopo/internal/workload"
)

// liveTimeout bounds all reads from a live cluster.
const liveTimeout = 60 * time.Second

// liveClients are the read-only clients of a live cluster.
type liveClients struct {
	kube     kubernetes.Interface
	katalyst katalystclient.Interface
	// dynamic reads HyperNodes (under s1Source: hypernode).
	dynamic dynamic.Interface
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
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, badInputf("%s: %v", name, err)
	}
	return &liveClients{kube: kube, katalyst: kat, dynamic: dyn}, nil
}

// dial connects to the cluster of a kubeconfig; tests replace it with fake
// clientsets.
var dial = connect

// loadLiveCluster reads the cluster of a kubeconfig (never writing), with
// its HyperNodes when cfg takes S1 from them.
func loadLiveCluster(kubeconfig string, cfg topology.Config) (*workload.Cluster, error) {
	lc, err := dial(kubeconfig)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), liveTimeout)
	defer cancel()
	return fetchCluster(ctx, lc, cfg)
}

// fetchCluster lists Nodes, CustomNodeResources, the pods bound to the
// nodes that have not finished and, when cfg takes S1 from them, HyperNodes,
// sorted by name, in pages (see internal/live).
func fetchCluster(ctx context.Context, lc *liveClients, cfg topology.Config) (*workload.Cluster, error) {
	return live.FetchCluster(ctx, &live.Clients{
		Kube: lc.kube, Katalyst: lc.katalyst, Dynamic: lc.dynamic,
		ReadHyperNodes: cfg.WithDefaults().S1Source == topology.S1FromHyperNode,
	})
}
