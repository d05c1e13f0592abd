package rdmatopology

import (
	"fmt"
	"sort"
	"sync"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	batchv1alpha1 "volcano.sh/apis/pkg/apis/batch/v1alpha1"
	vcclient "volcano.sh/apis/pkg/client/clientset/versioned"
	vcinformers "volcano.sh/apis/pkg/client/informers/externalversions"
	"volcano.sh/volcano/pkg/scheduler/api"

	"github.com/rdmatopo/rdmatopo/core/kube"
	"github.com/rdmatopo/rdmatopo/core/ledger"
	"github.com/rdmatopo/rdmatopo/core/placement"
)

// taskOrders remembers the order of each Volcano Job's spec.tasks, which a
// pod's rank depends on (placement.Ranks) and which no pod or PodGroup
// carries. The production runtime fills it from a Job informer; simulators
// and tests call SetVolcanoJobTasks.
type taskOrders struct {
	mu sync.Mutex
	// byJob maps "namespace/name" to the task names in spec order.
	byJob map[string][]string
}

// SetVolcanoJobTasks records the task names of Volcano Job namespace/name
// in spec.tasks order (nil forgets the job).
func (rt *Runtime) SetVolcanoJobTasks(namespace, name string, tasks []string) {
	rt.tasks.set(namespace, name, tasks)
}

// set records the task names of Volcano Job namespace/name (nil forgets
// the job).
func (o *taskOrders) set(namespace, name string, tasks []string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	key := namespace + "/" + name
	if tasks == nil {
		delete(o.byJob, key)
		return
	}
	if o.byJob == nil {
		o.byJob = map[string][]string{}
	}
	o.byJob[key] = append([]string(nil), tasks...)
}

// names returns the task names of Volcano Job namespace/name in spec
// order (nil: not seen).
func (o *taskOrders) names(namespace, name string) []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.byJob[namespace+"/"+name]
}

// startJobInformer watches Volcano Jobs for their task order, keeping only
// the names of their tasks (not the pod templates) in the informer's store.
func (rt *Runtime) startJobInformer(cfg *rest.Config) error {
	client, err := vcclient.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("volcano clientset: %w", err)
	}
	factory := vcinformers.NewSharedInformerFactory(client, 0)
	inf := factory.Batch().V1alpha1().Jobs().Informer()
	if err := inf.SetTransform(stripJob); err != nil {
		return fmt.Errorf("job informer transform: %w", err)
	}
	orders := rt.tasks
	set := func(obj interface{}) {
		if job, ok := obj.(*batchv1alpha1.Job); ok {
			orders.set(job.Namespace, job.Name, taskNames(job))
		}
	}
	_, err = inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    set,
		UpdateFunc: func(_, obj interface{}) { set(obj) },
		DeleteFunc: func(obj interface{}) {
			if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = t.Obj
			}
			if job, ok := obj.(*batchv1alpha1.Job); ok {
				orders.set(job.Namespace, job.Name, nil)
			}
		},
	})
	if err != nil {
		return fmt.Errorf("job informer handler: %w", err)
	}
	factory.Start(rt.stop)
	klog.InfoS("Watching Volcano Jobs for the task order of ranks")
	return nil
}

// stripJob keeps a Job's identity and task names only.
func stripJob(obj interface{}) (interface{}, error) {
	job, ok := obj.(*batchv1alpha1.Job)
	if !ok {
		return obj, nil
	}
	out := &batchv1alpha1.Job{}
	out.Namespace, out.Name, out.UID, out.ResourceVersion = job.Namespace, job.Name, job.UID, job.ResourceVersion
	for _, t := range job.Spec.Tasks {
		out.Spec.Tasks = append(out.Spec.Tasks, batchv1alpha1.TaskSpec{Name: t.Name})
	}
	return out, nil
}

// taskNames lists a Job's task names in spec order (never nil).
func taskNames(job *batchv1alpha1.Job) []string {
	names := make([]string, 0, len(job.Spec.Tasks))
	for _, t := range job.Spec.Tasks {
		names = append(names, t.Name)
	}
	return names
}

