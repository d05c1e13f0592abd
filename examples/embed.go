// Package examples embeds the sample inputs of `rdmatopo simulate`: the
// cluster and workload it runs on when given no --cluster or --workload.
// The YAML files next to this one are also meant to be read, edited and fed
// back with those flags (or applied to a real cluster, for the jobs).
package examples

import (
	// Imported for its side effect: it enables the go:embed directives.
	_ "embed"
)

//go:generate go run ./gen

// ClusterFile and WorkloadFile name the embedded defaults in messages.
const (
	ClusterFile  = "examples/cluster.yaml"
	WorkloadFile = "examples/workload.yaml"
)

// Cluster is cluster.yaml: two miniPods of eight nodes (Nodes and KCNRs)
// and the pods of an older job already running on them.
//
//go:embed cluster.yaml
var Cluster []byte

// Workload is workload.yaml: six gangs, one per case rdmatopo handles.
//
//go:embed workload.yaml
var Workload []byte
