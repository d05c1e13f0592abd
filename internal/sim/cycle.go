// A scheduling cycle: a Volcano session run over the simulated cluster, and
// what the simulated API server and node agents then do with its binds,
// evictions, status writes and patches.

package sim

import (
	"context"
	"fmt"
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"
	schedulingscheme "volcano.sh/apis/pkg/apis/scheduling/scheme"
	schedulingv1beta1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"
	"volcano.sh/volcano/cmd/scheduler/app/options"
	"volcano.sh/volcano/pkg/scheduler/api"
	volcanoconf "volcano.sh/volcano/pkg/scheduler/conf"
	"volcano.sh/volcano/pkg/scheduler/framework"

	"github.com/rdmatopo/rdmatopo/plugins/rdmatopology"
	"github.com/rdmatopo/rdmatopo/registry"
)

// Run runs cycles until one binds and evicts nothing while no max-wait
// deadline is pending (PendingDeadline), or maxCycles cycles ran
// (maxCycles <= 0: no limit). It returns the reports of every cycle, the
// last one included; running out of cycles while still binding is an
// error, while only waiting for a deadline is not (PendingDeadline then
// still reports it).
func (s *Simulator) Run(maxCycles int) ([]*CycleReport, error) {
	var reports []*CycleReport
	for i := 0; maxCycles <= 0 || i < maxCycles; i++ {
		rep, err := s.RunCycle()
		if err != nil {
			return reports, err
		}
		reports = append(reports, rep)
		if !rep.Progress() {
			if _, waiting := s.PendingDeadline(); !waiting || i+1 == maxCycles {
				return reports, nil
			}
		}
	}
	return reports, fmt.Errorf("still binding after %d cycles", maxCycles)
}

// RunCycle runs one scheduling cycle: a session with every action of the
// conf, then the write-back of binds, evictions and status. A panic inside
// Volcano or a plugin is returned as an error.
func (s *Simulator) RunCycle() (rep *CycleReport, err error) {
	cycleMu.Lock()
	defer cycleMu.Unlock()
	s.cycle++
	s.tick()
	s.events.setCycle(s.cycle)
	s.install()
	rep = &CycleReport{Cycle: s.cycle}
	s.endTerminations(rep)
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("scheduling cycle %d panicked: %v", s.cycle, r)
		}
	}()
	start, startCPU := time.Now(), processCPU()
	ssn := framework.OpenSession(s.cache, s.tiers, s.conf.Configurations)
	for _, a := range s.actions() {
		a.Execute(ssn)
	}
	framework.CloseSession(ssn)
	rep.Duration = time.Since(start)
	rep.CPU = processCPU() - startCPU

	s.applyBinds(rep)
	// Evictions first: a pod update (a patch, the node agent's report)
	// makes the cache rebuild the task from the pod, which would forget that
	// the task is Releasing.
	s.applyEvictions(rep)
	s.applyPatches(rep)
	s.confirmBinds(rep)
	s.applyStatus()
	s.trackWaits()
	if s.opts.OnCycle != nil {
		s.opts.OnCycle(rep)
	}
	return rep, nil
}

// install sets the process-wide state a session reads as vc-scheduler
// sets it (caller holds cycleMu):
//   - Volcano's conf.EnabledActionMap: the names of the conf's actions,
//     made afresh before every session as Volcano's Scheduler.runOnce
//     does; allocate and topology-allocate leave pending jobs to enqueue
//     when it is on;
//   - Volcano's options.ServerOpts: the options vc-scheduler's main
//     registers (NewServerOption, AddFlags, RegisterOptions) with the
//     flags' defaults, but for Options.NodesToFindPercent; options a test
//     or another simulator installed do not leak into this one;
//   - rdmatopo's plugin builder and actions, registered over this
//     simulator's runtime (one registry.Set per runtime), as vc-scheduler's
//     main registers them over its own; Volcano's actions and plugins are
//     registered by their imports.
func (s *Simulator) install() {
	enabled := make(map[string]bool, len(s.conf.Actions))
	for _, a := range s.conf.Actions {
		enabled[a.Name()] = true
	}
	volcanoconf.EnabledActionMap = enabled
	options.ServerOpts = s.serverOpts
	if s.installed == nil {
		s.installed = registry.New(s.runtime)
	}
	s.installed.Install()
}

// actions returns the conf's actions as registered now: rdmatopo's over
// this simulator's runtime (install), Volcano's as they are.
func (s *Simulator) actions() []framework.Action {
	out := make([]framework.Action, 0, len(s.conf.Actions))
	for _, a := range s.conf.Actions {
		if cur, ok := framework.GetAction(a.Name()); ok {
			a = cur
		}
		out = append(out, a)
	}
	return out
}

