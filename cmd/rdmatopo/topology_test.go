package main

import (
	"bytes"
	"os"
	"regexp"
	"testing"

	"github.com/kubewharf/katalyst-api/pkg/apis/node/v1alpha1"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"

	"github.com/rdmatopo/rdmatopo/examples"
	"github.com/rdmatopo/rdmatopo/framework/ledger"
	"github.com/rdmatopo/rdmatopo/framework/topology"
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
