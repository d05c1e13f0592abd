// The objects of the simulated cluster: what a test or a trace adds,
// changes and deletes between cycles, as an API server would take it.

package sim

import (
	"fmt"
	"strings"

	"github.com/kubewharf/katalyst-api/pkg/apis/node/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	schedulingv1beta1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"

	"github.com/rdmatopo/rdmatopo/internal/workload"
)

// Submit adds a workload: its Queues, PriorityClasses, PodGroups and
// pending Pods. Names must not clash with objects already present.
func (s *Simulator) Submit(set *workload.Set) error {
	for _, q := range set.Queues {
		if s.queues[q.Name] != nil {
			continue
		}
		s.queues[q.Name] = q.DeepCopy()
		s.cache.AddQueueV1beta1(q.DeepCopy())
	}
	for _, pc := range set.PriorityClasses {
		s.AddPriorityClass(pc)
	}
	for key, tasks := range set.VolcanoJobTasks {
		ns, name, _ := strings.Cut(key, "/")
		s.runtime.SetVolcanoJobTasks(ns, name, tasks)
	}
	for _, pg := range set.PodGroups {
		if err := s.AddPodGroup(pg); err != nil {
			return err
		}
		if n := set.Native[pg.Namespace+"/"+pg.Name]; n != nil {
			s.runtime.SetPodGroupTopology(pg.Namespace, pg.Name, pg.UID, n)
		}
	}
	for _, p := range set.Pods {
		// A running pod (spec.nodeName set) holds its node like a cluster
		// pod and is reported with the workload.
		if err := s.addPod(p, true); err != nil {
			return err
		}
	}
	return nil
}

// AddPriorityClass adds a PriorityClass (ignored if one of the name exists).
func (s *Simulator) AddPriorityClass(pc *schedulingv1.PriorityClass) {
	if s.classes[pc.Name] == nil {
		s.classes[pc.Name] = pc.DeepCopy()
		s.cache.AddPriorityClass(pc.DeepCopy())
	}
}

// AddPodGroup adds a PodGroup.
func (s *Simulator) AddPodGroup(pg *schedulingv1beta1.PodGroup) error {
	key := pg.Namespace + "/" + pg.Name
	if _, ok := s.podGroups[key]; ok {
		return fmt.Errorf("PodGroup %s already exists", key)
	}
	obj := pg.DeepCopy()
	obj.ResourceVersion = s.nextRV()
	s.podGroups[key] = obj
	s.pgOrder = append(s.pgOrder, key)
	s.cache.AddPodGroupV1beta1(obj.DeepCopy())
	return nil
}

// DeletePodGroup removes a PodGroup (its pods stay until deleted).
func (s *Simulator) DeletePodGroup(namespace, name string) error {
	key := namespace + "/" + name
	pg, ok := s.podGroups[key]
	if !ok {
		return fmt.Errorf("PodGroup %s does not exist", key)
	}
	delete(s.podGroups, key)
	s.pgOrder = removeKey(s.pgOrder, key)
	s.cache.DeletePodGroupV1beta1(pg)
	return nil
}

// AddPod adds a pod: pending (spec.nodeName empty) pods are submitted for
// scheduling, bound ones occupy their node.
func (s *Simulator) AddPod(p *corev1.Pod) error {
	return s.addPod(p, p.Spec.NodeName == "")
}

// addPod stores a pod; workload pods are reported (pending ones, and
// running ones submitted with the workload).
func (s *Simulator) addPod(p *corev1.Pod, workload bool) error {
	pending := p.Spec.NodeName == ""
	key := p.Namespace + "/" + p.Name
	if e, ok := s.pods[key]; ok && !e.deleted {
		return fmt.Errorf("pod %s already exists", key)
	}
	obj := s.podLists.copyPod(p)
	obj.ResourceVersion = s.nextRV()
	if !pending && obj.Status.Phase == "" {
		obj.Status.Phase = corev1.PodRunning
	}
	if pending && obj.Status.Phase == "" {
		obj.Status.Phase = corev1.PodPending
	}
	if _, ok := s.pods[key]; !ok {
		// New, or back under the name of a pod deleted earlier: it arrives
		// now (the older position is stale).
		s.arrival[key] = len(s.podOrder)
		s.podOrder = append(s.podOrder, key)
	}
	s.pods[key] = &podEntry{pod: obj, workload: workload}
	if !pending {
		m := s.arrivedBound[obj.Spec.NodeName]
		if m == nil {
			m = map[string]bool{}
			s.arrivedBound[obj.Spec.NodeName] = m
		}
		m[key] = true
	}
	s.cache.AddPod(s.podLists.copyPod(obj))
	return nil
}

