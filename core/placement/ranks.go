// Ranks: the order of a gang's pods as the training job numbers them.
//
// NCCL's ring and tree follow rank order, so placing consecutive ranks next
// to each other is what makes a placement fast (rankorder.go). The scheduler
// never sees the RANK a launcher computes; it reads what the pod's
// controller writes on the pod, which determines it:
//
//   - Kubeflow training-operator (v1.8) PyTorchJob: the labels
//     training.kubeflow.org/replica-type ("master", "worker", lower case)
//     and training.kubeflow.org/replica-index; the controller sets RANK to 0
//     for the master and index+1 for worker index (index without a master).
//   - Volcano (v1.10) Job: the task's position in spec.tasks (the pod's
//     volcano.sh/task-spec names the task), then volcano.sh/task-index.
//   - JobSet (v0.8) and Kubeflow Trainer, whose pods are JobSet pods:
//     jobset.sigs.k8s.io/job-global-index (unique across the replicated
//     jobs; jobset.sigs.k8s.io/job-index where it is absent), then the
//     indexed Job's batch.kubernetes.io/job-completion-index.
//
// A pod annotation rdmatopo.io/rank (a non-negative integer, the user's own
// order) overrides all of these; otherwise a pod without any of them is
// ordered by the trailing ordinal of its name ("g-12" is 12), then by name.

package placement

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// Keys the controllers write on the pods they create (see the file comment).
const (
	// AnnotationRank (Pod) is a user's own rank of the pod in its gang.
	AnnotationRank = "rdmatopo.io/rank"

	LabelReplicaType  = "training.kubeflow.org/replica-type"
	LabelReplicaIndex = "training.kubeflow.org/replica-index"
	// ReplicaTypeMaster is the replica type of a PyTorchJob's rank 0.
	ReplicaTypeMaster = "master"

	KeyTaskSpec  = "volcano.sh/task-spec"
	KeyTaskIndex = "volcano.sh/task-index"

	KeyJobSetGlobalIndex = "jobset.sigs.k8s.io/job-global-index"
	KeyJobSetJobIndex    = "jobset.sigs.k8s.io/job-index"
	KeyCompletionIndex   = "batch.kubernetes.io/job-completion-index"
)

// RankSource is what one pod carries that orders it in its gang.
type RankSource struct {
	// Name is the pod's name; "namespace/name" is fine too, as a gang's
	// pods share a namespace (the ordinal is read after the last dash).
	Name        string
	Labels      map[string]string
	Annotations map[string]string
}

// RankError is an rdmatopo.io/rank annotation that is not a rank. It wraps
// ErrInvalidContract: such a gang is kept pending (InvalidAnnotation) rather
// than placed in an order the user did not ask for.
type RankError struct {
	// Pod is the pod's name as RankSource.Name gave it.
	Pod   string
	Field string
	Value string
	// Same, when set, is another pod of the gang annotated with the same
	// rank: the value is a rank, but not this pod's alone.
	Same string
}

func (e *RankError) Error() string {
	if e.Same != "" {
		return fmt.Sprintf("pod %s: %s: %s", e.Pod, e.Field, DuplicateRankProblem(e.Value, e.Same))
	}
	return fmt.Sprintf("pod %s: %s: %s", e.Pod, e.Field, RankProblem(e.Value))
}

// DuplicateRankProblem says that an rdmatopo.io/rank value is also another
// pod's of the gang.
func DuplicateRankProblem(v, other string) string {
	return fmt.Sprintf("rank %s is also given to pod %s (each pod of a gang needs its own rank)", v, other)
}

// RankProblem says what is wrong with a bad rdmatopo.io/rank value.
func RankProblem(v string) string {
	return fmt.Sprintf("%q is not a rank (want a non-negative integer)", v)
}

// Unwrap makes a RankError an ErrInvalidContract.
func (e *RankError) Unwrap() error { return ErrInvalidContract }

// Sources of a rank, strongest first: pods ranked by a stronger source
// come before pods ranked by a weaker one (a gang's pods normally share one
// source, so this only orders the odd pod out deterministically).
const (
	sourceAnnotation = iota
	sourcePyTorch
	sourceVolcano
	sourceJobSet
	sourceCompletionIndex
	sourceNameOrdinal
	sourceName
)

// rankKey orders pods: the source, then the source's numbers element by
// element, then the name.
type rankKey struct {
	key  []int
	name string
}

func (a rankKey) less(b rankKey) bool {
	for i := 0; i < len(a.key) && i < len(b.key); i++ {
		if a.key[i] != b.key[i] {
			return a.key[i] < b.key[i]
		}
	}
	if len(a.key) != len(b.key) {
		return len(a.key) < len(b.key)
	}
	return a.name < b.name
}