// newRuntime returns a fresh rdma-topology runtime on the simulated clock,
// whose pod patches the simulator applies after the cycle; the simulator
// feeds its fabric.
func (s *Simulator) newRuntime(opts ...rdmatopology.Option) *rdmatopology.Runtime {
	return rdmatopology.NewRuntime(s.conf.Topology, append([]rdmatopology.Option{rdmatopology.WithClock(s.Now),
		rdmatopology.WithPodPatcher(s.queuePatch), rdmatopology.WithRecorder(s.events)}, opts...)...)
}

// applyBinds hands the cycle's bind requests to the cache's binder (as
// Volcano's bind worker would), then writes each outcome back: a bound pod
// gets its node, the annotations it carried at bind time (the API server
// merges a Binding's annotations into the pod) and phase Running; a pod
// whose bind failed is re-added as pending, as a resync from the API
// server would.
func (s *Simulator) applyBinds(rep *CycleReport) {
	var tasks []*api.TaskInfo
	for drained := false; !drained; {
		select {
		case t := <-s.cache.BindFlowChannel:
			tasks = append(tasks, t)
		default:
			drained = true
		}
	}
	if len(tasks) > 0 {
		s.cache.Bind(tasks)
	}
	for _, rec := range s.binder.take() {
		key := rec.Pod.Namespace + "/" + rec.Pod.Name
		e, ok := s.pods[key]
		if !ok || e.deleted {
			continue
		}
		old := e.pod
		if rec.Err != nil {
			rep.FailedBinds = append(rep.FailedBinds, rec)
			s.cache.DeletePod(old)
			s.cache.AddPod(s.podLists.copyPod(old))
			continue
		}
		bound := s.podLists.copyPod(old)
		for k, v := range rec.Pod.Annotations {
			if bound.Annotations == nil {
				bound.Annotations = map[string]string{}
			}
			bound.Annotations[k] = v
		}
		bound.Spec.NodeName = rec.Node
		bound.Status.Phase = corev1.PodRunning
		bound.Status.Conditions = []corev1.PodCondition{{
			Type: corev1.PodScheduled, Status: corev1.ConditionTrue,
		}}
		bound.ResourceVersion = s.nextRV()
		s.cache.UpdatePod(old, s.podLists.copyPod(bound))
		e.pod, e.boundCycle = bound, s.cycle
		rep.Binds = append(rep.Binds, rec)
	}
}

// applyEvictions deletes the pods the cycle evicted: the tasks the cache
// now holds as Releasing whose pods are not already terminating. With
// Options.EvictionGrace they terminate first: the pod keeps its node with a
// deletionTimestamp (the cache holds its resources as releasing) and is
// removed by endTerminations.
func (s *Simulator) applyEvictions(rep *CycleReport) {
	var keys []string
	s.cache.Mutex.Lock()
	for _, job := range s.cache.Jobs {
		for _, t := range job.Tasks {
			if t.Status == api.Releasing && t.Pod.DeletionTimestamp == nil {
				keys = append(keys, t.Namespace+"/"+t.Name)
			}
		}
	}
	s.cache.Mutex.Unlock()
	sort.Strings(keys)
	for _, key := range keys {
		e, ok := s.pods[key]
		if !ok || e.deleted || e.goneAt > 0 {
			continue
		}
		e.evicted = s.evictionReason(key)
		rep.Evicted = append(rep.Evicted, key)
		if s.opts.EvictionGrace > 0 {
			old := e.pod
			next := s.podLists.copyPod(old)
			now := metav1.NewTime(s.Now())
			next.DeletionTimestamp = &now
			next.ResourceVersion = s.nextRV()
			s.cache.UpdatePod(old, s.podLists.copyPod(next))
			e.pod = next
			e.goneAt = s.cycle + 1 + s.opts.EvictionGrace
			s.terminating[key] = true
			continue
		}
		e.deleted = true
		s.cache.DeletePod(e.pod)
		s.releaseFromCNR(e.pod)
	}
}

// endTerminations removes the evicted pods whose grace has ended, before
// the cycle's session, and reports them.
func (s *Simulator) endTerminations(rep *CycleReport) {
	var keys []string
	for key := range s.terminating {
		e, ok := s.pods[key]
		switch {
		case !ok || e.deleted || e.goneAt == 0:
			// Deleted meanwhile (DeletePod), or a new pod under the name.
			delete(s.terminating, key)
		case e.goneAt <= s.cycle:
			keys = append(keys, key)
		}
	}
	sort.Strings(keys)
	for _, key := range keys {
		delete(s.terminating, key)
		e := s.pods[key]
		e.deleted = true
		s.cache.DeletePod(e.pod)
		s.releaseFromCNR(e.pod)
		rep.Terminated = append(rep.Terminated, key)
	}
}