// CompletePod marks a bound pod Succeeded, as its kubelet reports a pod
// whose containers all exited 0: it stays in the store, frees its node in
// Volcano's accounting, and its allocations leave its node's KCNR, as
// katalyst reports once the pod has terminated.
func (s *Simulator) CompletePod(namespace, name string) error {
	key := namespace + "/" + name
	e, ok := s.pods[key]
	if !ok || e.deleted || e.pod.Spec.NodeName == "" {
		return fmt.Errorf("pod %s is not bound", key)
	}
	old := e.pod
	next := s.podLists.copyPod(old)
	next.Status.Phase = corev1.PodSucceeded
	next.ResourceVersion = s.nextRV()
	s.cache.UpdatePod(old, s.podLists.copyPod(next))
	e.pod = next
	s.releaseFromCNR(next)
	return nil
}

// DeletePod removes a pod (a finished or deleted pod frees its node). Its
// allocations leave its node's KCNR too, as katalyst reports once the pod
// is gone.
func (s *Simulator) DeletePod(namespace, name string) error {
	key := namespace + "/" + name
	e, ok := s.pods[key]
	if !ok || e.deleted {
		return fmt.Errorf("pod %s does not exist", key)
	}
	s.cache.DeletePod(e.pod)
	s.releaseFromCNR(e.pod)
	s.forget(key)
	return nil
}

// forget drops a deleted pod from the store, compacting the arrival order
// once it is mostly stale (long soak runs delete many pods).
func (s *Simulator) forget(key string) {
	delete(s.pods, key)
	s.stale++
	if s.stale*2 <= len(s.podOrder) {
		return
	}
	kept := s.podOrder[:0]
	for i, k := range s.podOrder {
		if _, ok := s.pods[k]; ok && s.arrival[k] == i {
			s.arrival[k] = len(kept)
			kept = append(kept, k)
		}
	}
	for k := range s.arrival {
		if _, ok := s.pods[k]; !ok {
			delete(s.arrival, k)
		}
	}
	s.podOrder, s.stale = kept, 0
}

// UpsertNode adds or replaces a Node (in the scheduler cache and in the
// rdma-topology fabric).
func (s *Simulator) UpsertNode(n *corev1.Node) {
	obj := n.DeepCopy()
	obj.ResourceVersion = s.nextRV()
	if _, ok := s.nodes[obj.Name]; !ok {
		s.nodeOrder = append(s.nodeOrder, obj.Name)
	}
	s.nodes[obj.Name] = obj
	// The store, Volcano's cache and the fabric share the object, as
	// vc-scheduler's informers hand their cache one object per update:
	// none of them modifies it, and an update replaces it.
	_ = s.cache.AddOrUpdateNode(obj) // never fails
	s.runtime.Fabric.UpsertNode(obj)
}

// DeleteNode removes a Node; pods bound to it stay until deleted.
func (s *Simulator) DeleteNode(name string) error {
	if _, ok := s.nodes[name]; !ok {
		return fmt.Errorf("node %s does not exist", name)
	}
	delete(s.nodes, name)
	s.nodeOrder = removeKey(s.nodeOrder, name)
	s.runtime.Fabric.DeleteNode(name)
	return s.cache.RemoveNode(name)
}

// UpsertCNR adds or replaces a KCNR in the rdma-topology fabric.
func (s *Simulator) UpsertCNR(cnr *v1alpha1.CustomNodeResource) {
	s.putCNR(cnr.DeepCopy())
}

// putCNR stores a KCNR the simulator owns (a copy no caller holds) with a
// new resourceVersion, its resource lists shared with the equal lists of
// the KCNRs stored before (cnrLists), and hands it to the fabric.
func (s *Simulator) putCNR(obj *v1alpha1.CustomNodeResource) {
	obj.ResourceVersion = s.nextRV()
	s.cnrLists.ShareLists(obj)
	if _, ok := s.cnrs[obj.Name]; !ok {
		s.cnrOrder = append(s.cnrOrder, obj.Name)
	}
	s.cnrs[obj.Name] = obj
	s.runtime.Fabric.UpsertCNR(obj)
}

// DeleteCNR removes a KCNR from the fabric.
func (s *Simulator) DeleteCNR(name string) error {
	if _, ok := s.cnrs[name]; !ok {
		return fmt.Errorf("CustomNodeResource %s does not exist", name)
	}
	delete(s.cnrs, name)
	s.cnrOrder = removeKey(s.cnrOrder, name)
	s.runtime.Fabric.DeleteCNR(name)
	return nil
}

// removeKey deletes one key from an order slice.
func removeKey(keys []string, key string) []string {
	for i, k := range keys {
		if k == key {
			return append(keys[:i:i], keys[i+1:]...)
		}
	}
	return keys
}
