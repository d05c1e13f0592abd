package topologyallocate

import (
	"errors"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"
	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
	"volcano.sh/volcano/pkg/scheduler/api"
	"volcano.sh/volcano/pkg/scheduler/framework"

	"github.com/rdmatopo/rdmatopo/framework/topology"
	"github.com/rdmatopo/rdmatopo/plugins/rdmatopology"
)

// confValid is 1 while the scheduler conf gives topology-allocate a working
// rdma-topology plugin, 0 while it does not (the plugin is missing from the
// tiers, or its arguments are invalid) and RDMA pods are therefore refused.
// It has no series until the first session checks the conf (a vector
// without labels): a standby, which runs no session, exports none rather
// than a 0 an alert would read as a broken conf.
var confValid = promauto.NewGaugeVec(prometheus.GaugeOpts{
	Subsystem: "rdmatopo",
	Name:      "conf_valid",
	Help:      "1 when the scheduler conf enables a valid rdma-topology plugin for topology-allocate, 0 when RDMA pods are refused for want of it.",
}, nil)

// Why RDMA pods are refused in a session without the plugin's state.
var (
	// ErrNoTopologyPlugin: the conf's tiers do not enable rdma-topology.
	ErrNoTopologyPlugin = errors.New("the scheduler conf enables topology-allocate without the " + rdmatopology.PluginName +
		" plugin: pods requesting RDMA are not placed")
	// ErrTopologyPluginInvalid: rdma-topology is enabled but its arguments
	// do not parse, so it has no session state.
	ErrTopologyPluginInvalid = errors.New("the " + rdmatopology.PluginName +
		" plugin's arguments are invalid: pods requesting RDMA are not placed")
)

// checkConf sets the rdmatopo_conf_valid gauge for the session and returns
// why RDMA pods must be refused in it (nil when the plugin is there). A
// refusal is logged once per session.
func checkConf(ssn *framework.Session, topo *rdmatopology.Session) error {
	if topo != nil {
		confValid.WithLabelValues().Set(1)
		return nil
	}
	confValid.WithLabelValues().Set(0)
	err := ErrNoTopologyPlugin
	for _, tier := range ssn.Tiers {
		for _, p := range tier.Plugins {
			if p.Name == rdmatopology.PluginName {
				err = ErrTopologyPluginInvalid
			}
		}
	}
	klog.ErrorS(err, "Scheduler conf cannot place RDMA pods; other pods are scheduled as allocate does",
		"action", ActionName, "plugin", rdmatopology.PluginName, "resource", topology.DefaultRDMAResource)
	return err
}

// requestsRDMA reports whether a task asks for the default RDMA resource
// (what the plugin would count, had it arguments to say otherwise).
func requestsRDMA(task *api.TaskInfo) bool {
	return task.InitResreq != nil && task.InitResreq.ScalarResources[v1.ResourceName(topology.DefaultRDMAResource)] > 0
}
