package integration

import (
	"context"
	"fmt"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rdmatopo/rdmatopo/internal/testing/builders"
)

// TestDeletedNodeLeavesMetrics: an RDMA node without a KCNR shows in the
// scheduler's labelled gauges (its NICs topology-unknown for NoKCNR, free
// under its S1) while it exists, and its series leave once the Node is
// deleted; rdmatopo_topology_unknown_nics keeps a series per reason, 0.
func TestDeletedNodeLeavesMetrics(t *testing.T) {
	e := requireEnv(t)
	ctx := context.Background()
	f := newFabric(t, e)
	const s1 = "minipod-stale"
	node := builders.MakeNode("stale-metrics-n1").Shared().S1(s1).GPU(8).RDMA(4).CPU("64").Obj()
	f.createNode(ctx, node)
	deleted := false
	t.Cleanup(func() {
		if !deleted {
			_ = e.Kube.CoreV1().Nodes().Delete(context.Background(), node.Name, metav1.DeleteOptions{})
		}
	})
	sched := &replica{proc: e.scheduler, metrics: e.schedulerMetrics}
	gauges := func() (free float64, freeOK bool, noKCNR float64, noKCNROK bool, err error) {
		s, err := sched.scrape(ctx)
		if err != nil {
			return 0, false, 0, false, err
		}
		free, freeOK = value(s, "rdmatopo_free_nics", map[string]string{"s1": s1})
		noKCNR, noKCNROK = value(s, "rdmatopo_topology_unknown_nics", map[string]string{"reason": "NoKCNR"})
		return free, freeOK, noKCNR, noKCNROK, nil
	}
	eventually(t, 60*time.Second, func() (bool, string) {
		free, freeOK, unknown, _, err := gauges()
		if err != nil {
			return false, err.Error()
		}
		return freeOK && free == 4 && unknown >= 4, fmt.Sprintf("free_nics{s1=%q} %v (%v), topology_unknown_nics{reason=NoKCNR} %v", s1, free, freeOK, unknown)
	})
	if err := e.Kube.CoreV1().Nodes().Delete(ctx, node.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	deleted = true
	eventually(t, 60*time.Second, func() (bool, string) {
		free, freeOK, unknown, unknownOK, err := gauges()
		if err != nil {
			return false, err.Error()
		}
		return !freeOK && unknownOK && unknown == 0, fmt.Sprintf("after the delete: free_nics{s1=%q} %v (exported %v), topology_unknown_nics{reason=NoKCNR} %v (exported %v)", s1, free, freeOK, unknown, unknownOK)
	})
}