// taskRanks returns the rank of each task's pod (Runtime.PodRanks); a task
// without its pod object is ranked by its name.
func (s *SessionState) taskRanks(tasks []*api.TaskInfo) ([]int, error) {
	pods := make([]*v1.Pod, len(tasks))
	for i, t := range tasks {
		pods[i] = t.Pod
		if pods[i] == nil {
			pods[i] = &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: t.Namespace, Name: t.Name}}
		}
	}
	return s.rt.PodRanks(pods)
}

// rankGang ranks a gang's pods to plan, tasks (tasks[i] is the task of
// pods[i]), together with the job's other pending RDMA pods and its pods
// that hold NICs, so that ranks number the whole gang: it sets each pod's
// Rank and sorts pods by rank, and returns what the gang
// holds (Occupancy) with the held pods' ranks and places (placement.Occupancy.Ranks),
// and how many pods the ranks number (placement.Gang.Members). A held pod
// whose task the session does not list is left out of the ranks. An
// invalid rdmatopo.io/rank is an error wrapping
// placement.ErrInvalidContract.
func (s *SessionState) rankGang(job *api.JobInfo, tasks []*api.TaskInfo, pods []placement.Pod) (*placement.Occupancy, int, error) {
	h := s.occupancy(job.UID)
	all := append([]*api.TaskInfo(nil), tasks...)
	given := make(map[api.TaskID]bool, len(tasks))
	for _, t := range tasks {
		given[t.UID] = true
	}
	for _, t := range job.TaskStatusIndex[api.Pending] {
		if !given[t.UID] && s.wantsRDMA(t) {
			given[t.UID] = true
			all = append(all, t)
		}
	}
	s.mu.Lock()
	var held []ledger.Reservation
	for uid, r := range s.byJob[job.UID] {
		if t, ok := job.Tasks[api.TaskID(uid)]; ok && !given[t.UID] {
			held = append(held, r)
		}
	}
	s.mu.Unlock()
	sort.Slice(held, func(i, j int) bool { return held[i].UID < held[j].UID })
	heldAt := len(all)
	for _, r := range held {
		all = append(all, job.Tasks[api.TaskID(r.UID)])
	}
	ranks, err := s.taskRanks(all)
	if err != nil {
		return h, 0, err
	}
	for i := range pods {
		pods[i].Rank = ranks[i]
	}
	sort.SliceStable(pods, func(i, j int) bool { return pods[i].Rank < pods[j].Rank })
	if len(held) == 0 {
		return h, len(all), nil
	}
	out := &placement.Occupancy{Nodes: h.Nodes, S0s: h.S0s, S1s: h.S1s, Pods: h.Pods}
	for i, r := range held {
		leaves := s.fabric.NICLeaves(r.Node, r.NICs())
		sort.Slice(leaves, func(a, b int) bool { return leaves[a] < leaves[b] })
		out.Ranks = append(out.Ranks, placement.OccupiedRank{Rank: ranks[heldAt+i], Node: r.Node, Leaves: leaves})
	}
	sort.SliceStable(out.Ranks, func(i, j int) bool { return out.Ranks[i].Rank < out.Ranks[j].Rank })
	return out, len(all), nil
}

// PodRanks returns the rank of each pod of one gang (RanksOf, with the
// Volcano Jobs' task order the runtime saw). An invalid rdmatopo.io/rank
// is an error wrapping placement.ErrInvalidContract.
func (r *Runtime) PodRanks(pods []*v1.Pod) ([]int, error) {
	return RanksOf(pods, r.tasks.names)
}

// RanksOf returns the rank of each pod of one gang (kube.RanksOf). The
// scheduler calls it through Runtime.PodRanks; tools without a runtime
// (kubectl rdmatopo explain) call kube.RanksOf with the Job they read.
func RanksOf(pods []*v1.Pod, tasks func(namespace, job string) []string) ([]int, error) {
	return kube.RanksOf(pods, tasks)
}
