// Package replay runs a trace (package trace) through Volcano sessions
// (internal/sim) under one scheduler conf, rdmatopo's or stock Volcano's,
// with the simulated node agent, and records what each gang got: its S0s
// as planned and as the agent realized them, graded against the optimum
// (package grade), scheduling cost, and, under high load, preemption's
// outcomes (evictions, futile ones, queues, starved gangs).
package replay

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

// ConfOrder is the order the confs replay the trace in. rdmatopo goes first,
// so one-time warm-up costs in Volcano's packages count against it.
var ConfOrder = []string{ConfRDMATopo, ConfBaseline}

// LoadConfs parses the confs of the high-load run: rdmatopo's (whose
// actions include topology-preempt and topology-reclaim) and stock
// Volcano's with preempt and reclaim.
func LoadConfs() (map[string]*sim.Conf, error) {
	confs, err := Confs()
	if err != nil {
		return nil, err
	}
	base, err := sim.ParseConf(BaselinePreemptConfText)
	if err != nil {
		return nil, fmt.Errorf("%s conf: %w", ConfBaseline, err)
	}
	confs[ConfBaseline] = base
	return confs, nil
}
