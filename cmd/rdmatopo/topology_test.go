package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"regexp"
	"testing"

	"github.com/kubewharf/katalyst-api/pkg/apis/node/v1alpha1"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	clienttesting "k8s.io/client-go/testing"

	"github.com/rdmatopo/rdmatopo/core/ledger"
	"github.com/rdmatopo/rdmatopo/core/topology"
	"github.com/rdmatopo/rdmatopo/examples"
	"github.com/rdmatopo/rdmatopo/internal/testing/builders"
	"github.com/rdmatopo/rdmatopo/internal/workload"
)

// TestTopologyCountsPodsOnUnknownNodes: NICs that bound pods hold stay used
// when their nodes have no usable topology, whatever names the pods'
// annotations give them.
func TestTopologyCountsPodsOnUnknownNodes(t *testing.T) {
	sample := func(t *testing.T) *workload.Cluster {
		c, err := workload.LoadCluster("cluster.yaml", examples.Cluster)
		require.NoError(t, err)
		return c
	}
	cases := map[string]struct {
		cluster func(t *testing.T) *workload.Cluster
		want    string // the summary line
	}{
		"sample cluster": {
			cluster: sample,
			want:    "16 nodes, 8 S0 leaves, 0 topology-unknown nodes; 52 of 64 RDMA NICs free.",
		},
		"KCNRs without status": {
			cluster: func(t *testing.T) *workload.Cluster {
				c := sample(t)
				for _, cnr := range c.CNRs {
					cnr.Status = v1alpha1.CustomNodeResourceStatus{}
				}
				return c
			},
			want: "16 nodes, 0 S0 leaves, 16 topology-unknown nodes; 52 of 64 RDMA NICs free.",
		},
		"no KCNRs": {
			cluster: func(t *testing.T) *workload.Cluster {
				c := sample(t)
				c.CNRs = nil
				return c
			},
			want: "16 nodes, 0 S0 leaves, 16 topology-unknown nodes; 52 of 64 RDMA NICs free.",
		},
		"pods without annotations on a node without KCNR": {
			cluster: func(t *testing.T) *workload.Cluster {
				return &workload.Cluster{
					Nodes: []*corev1.Node{builders.MakeNode("n1").GPU(8).RDMA(4).CPU("64").Obj()},
					Pods: []*corev1.Pod{
						builders.MakePod("ns", "plain").UID("u1").Node("n1").Req(builders.RDMAResource, "2").Obj(),
						builders.MakePod("ns", "synthetic").UID("u2").Node("n1").Req(builders.RDMAResource, "1").
							Annotation(ledger.AnnotationNICs, "rdma-3").Annotation(ledger.AnnotationNUMA, "0").Obj(),
					},
				}
			},
			want: "1 nodes, 0 S0 leaves, 1 topology-unknown nodes; 1 of 4 RDMA NICs free.",
		},
		"unreadable annotations keep their NICs": {
			cluster: func(t *testing.T) *workload.Cluster {
				return &workload.Cluster{
					Nodes: []*corev1.Node{builders.MakeNode("n1").GPU(8).RDMA(4).CPU("64").Obj()},
					Pods: []*corev1.Pod{
						builders.MakePod("ns", "twice").UID("u1").Node("n1").Req(builders.RDMAResource, "1").
							Annotation(ledger.AnnotationNICs, "rdma-0,rdma-0").Obj(),
					},
				}
			},
			want: "1 nodes, 0 S0 leaves, 1 topology-unknown nodes; 3 of 4 RDMA NICs free.",
		},
	}
	summary := regexp.MustCompile(`(?m)^\d+ nodes, .*$`)
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var out bytes.Buffer
			require.NoError(t, printTopology(&out, topology.Config{S1NodeLabel: "rdmatopo.io/minipod"}, tc.cluster(t)))
			require.Equal(t, tc.want, summary.FindString(out.String()), out.String())
		})
	}
}

// TestTopologyShowsHyperNodeS1s: the topology view names the S1s the
// HyperNodes give, the same view the equivalent node label gives.
func TestTopologyShowsHyperNodeS1s(t *testing.T) {
	hyper, err := os.ReadFile("../../examples/hypernodes.yaml")
	require.NoError(t, err)
	c, err := workload.LoadCluster("c.yaml", []byte(string(examples.Cluster)+"---\n"+string(hyper)))
	require.NoError(t, err)
	var byLabel, byHyper bytes.Buffer
	require.NoError(t, printTopology(&byLabel, topology.Config{S1NodeLabel: builders.S1Label}, c))
	require.NoError(t, printTopology(&byHyper, topology.Config{S1Source: topology.S1FromHyperNode}, c))
	require.Equal(t, byLabel.String(), byHyper.String())
	require.Contains(t, byHyper.String(), "minipod-b")
}

// TestTopologyLiveHyperNodes: `rdmatopo topology --kubeconfig` reads the
// cluster's HyperNodes under s1Source: hypernode and shows the S1s they
// give (the label's view); under s1Source: label it does not read them, so
// a user who may not list them is refused only when they matter.
func TestTopologyLiveHyperNodes(t *testing.T) {
	hyper, err := os.ReadFile("../../examples/hypernodes.yaml")
	require.NoError(t, err)
	var hns []runtime.Object
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(hyper), 4096)
	for {
		var raw json.RawMessage
		if err := dec.Decode(&raw); errors.Is(err, io.EOF) {
			break
		} else {
			require.NoError(t, err)
		}
		obj, err := runtime.Decode(unstructured.UnstructuredJSONScheme, raw)
		require.NoError(t, err)
		hns = append(hns, obj)
	}
	require.Len(t, hns, 4)
	byHyper := topology.Config{S1Source: topology.S1FromHyperNode}
	byLabel := topology.Config{S1NodeLabel: builders.S1Label}
	for _, tc := range []struct {
		name      string
		cfg       topology.Config
		forbidden bool
		wantErr   string
	}{
		{name: "hypernode source", cfg: byHyper},
		{name: "hypernode source, forbidden", cfg: byHyper, forbidden: true, wantErr: "may not list hypernodes.topology.volcano.sh"},
		{name: "label source, forbidden", cfg: byLabel, forbidden: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			kube, kat := fakeCluster(t)
			dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
				map[schema.GroupVersionResource]string{topology.HyperNodeResource: "HyperNodeList"}, hns...)
			if tc.forbidden {
				dyn.PrependReactor("list", "hypernodes", func(clienttesting.Action) (bool, runtime.Object, error) {
					return true, nil, apierrors.NewForbidden(schema.GroupResource{Group: "topology.volcano.sh", Resource: "hypernodes"}, "", nil)
				})
			}
			cluster, err := fetchCluster(context.Background(), &liveClients{kube: kube, katalyst: kat, dynamic: dyn}, tc.cfg)
			if tc.wantErr != "" {
				require.ErrorContains(t, err, tc.wantErr)
				return
			}
			require.NoError(t, err)
			var out, want bytes.Buffer
			require.NoError(t, printTopology(&out, tc.cfg, cluster))
			sample, err := workload.LoadCluster("cluster.yaml", examples.Cluster)
			require.NoError(t, err)
			require.NoError(t, printTopology(&want, byLabel, sample))
			require.Equal(t, want.String(), out.String())
			require.Contains(t, out.String(), "minipod-b")
		})
	}
}
