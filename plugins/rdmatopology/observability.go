package rdmatopology

import (
	"time"

	"github.com/rdmatopo/rdmatopo/plugins/rdmatopology/schedmetrics"
)

var (
	// buildInfo is 1, labelled with what the scheduler binary is.
	buildInfo = schedmetrics.GaugeVec("build_info",
		"Always 1; labels: rdmatopo version, git commit and the Volcano version compiled in.", "version", "git_sha", "volcano_version")

	// informerSynced is 1 once the informer's cache has synced, 0 before.
	informerSynced = schedmetrics.GaugeVec("informer_synced",
		"1 when the rdma-topology informer's cache has synced with the API server, 0 while it has not.", "resource")

	// leader is 1 while this process schedules (it holds the leader lease,
	// or runs without leader election), 0 while it is a standby.
	leader = schedmetrics.Gauge("leader",
		"1 while this scheduler process schedules (it holds the leader lease, or leader election is off), 0 while it is a standby waiting for the lease.")
)

// SetLeader sets rdmatopo_leader. A standby runs no session, so it starts
// no informer and exports none of the gauges a session sets
// (rdmatopo_informer_synced, rdmatopo_conf_valid, ...): rdmatopo_leader is
// how it tells it is there.
func SetLeader(on bool) {
	v := 0.0
	if on {
		v = 1
	}
	leader.Set(v)
}

// Informer resources reported by rdmatopo_informer_synced.
const informerCNR = "customnoderesources"

// SetBuildInfo sets rdmatopo_build_info{version, git_sha, volcano_version}
// to 1: the binary that registers the plugin says what it is. (There is no
// rdmatopo_informer_synced series until the first session starts the
// informer: a standby, which never does, would otherwise report a cache it
// does not keep as not synced.)
func SetBuildInfo(version, gitSHA, volcanoVersion string) {
	buildInfo.WithLabelValues(version, gitSHA, volcanoVersion).Set(1)
}

// observeSynced sets rdmatopo_informer_synced for resource: 1 when synced
// reports true already (called after the informer's first wait, so a cache
// that synced in time never shows 0), else 0 until it does; it stops early
// when stop closes.
func observeSynced(resource string, synced func() bool, stop <-chan struct{}) {
	g := informerSynced.WithLabelValues(resource)
	if synced() {
		g.Set(1)
		return
	}
	g.Set(0)
	go func() {
		t := time.NewTicker(time.Second)
		defer t.Stop()
		for !synced() {
			select {
			case <-stop:
				return
			case <-t.C:
			}
		}
		g.Set(1)
	}()
}
