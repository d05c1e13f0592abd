// Package simjson is the JSON shape of a simulation's outcome: what
// `rdmatopo simulate -o json` prints, and what `kubectl rdmatopo simulate
// -o json|yaml` prints beside the live cluster's context. One shape, so the
// two commands cannot drift apart. Field order is the documented one
// (docs/cli.md); lists and objects are never null. The types only: the
// simulator converts its report (sim.JSONReport), and kubectl-rdmatopo
// reads what kubectl-rdmatopo-simulate prints without linking the
// simulator.
package simjson

import "github.com/rdmatopo/rdmatopo/core/ledger"

// Pod is where one simulated pod landed.
type Pod struct {
	Namespace string   `json:"namespace"`
	Name      string   `json:"name"`
	Job       string   `json:"job"`
	Node      string   `json:"node"`
	NUMA      int      `json:"numa"`
	NICs      []string `json:"nics"`
	S0        []string `json:"s0"`
	S1        []string `json:"s1"`
	// Annotations are the keys the scheduler wrote on the pod
	// (rdmatopo.io/* and katalyst.kubewharf.io/numa_bind_result).
	Annotations map[string]string `json:"annotations"`
	// Evicted is true for a pod evicted during the run (its node is then
	// empty).
	Evicted bool `json:"evicted"`
	// Rank is the pod's rank in its gang (-1: an invalid rdmatopo.io/rank).
	Rank int `json:"rank"`
}

// Job is the outcome of one simulated gang.
type Job struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	MinMember int32  `json:"minMember"`
	Placed    bool   `json:"placed"`
	BoundPods int    `json:"boundPods"`
	// GangPlacement is the tier, S0s and S1s its bound pods span.
	ledger.GangPlacement
	Reason string `json:"reason"`
	// WaitedSeconds is the simulated time from the job's first failed
	// attempt to its placement (0 when placed at once), or until the last
	// cycle for a job still waiting.
	WaitedSeconds float64 `json:"waitedSeconds"`
	// RingCrossings counts the leaf changes along the rank ring of its
	// bound pods.
	RingCrossings int `json:"ringCrossings"`
	// Segments, with rdmatopo.io/segment-size, are its blocks of ranks
	// and their leaves.
	Segments []Segment `json:"segments,omitempty"`
}

// Segment is one block of a gang with segments.
type Segment struct {
	Ranks []int    `json:"ranks"`
	S0    []string `json:"s0"`
}

// Eviction is a pod evicted during the run.
type Eviction struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	Job       string `json:"job"`
	// Preemptor is the gang ("namespace/podgroup") the pod was evicted
	// for.
	Preemptor string `json:"preemptor"`
}

// Report is a simulation's outcome.
type Report struct {
	Pods      []Pod      `json:"pods"`
	Jobs      []Job      `json:"jobs"`
	Evictions []Eviction `json:"evictions"`
}