// Ranks returns each pod's rank in its gang, 0 to len(pods)-1, in the order
// of pods (see the file comment for the sources). taskOrder gives a Volcano task's position in its Job's
// spec.tasks (false when unknown: tasks the Job does not list, or a Job the
// caller has not seen, come after the listed ones, by task name). Pods of
// equal keys keep name order. It fails only on a bad rdmatopo.io/rank, or
// one that two pods share;
// controller labels that do not parse are ignored (the next source
// decides), as the controllers always write numbers.
func Ranks(pods []RankSource, taskOrder func(task string) (int, bool)) ([]int, error) {
	keys := make([]rankKey, len(pods))
	// Tasks a Job does not list are numbered after the listed ones, by name.
	var unlisted []string
	for _, p := range pods {
		if task, ok := lookup(p, KeyTaskSpec); ok && !listed(taskOrder, task) {
			unlisted = append(unlisted, task)
		}
	}
	sort.Strings(unlisted)
	unlisted = dedupe(unlisted)
	maxListed := 0
	if len(unlisted) > 0 {
		for _, p := range pods {
			if task, ok := lookup(p, KeyTaskSpec); ok && listed(taskOrder, task) {
				pos, _ := taskOrder(task)
				maxListed = max(maxListed, pos+1)
			}
		}
	}
	taskPos := func(task string) int {
		if taskOrder != nil {
			if pos, ok := taskOrder(task); ok {
				return pos
			}
		}
		return maxListed + sort.SearchStrings(unlisted, task)
	}
	given := map[int]string{}
	for i, p := range pods {
		k, err := keyOf(p, taskPos)
		if err != nil {
			return nil, err
		}
		if k[0] == sourceAnnotation {
			if other, dup := given[k[1]]; dup {
				return nil, &RankError{Pod: p.Name, Field: fmt.Sprintf("metadata.annotations[%q]", AnnotationRank),
					Value: p.Annotations[AnnotationRank], Same: other}
			}
			given[k[1]] = p.Name
		}
		keys[i] = rankKey{key: k, name: p.Name}
	}
	idx := make([]int, len(pods))
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool { return keys[idx[a]].less(keys[idx[b]]) })
	ranks := make([]int, len(pods))
	for r, i := range idx {
		ranks[i] = r
	}
	return ranks, nil
}

// listed reports whether taskOrder knows the task.
func listed(taskOrder func(string) (int, bool), task string) bool {
	if taskOrder == nil {
		return false
	}
	_, ok := taskOrder(task)
	return ok
}

// keyOf is the sort key of one pod from its strongest source.
func keyOf(p RankSource, taskPos func(string) int) ([]int, error) {
	if v, ok := p.Annotations[AnnotationRank]; ok {
		r, ok := ParseRank(v)
		if !ok {
			return nil, &RankError{Pod: p.Name, Field: fmt.Sprintf("metadata.annotations[%q]", AnnotationRank), Value: v}
		}
		return []int{sourceAnnotation, r}, nil
	}
	if rt, ok := p.Labels[LabelReplicaType]; ok {
		if i, ok := index(p, LabelReplicaIndex); ok {
			// The master is rank 0, workers follow it by index.
			class := 1
			if strings.EqualFold(rt, ReplicaTypeMaster) {
				class = 0
			}
			return []int{sourcePyTorch, class, i}, nil
		}
	}
	if task, ok := lookup(p, KeyTaskSpec); ok {
		if i, ok := index(p, KeyTaskIndex); ok {
			return []int{sourceVolcano, taskPos(task), i}, nil
		}
	}
	job, ok := index(p, KeyJobSetGlobalIndex)
	if !ok {
		job, ok = index(p, KeyJobSetJobIndex)
	}
	if ok {
		if c, ok := index(p, KeyCompletionIndex); ok {
			return []int{sourceJobSet, job, c}, nil
		}
		return []int{sourceJobSet, job}, nil
	}
	if c, ok := index(p, KeyCompletionIndex); ok {
		return []int{sourceCompletionIndex, c}, nil
	}
	if n, ok := nameOrdinal(p.Name); ok {
		return []int{sourceNameOrdinal, n}, nil
	}
	return []int{sourceName}, nil
}

// ParseRank reads an rdmatopo.io/rank value: a non-negative integer in
// canonical form ("7", not "07" or "+7").
func ParseRank(v string) (int, bool) {
	r, err := strconv.Atoi(v)
	if err != nil || r < 0 || v != strconv.Itoa(r) {
		return 0, false
	}
	return r, true
}

// lookup reads a key the controllers write as a label and an annotation
// (the label first).
func lookup(p RankSource, key string) (string, bool) {
	if v, ok := p.Labels[key]; ok {
		return v, true
	}
	v, ok := p.Annotations[key]
	return v, ok
}

// index reads a non-negative integer written under key.
func index(p RankSource, key string) (int, bool) {
	v, ok := lookup(p, key)
	if !ok {
		return 0, false
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		return 0, false
	}
	return n, true
}

// nameOrdinal is the number after the last dash of a pod name ("g-12": 12),
// the ordinal StatefulSets and most launchers give their pods.
func nameOrdinal(name string) (int, bool) {
	i := strings.LastIndexByte(name, '-')
	if i < 0 || i == len(name)-1 {
		return 0, false
	}
	n, err := strconv.Atoi(name[i+1:])
	if err != nil || n < 0 || name[i+1] == '+' {
		return 0, false
	}
	return n, true
}
