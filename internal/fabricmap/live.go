package fabricmap

import (
	"fmt"
	"time"

	"github.com/rdmatopo/rdmatopo/internal/fabricview"
	"github.com/rdmatopo/rdmatopo/internal/live"
)

// JobLabel is a live job's legend text: its state, pods bound, and the
// reason a waiting gang gives.
func JobLabel(j live.Job) string {
	state := "waiting"
	switch {
	case j.Placed && j.Tier != "":
		state = "tier " + j.Tier
	case j.Placed && j.RDMA:
		state = "placed"
	case j.Placed:
		state = "placed, no RDMA"
	}
	label := fmt.Sprintf("%s: %s, %d/%d pods bound", j.Key(), state, j.Bound, j.MinMember)
	if !j.Placed && j.Reason != "" {
		label += " - " + j.Reason
	}
	return label
}

// FromLive is the model of a live cluster: its jobs in order, and the
// NICs the view finds held (holders that are no listed job, such as pods
// without a PodGroup or pods gone, in the colour of other holders).
func FromLive(v *fabricview.View, jobs []live.Job, at time.Time) Model {
	m := Model{
		Title:      "Live RDMA fabric at " + at.UTC().Format(time.RFC3339) + ": S1 > S0 leaf > node/NUMA > NICs",
		NICs:       map[string]NICUse{},
		OtherLabel: "NIC held by a pod of no listed job",
		OtherTitle: "no listed job",
	}
	listed := map[string]bool{}
	for _, j := range jobs {
		listed[j.Key()] = true
		m.Jobs = append(m.Jobs, Job{Key: j.Key(), ID: j.UID, Created: j.Created, Label: JobLabel(j)})
	}
	for key, job := range v.Holders() {
		use := NICUse{Job: job, Pod: job}
		if !listed[job] {
			use.Job = ""
		}
		m.NICs[key] = use
	}
	AssignColors(m.Jobs)
	return m
}

// Colors maps each job of a model to its colour in the map.
func Colors(m Model) map[string]string {
	out := map[string]string{}
	for _, j := range m.Jobs {
		if _, dup := out[j.Key]; !dup {
			out[j.Key] = j.Color()
		}
	}
	return out
}
