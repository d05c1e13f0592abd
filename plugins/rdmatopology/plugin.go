// Package rdmatopology is the rdma-topology Volcano session plugin. It keeps
// the NIC ledger in step with the session (Allocate / Deallocate event
// handlers, so a discarded Statement releases every NIC), filters nodes by
// NUMA-aligned NIC fit and hard-mode tier limits, prefers the nodes a gang's
// plan chose, vetoes partial gangs, writes the rdmatopo.io/* annotations that
// bind with each pod, and reports why a gang waits on its PodGroup.
//
// The gang planner itself is core/placement; the topology-allocate
// action drives it through SessionState (see ForSession).
package rdmatopology

import (
	"errors"

	"k8s.io/klog/v2"
	"volcano.sh/volcano/pkg/scheduler/api"
	"volcano.sh/volcano/pkg/scheduler/framework"
	"volcano.sh/volcano/pkg/scheduler/plugins/util"

	"github.com/rdmatopo/rdmatopo/core/pluginargs"
	"github.com/rdmatopo/rdmatopo/core/topology"
)

// PluginName is the name of the plugin in volcano-scheduler.conf.
const PluginName = pluginargs.PluginName

// Reasons this plugin gives in predicate failures.
const (
	// ErrReasonNoNICFit: no NUMA zone of the node has the free GPUs and NICs.
	ErrReasonNoNICFit = "no NUMA zone with enough free GPUs and RDMA NICs"
	// ErrReasonTierLimit: the node would widen a hard-mode gang beyond its
	// highest tier.
	ErrReasonTierLimit = "node is outside the gang's hard topology tier"
)

// plugin is one session's instance.
type plugin struct {
	rt      *Runtime
	args    *Args
	argsErr error
}

var _ framework.Plugin = (*plugin)(nil)

// Builder returns the plugin builder Volcano calls every session (the
// registry registers it under PluginName): each plugin it builds keeps its
// state in rt. Invalid arguments are reported at session open and make the
// plugin refuse every RDMA pod (rather than silently use defaults).
func Builder(rt *Runtime) framework.PluginBuilder {
	return func(arguments framework.Arguments) framework.Plugin {
		args, err := ParseArgs(arguments)
		if err != nil {
			klog.ErrorS(err, "Invalid rdma-topology arguments; RDMA pods will not be scheduled")
		}
		return &plugin{rt: rt, args: args, argsErr: err}
	}
}

func (p *plugin) Name() string { return PluginName }

// Why an action finds no plugin state in a session.
var (
	// ErrNoPlugin: the conf's tiers do not enable rdma-topology.
	ErrNoPlugin = errors.New("the scheduler conf enables topology-allocate without the " + PluginName +
		" plugin: pods requesting RDMA are not placed")
	// ErrInvalidArgs: rdma-topology is enabled but its arguments do not
	// parse, so it has no session state.
	ErrInvalidArgs = errors.New("the " + PluginName +
		" plugin's arguments are invalid: pods requesting RDMA are not placed")
)

// ForSession returns the plugin's state in ssn, or nil and why it has none:
// ErrNoPlugin when the session's tiers do not enable the plugin,
// ErrInvalidArgs when they do but its arguments are invalid.
func (rt *Runtime) ForSession(ssn *framework.Session) (*SessionState, error) {
	if s := rt.session(string(ssn.UID)); s != nil {
		return s, nil
	}
	for _, tier := range ssn.Tiers {
		for _, p := range tier.Plugins {
			if p.Name == PluginName {
				return nil, ErrInvalidArgs
			}
		}
	}
	return nil, ErrNoPlugin
}

func (p *plugin) OnSessionOpen(ssn *framework.Session) {
	if p.argsErr != nil {
		err := p.argsErr
		ssn.AddPredicateFn(PluginName, func(task *api.TaskInfo, node *api.NodeInfo) error {
			if requestsRDMA(task, topology.DefaultRDMAResource) {
				return api.NewFitError(task, node, "rdma-topology arguments are invalid: "+err.Error())
			}
			return nil
		})
		return
	}
	p.rt.logArgs(p.args)
	s := openSession(p.rt, ssn, p.args)
	s.holdFailedBinds()
	s.applyHolds()
	s.holdReplacements()
	s.rt.addSession(string(ssn.UID), s)

	ssn.AddPredicateFn(PluginName, s.predicateWithHolds)
	ssn.AddNodeOrderFn(PluginName, s.nodeOrder)
	ssn.AddJobReadyFn(PluginName, func(obj interface{}) bool {
		job, ok := obj.(*api.JobInfo)
		return !ok || s.jobReady(job)
	})
	ssn.AddJobPipelinedFn(PluginName, func(obj interface{}) int {
		job, ok := obj.(*api.JobInfo)
		if ok && s.isRDMAJob(job) && !s.pipelineAllowed(job.UID) {
			// A gang that must be whole never holds resources while it
			// waits for others to be released (except where
			// topology-preempt pipelines it onto its victims' resources).
			return util.Reject
		}
		return util.Abstain
	})
	ssn.AddEventHandler(&framework.EventHandler{
		AllocateFunc:   func(e *framework.Event) { s.allocate(e.Task) },
		DeallocateFunc: func(e *framework.Event) { s.deallocate(e.Task) },
	})
}

func (p *plugin) OnSessionClose(ssn *framework.Session) {
	if s := p.rt.removeSession(string(ssn.UID)); s != nil {
		s.close()
	}
	if cs := p.rt.claimsStore; cs != nil {
		cs.save(p.rt.preemption.Claims.Values())
	}
}
