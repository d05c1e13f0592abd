package rdmatopology

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	apiruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/rdmatopo/rdmatopo/framework/topology"
)

// HyperNodeResource is Volcano's HyperNode resource (Volcano ≥ 1.12). It is
// watched through a dynamic client: its typed client lives in volcano.sh/apis
// v1.13, which cannot be built beside the Volcano v1.10 scheduler.
var HyperNodeResource = schema.GroupVersionResource{Group: "topology.volcano.sh", Version: "v1alpha1", Resource: "hypernodes"}

// informerHyperNode is the rdmatopo_informer_synced label of the HyperNode
// informer (started only with s1Source: hypernode).
const informerHyperNode = "hypernodes"

// HyperNodeFromUnstructured decodes a HyperNode as the dynamic client
// returns it.
func HyperNodeFromUnstructured(u *unstructured.Unstructured) (*topology.HyperNode, error) {
	hn := &topology.HyperNode{}
	if err := apiruntime.DefaultUnstructuredConverter.FromUnstructured(u.Object, hn); err != nil {
		return nil, fmt.Errorf("HyperNode %s: %w", u.GetName(), err)
	}
	return hn, nil
}

// SetHyperNodes gives the fabric the S1s the HyperNodes define (with
// s1Source: hypernode): the nodes whose S1 changes are rebuilt. Members that
// cannot be read are logged and ignored.
func (rt *Runtime) SetHyperNodes(hns []*topology.HyperNode) {
	idx, problems := topology.NewHyperNodeIndex(rt.cfg.S1HyperNodeTier, hns)
	for _, p := range problems {
		klog.InfoS("Unreadable HyperNode member; ignored", "hypernode", p.HyperNode, "field", p.Field, "problem", p.Msg)
	}
	rt.Fabric.SetHyperNodes(idx)
}

// startHyperNodeInformer watches HyperNodes and, on every change, hands the
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
	factory := dynamicinformer.NewDynamicSharedInformerFactory(client, 0)
	inf := factory.ForResource(HyperNodeResource).Informer()
	resync := func(interface{}) {
		var hns []*topology.HyperNode
		for _, obj := range inf.GetStore().List() {
			u, ok := obj.(*unstructured.Unstructured)
			if !ok {
				continue
			}
			hn, err := HyperNodeFromUnstructured(u)
			if err != nil {
				klog.InfoS("Unreadable HyperNode; ignored", "err", err)
				continue
			}
			hns = append(hns, hn)
		}
		rt.SetHyperNodes(hns)
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
	observeSynced(informerHyperNode, inf.HasSynced, rt.stop)
	ctx, cancel := context.WithTimeout(context.Background(), informerSyncTimeout)
	defer cancel()
	if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		klog.InfoS("HyperNode cache not synced yet; continuing", "timeout", informerSyncTimeout)
	}
	klog.InfoS("Watching HyperNodes for the S1 of each node", "tier", rt.cfg.S1HyperNodeTier)
	return nil
}
