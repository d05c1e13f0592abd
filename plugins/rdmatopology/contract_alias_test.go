package rdmatopology

import (
	"testing"

	"k8s.io/client-go/tools/record"
	"volcano.sh/volcano/pkg/scheduler/api"
)

// TestAliasWarningsOnce: an overridden Volcano annotation is reported once
// per PodGroup, again only when what is overridden changes.
func TestAliasWarningsOnce(t *testing.T) {
	rec := record.NewFakeRecorder(10)
	job := &api.JobInfo{UID: "ns/pg", Namespace: "ns", Name: "pg", PodGroup: &api.PodGroup{}}
	job.PodGroup.Name = "pg"
	var w aliasWarnings
	w.warn(rec, job, []string{`volcano.sh/network-topology-mode="soft" (rdmatopo.io/mode="hard" wins)`})
	w.warn(rec, job, []string{`volcano.sh/network-topology-mode="soft" (rdmatopo.io/mode="hard" wins)`})
	w.warn(rec, job, []string{`volcano.sh/network-topology-highest-tier="2" (rdmatopo.io/highest-tier="s0" wins)`})
	close(rec.Events)
	var got []string
	for e := range rec.Events {
		got = append(got, e)
	}
	if len(got) != 2 {
		t.Fatalf("events %q, want 2 (one per distinct override)", got)
	}
}
