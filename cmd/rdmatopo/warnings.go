package main

import (
	"fmt"
	"io"

	"github.com/rdmatopo/rdmatopo/core/topology"
	"github.com/rdmatopo/rdmatopo/internal/workload"
)

// topologyProblems reads a cluster's Nodes and KCNRs as the scheduler does
// (with the conf's rdma-topology resources and S1 label) and returns every
// topology problem found, sorted by node, code, NIC and message. A node with
// problems still schedules: the NICs at fault are topology-unknown (each a
// leaf of its own) or, for a NIC whose name cannot be annotated, not handed
// out.
func topologyProblems(cfg topology.Config, c *workload.Cluster) []topology.Reason {
	return c.Fabric(cfg).Reasons()
}

// writeProblems prints one line per problem,
//
//	LEVEL: SOURCE: node N [NIC X]: CODE: message naming the field
//
// where LEVEL is "warning" or "error" and SOURCE names the cluster file.
func writeProblems(w io.Writer, level, source string, problems []topology.Reason) {
	for _, r := range problems {
		fmt.Fprintf(w, "%s: %s: %s\n", level, source, oneLine(r.String()))
	}
}