// evictionReason waits briefly for Volcano's evict goroutine to report the
// reason of an eviction (it always runs; the wait is bounded).
func (s *Simulator) evictionReason(key string) string {
	deadline := time.Now().Add(2 * time.Second)
	for {
		s.evictor.mu.Lock()
		reason, ok := s.evictor.reasons[key]
		s.evictor.mu.Unlock()
		if ok {
			return reason
		}
		if time.Now().After(deadline) {
			return "evicted"
		}
		time.Sleep(time.Millisecond)
	}
}

// applyStatus writes the PodGroup status (and annotations) the session
// produced back into the store and the cache, with a new resourceVersion
// (the cache ignores updates that keep it), and keeps the pod conditions
// Volcano wrote on pending pods.
func (s *Simulator) applyStatus() {
	pgs, pods := s.status.take()
	ids := make([]string, 0, len(pgs))
	for id := range pgs {
		ids = append(ids, string(id))
	}
	sort.Strings(ids)
	for _, id := range ids {
		old, ok := s.podGroups[id]
		if !ok {
			continue
		}
		next := &schedulingv1beta1.PodGroup{}
		if err := schedulingscheme.Scheme.Convert(&pgs[api.JobID(id)].PodGroup, next, nil); err != nil {
			continue // cannot happen for a PodGroup Volcano itself converted
		}
		next.TypeMeta = old.TypeMeta
		next.ResourceVersion = s.nextRV()
		s.cache.UpdatePodGroupV1beta1(old, next.DeepCopy())
		s.podGroups[id] = next
	}
	for key, p := range pods {
		e, ok := s.pods[key]
		if !ok || e.deleted || e.pod.Spec.NodeName != "" {
			continue
		}
		cur := s.podLists.copyPod(e.pod)
		cur.Status.Conditions = p.Status.Conditions
		cur.Status.NominatedNodeName = p.Status.NominatedNodeName
		e.pod = cur
	}
}

// queuePatch is the rdma-topology PodPatcher of the simulator: the
// scheduler patches a pod's annotations when it adopts what a KCNR lists;
// the patch reaches the simulated API server after the session, as an
// informer would deliver it.
func (s *Simulator) queuePatch(_ context.Context, namespace, name string, annotations map[string]string) error {
	key := namespace + "/" + name
	s.patchMu.Lock()
	defer s.patchMu.Unlock()
	if e, ok := s.pods[key]; !ok || e.deleted {
		return fmt.Errorf("pod %s does not exist", key)
	}
	cp := make(map[string]string, len(annotations))
	for k, v := range annotations {
		cp[k] = v
	}
	s.patches = append(s.patches, PodPatch{Pod: key, Annotations: cp})
	return nil
}

// applyPatches merges the session's annotation patches into the pods (a
// pod deleted meanwhile is skipped) and reports them.
func (s *Simulator) applyPatches(rep *CycleReport) {
	s.patchMu.Lock()
	patches := s.patches
	s.patches = nil
	s.patchMu.Unlock()
	for _, pt := range patches {
		e, ok := s.pods[pt.Pod]
		if !ok || e.deleted {
			continue
		}
		rep.Patches = append(rep.Patches, pt)
		old := e.pod
		next := s.podLists.copyPod(old)
		if next.Annotations == nil {
			next.Annotations = map[string]string{}
		}
		for k, v := range pt.Annotations {
			next.Annotations[k] = v
		}
		next.ResourceVersion = s.nextRV()
		s.cache.UpdatePod(old, s.podLists.copyPod(next))
		e.pod = next
	}
}

// confirmBinds runs the node agent on the cycle's binds when
// Options.NodeAgent is set: each bound pod's node KCNR lists what the
// agent chose for it before the next session.
func (s *Simulator) confirmBinds(rep *CycleReport) {
	if s.opts.NodeAgent == "" {
		return
	}
	for _, b := range rep.Binds {
		if _, err := s.ConfirmPod(b.Pod.Namespace, b.Pod.Name); err != nil {
			klog.ErrorS(err, "Node agent cannot report the pod", "pod", klog.KRef(b.Pod.Namespace, b.Pod.Name), "node", b.Node)
		}
	}
}
