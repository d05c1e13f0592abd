package rdmatopology

import (
	"context"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/rdmatopo/rdmatopo/core/topology"
)

// informerHyperNode is the rdmatopo_informer_synced label of the HyperNode
// informer (started only with s1Source: hypernode).
const informerHyperNode = "hypernodes"

// SetHyperNodes gives the fabric the S1s the HyperNodes define (with
// s1Source: hypernode): the nodes whose S1 changes are rebuilt. Members that
// cannot be read are logged and ignored.
func (rt *Runtime) SetHyperNodes(hns []*topology.HyperNode) {
	setHyperNodes(rt.Fabric, rt.cfg, hns)
}

// setHyperNodes gives fabric, built for cfg, the S1s of the HyperNodes.
func setHyperNodes(fabric *topology.Cache, cfg topology.Config, hns []*topology.HyperNode) {
	idx, problems := topology.NewHyperNodeIndex(cfg.S1HyperNodeTier, hns)
	for _, p := range problems {
		klog.InfoS("Unreadable HyperNode member; ignored", "hypernode", p.HyperNode, "field", p.Field, "problem", p.Msg)
	}
	fabric.SetHyperNodes(idx)
}

// startHyperNodeInformer watches HyperNodes through a dynamic client (their
// typed client lives in volcano.sh/apis v1.13, which cannot be built beside
// the Volcano v1.10 scheduler) and, on every change, hands the
// whole set to SetHyperNodes (membership crosses HyperNodes, so one change
// can move the nodes of another).
func (rt *Runtime) startHyperNodeInformer(cfg *rest.Config) error {
	client, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return err
	}
	if rt.stop == nil {
		rt.stop = make(chan struct{})
	}
	fabric, topo := rt.Fabric, rt.cfg
	factory := dynamicinformer.NewDynamicSharedInformerFactory(client, 0)
	inf := factory.ForResource(topology.HyperNodeResource).Informer()
	resync := func(interface{}) {
		var hns []*topology.HyperNode
		for _, obj := range inf.GetStore().List() {
			u, ok := obj.(*unstructured.Unstructured)
			if !ok {
				continue
			}
			hn, err := topology.HyperNodeFromUnstructured(u)
			if err != nil {
				klog.InfoS("Unreadable HyperNode; ignored", "err", err)
				continue
			}
			hns = append(hns, hn)
		}
		setHyperNodes(fabric, topo, hns)
	}
	_, err = inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    resync,
		UpdateFunc: func(_, obj interface{}) { resync(obj) },
		DeleteFunc: resync,
	})
	if err != nil {
		return err
	}
	factory.Start(rt.stop)
	ctx, cancel := context.WithTimeout(context.Background(), informerSyncTimeout)
	defer cancel()
	if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		klog.InfoS("HyperNode cache not synced yet; continuing", "timeout", informerSyncTimeout)
	}
	observeSynced(informerHyperNode, inf.HasSynced, rt.stop)
	klog.InfoS("Watching HyperNodes for the S1 of each node", "tier", rt.cfg.S1HyperNodeTier)
	return nil
}
