package rdmatopology

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"

	"github.com/rdmatopo/rdmatopo/internal/version"
)

var (
	// buildInfo is 1, labelled with what the scheduler binary is.
	buildInfo = promauto.NewGaugeVec(prometheus.GaugeOpts{
		Subsystem: metricsSubsystem,
		Name:      "build_info",
		Help:      "Always 1; labels: rdmatopo version, git commit and the Volcano version compiled in.",
	}, []string{"version", "git_sha", "volcano_version"})

	// informerSynced is 1 once the informer's cache has synced, 0 before.
	informerSynced = promauto.NewGaugeVec(prometheus.GaugeOpts{
		Subsystem: metricsSubsystem,
		Name:      "informer_synced",
		Help:      "1 when the rdma-topology informer's cache has synced with the API server, 0 while it has not.",
	}, []string{"resource"})
)

// Informer resources reported by rdmatopo_informer_synced.
const informerCNR = "customnoderesources"

func init() {
	v := version.Get()
	buildInfo.WithLabelValues(v.Version, v.GitCommit, v.Volcano).Set(1)
	// Not synced until an informer reports it (the first session starts it).
	informerSynced.WithLabelValues(informerCNR).Set(0)
}

// observeSynced sets rdmatopo_informer_synced for resource to 0, then to 1
// once synced reports true; it stops early when stop closes.
func observeSynced(resource string, synced func() bool, stop <-chan struct{}) {
	g := informerSynced.WithLabelValues(resource)
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
