package main

import (
	"k8s.io/client-go/tools/leaderelection"

	"github.com/rdmatopo/rdmatopo/plugins/rdmatopology"
)

// leaderMetrics feeds rdmatopo_leader from client-go's leader election,
// which Volcano's app.Run drives: On when this process acquires the lease,
// Off when it is created as a candidate and when it stops leading (Volcano
// then exits).
type leaderMetrics struct{}

func (leaderMetrics) NewLeaderMetric() leaderelection.LeaderMetric { return leaderMetrics{} }

func (leaderMetrics) On(string)                { rdmatopology.SetLeader(true) }
func (leaderMetrics) Off(string)               { rdmatopology.SetLeader(false) }
func (leaderMetrics) SlowpathExercised(string) {}

// watchLeadership makes rdmatopo_leader follow the process's role: with
// leader election on, the lease decides (0 until acquired); with it off,
// the process schedules from the start.
func watchLeadership(leaderElect bool) {
	if !leaderElect {
		rdmatopology.SetLeader(true)
		return
	}
	rdmatopology.SetLeader(false)
	leaderelection.SetProvider(leaderMetrics{})
}
