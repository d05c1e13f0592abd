package topology_test

import (
	"testing"

	"github.com/kubewharf/katalyst-api/pkg/apis/node/v1alpha1"

	"github.com/rdmatopo/rdmatopo/core/topology"
	"github.com/rdmatopo/rdmatopo/internal/testing/builders"
)

// BenchmarkBuild reads a whole provider-shaped cluster: 2 NUMA zones x 2 NICs
// per node, NUMA-0 and NUMA-1 NICs on different leaves, 16 zones per leaf.
func BenchmarkBuild(b *testing.B) {
	for _, size := range []struct {
		name  string
		nodes int
	}{{"nodes=1000", 1000}, {"nodes=10000", 10000}} {
		b.Run(size.name, func(b *testing.B) {
			nodes, cnrs := builders.GenerateCluster(size.nodes, 16, 8)
			f := topology.Build(s1Config, nodes, cnrs)
			if got, want := len(f.LeafIDs()), 2*((size.nodes+15)/16); got != want {
				b.Fatalf("leaves = %d, want %d", got, want)
			}
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				topology.Build(s1Config, nodes, cnrs)
			}
		})
	}
}

// BenchmarkCacheUpdate applies one KCNR update (a NIC taken, then freed) to a
// warm cache of the whole cluster.
func BenchmarkCacheUpdate(b *testing.B) {
	const n = 10000
	b.Run("nodes=10000", func(b *testing.B) {
		nodes, cnrs := builders.GenerateCluster(n, 16, 8)
		c := topology.NewCache(s1Config)
		for i := range nodes {
			c.UpsertNode(nodes[i])
			c.UpsertCNR(cnrs[i])
		}
		c.Snapshot()
		target := nodes[n/2].Name
		leafA, leafB := builders.LeafID(2*(n/2/16)), builders.LeafID(2*(n/2/16)+1)
		updates := [2]*builders.CNRWrapper{
			provider(target).ResourceVersion("a"),
			provider(target).ResourceVersion("b").UseNIC(nicA0, "ns/p/u"),
		}
		var versions [2]*v1alpha1.CustomNodeResource
		for k, u := range updates {
			cnr := u.Obj()
			// Keep the node under its generated leaves.
			for _, p := range cnr.Spec.NodeResourceProperties {
				switch p.PropertyValues[0] {
				case "leafA":
					p.PropertyValues[0] = leafA
				case "leafB":
					p.PropertyValues[0] = leafB
				}
			}
			versions[k] = cnr
		}
		c.UpsertCNR(versions[1])
		f := c.Snapshot()
		if node, _ := f.Node(target); node.Zones[0].NICs[0].Free {
			b.Fatal("update not applied")
		}
		if l, _ := f.Leaf(topology.S0ID(leafA)); len(l.Slots) != 16 {
			b.Fatalf("leaf has %d slots, want 16", len(l.Slots))
		}
		b.ReportAllocs()
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			c.UpsertCNR(versions[i%2])
		}
	})
}
