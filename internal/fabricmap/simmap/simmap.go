// Package simmap draws a simulation's outcome on the fabric map
// (fabricmap): the model of `rdmatopo simulate --map` and `kubectl
// rdmatopo simulate --map`. Apart from fabricmap because it reads the
// simulator's report, which links Volcano's scheduler; the live map does
// not.
package simmap

import (
	"fmt"

	"github.com/rdmatopo/rdmatopo/internal/fabricmap"
	"github.com/rdmatopo/rdmatopo/internal/fabricview"
	"github.com/rdmatopo/rdmatopo/internal/sim"
	"github.com/rdmatopo/rdmatopo/internal/sim/nodeagent"
)

// FromSim is the model of a simulation's outcome: the workload's jobs in
// report order, NICs held by the bound pods (pods that ran before the
// simulation in the colour of other holders).
func FromSim(rep *sim.Report, pods []sim.PodState) fabricmap.Model {
	m := fabricmap.Model{
		Title:      fmt.Sprintf("RDMA fabric after %d scheduling cycles: S1 > S0 leaf > node/NUMA > NICs", rep.Cycles),
		NICs:       map[string]fabricmap.NICUse{},
		OtherLabel: "NIC of a pod that ran before the simulation",
		OtherTitle: "running before",
	}
	inReport := map[string]bool{}
	for _, j := range rep.Jobs {
		state := "waiting"
		switch {
		case j.Placed && j.Tier != "":
			state = "tier " + j.Tier
		case j.Placed:
			state = "placed, no RDMA"
		}
		key := j.Namespace + "/" + j.Name
		inReport[key] = true
		m.Jobs = append(m.Jobs, fabricmap.Job{Key: key, Label: fmt.Sprintf("%s: %s, %d/%d pods bound", key, state, j.BoundPods, j.MinMember)})
	}
	for _, ps := range pods {
		p := ps.Pod
		if p.Spec.NodeName == "" || ps.Evicted != "" {
			continue
		}
		use := fabricmap.NICUse{Job: fabricview.JobOf(p), Pod: p.Namespace + "/" + p.Name}
		if !ps.Workload || !inReport[use.Job] {
			use.Job = ""
		}
		for _, nic := range nodeagent.AnnotatedNICs(p) {
			m.NICs[p.Spec.NodeName+"/"+string(nic)] = use
		}
	}
	fabricmap.AssignColors(m.Jobs)
	return m
}
