package topologyallocate

import (
	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
	"volcano.sh/volcano/pkg/scheduler/api"

	"github.com/rdmatopo/rdmatopo/core/topology"
	"github.com/rdmatopo/rdmatopo/plugins/rdmatopology/schedmetrics"
)

// confValid is 1 while the scheduler conf gives topology-allocate a working
// rdma-topology plugin, 0 while it does not (the plugin is missing from the
// tiers, or its arguments are invalid) and RDMA pods are therefore refused.
// It has no series until the first session checks the conf (a vector
// without labels): a standby, which runs no session, exports none rather
// than a 0 an alert would read as a broken conf.
var confValid = schedmetrics.GaugeVec("conf_valid",
	"1 when the scheduler conf enables a valid rdma-topology plugin for topology-allocate, 0 when RDMA pods are refused for want of it.")

// checkConf sets the rdmatopo_conf_valid gauge for the session and returns
// why RDMA pods must be refused in it (nil when the plugin is there, err
// being why the runtime has no plugin state for the session). A refusal is
// logged once per session.
func checkConf(err error) error {
	if err == nil {
		confValid.WithLabelValues().Set(1)
		return nil
	}
	confValid.WithLabelValues().Set(0)
	klog.ErrorS(err, "Scheduler conf cannot place RDMA pods; other pods are scheduled as allocate does",
		"action", ActionName, "resource", topology.DefaultRDMAResource)
	return err
}

// requestsRDMA reports whether a task asks for the default RDMA resource
// (what the plugin would count, had it arguments to say otherwise).
func requestsRDMA(task *api.TaskInfo) bool {
	return task.InitResreq != nil && task.InitResreq.ScalarResources[v1.ResourceName(topology.DefaultRDMAResource)] > 0
}
