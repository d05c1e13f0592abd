// Package bench measures placement quality and scheduling cost of
// rdmatopo's scheduler conf against stock Volcano v1.10, side by side in one
// process, on one generated trace: a cluster of provider, rail or mixed
// cabling (NewFabricCluster) with part of its capacity already taken, and
// gangs arriving over time and finishing after a random number of cycles.
//
// Both confs run in the same session loop (internal/sim, on Volcano's mock
// scheduler cache). For every placed multi-pod RDMA gang the package counts
// the S0 leaf switches its NICs span and compares that with the fewest S0s
// the gang could have used at the moment it was placed, computed by an
// exact search written apart from the placement planner (oracle.MinLeaves,
// package oracle) on the benchmark's own record of the fabric state.
package bench

import (
	"fmt"

	"github.com/rdmatopo/rdmatopo/config"
	"github.com/rdmatopo/rdmatopo/internal/sim"
	"github.com/rdmatopo/rdmatopo/internal/testing/builders"
)

// Conf names, as they appear in the JSON output.
const (
	ConfRDMATopo = "rdmatopo"
	ConfBaseline = "baseline"
)

// BaselineConfText is stock Volcano v1.10's scheduler conf: topology-blind
// allocate with gang, predicates, proportion, nodeorder and binpack.
const BaselineConfText = `actions: "enqueue, allocate, backfill"
tiers:
- plugins:
  - name: priority
  - name: gang
    enablePreemptable: false
  - name: conformance
- plugins:
  - name: predicates
  - name: proportion
  - name: nodeorder
  - name: binpack
`

// RDMATopoConfText returns the project's scheduler conf (config/), which
// reads S1 (miniPod) membership from the label the generated nodes carry;
// Confs checks that it does.
func RDMATopoConfText() (string, error) {
	return config.SchedulerConf, nil
}

// Confs parses both confs, keyed by ConfRDMATopo and ConfBaseline.
func Confs() (map[string]*sim.Conf, error) {
	text, err := RDMATopoConfText()
	if err != nil {
		return nil, err
	}
	ours, err := sim.ParseConf(text)
	if err != nil {
		return nil, fmt.Errorf("%s conf: %w", ConfRDMATopo, err)
	}
	if !ours.TopologyPlugin || ours.Topology.S1NodeLabel != builders.S1Label {
		return nil, fmt.Errorf("%s conf: rdma-topology is not configured with s1NodeLabel %s", ConfRDMATopo, builders.S1Label)
	}
	base, err := sim.ParseConf(BaselineConfText)
	if err != nil {
		return nil, fmt.Errorf("%s conf: %w", ConfBaseline, err)
	}
	return map[string]*sim.Conf{ConfRDMATopo: ours, ConfBaseline: base}, nil
}

// Extended resources of the generated cluster.
const (
	gpuResource  = builders.GPUResource
	rdmaResource = builders.RDMAResource
)
