package workload

import (
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"
	"k8s.io/apimachinery/pkg/types"
)

// Kinds read from input files, with the apiVersion each must carry.
const (
	KindNode          = "Node"
	KindCNR           = "CustomNodeResource"
	KindPod           = "Pod"
	KindQueue         = "Queue"
	KindPodGroup      = "PodGroup"
	KindVolcanoJob    = "Job"
	KindPyTorchJob    = "PyTorchJob"
	KindPriorityClass = "PriorityClass"
	KindTrainJob      = "TrainJob"
	KindHyperNode     = "HyperNode"
	// KindTrainingRuntime and KindClusterTrainingRuntime are Kubeflow
	// Trainer's runtimes a TrainJob refers to.
	KindTrainingRuntime        = "TrainingRuntime"
	KindClusterTrainingRuntime = "ClusterTrainingRuntime"

	APIVersionCore          = "v1"
	APIVersionCNR           = "node.katalyst.kubewharf.io/v1alpha1"
	APIVersionScheduling    = "scheduling.volcano.sh/v1beta1"
	APIVersionBatch         = "batch.volcano.sh/v1alpha1"
	APIVersionKubeflow      = "kubeflow.org/v1"
	APIVersionPriorityClass = "scheduling.k8s.io/v1"
	APIVersionTrainer       = "trainer.kubeflow.org/v1alpha1"
	APIVersionHyperNode     = "topology.volcano.sh/v1alpha1"
)

// DefaultNamespace is assumed for namespaced objects that name none.
const DefaultNamespace = "default"

// DefaultQueue is the queue created when a workload defines none, and the
// queue of PodGroups that name none.
const DefaultQueue = "default"

// DefaultSchedulerName is the scheduler name Volcano answers to.
const DefaultSchedulerName = "volcano"

// Epoch is the creation time given to objects that have none; later
// documents get later times (one second apart), so Volcano's job and task
// order (creation time, then UID) follows the order of the input.
var Epoch = time.Date(2025, time.January, 1, 0, 0, 0, 0, time.UTC)

// uidSpace namespaces the deterministic (name-based, SHA-1) UIDs.
var uidSpace = uuid.MustParse("6f1d2c1e-63b5-4c36-9a0e-6a1f0b9a5d42")

// StableUID returns the deterministic UID of an object without one.
func StableUID(kind, namespace, name string) types.UID {
	return types.UID(uuid.NewSHA1(uidSpace, []byte(kind+"/"+namespace+"/"+name)).String())
}

// kindSet lists the kinds a file may hold, by kind, with their apiVersion.
type kindSet struct {
	// what names the file for messages ("cluster", "workload").
	what    string
	allowed map[string]string
	// order lists the kinds for messages.
	order []string
}

var (
	clusterKinds = kindSet{
		what: "cluster",
		allowed: map[string]string{
			KindNode: APIVersionCore, KindCNR: APIVersionCNR, KindPod: APIVersionCore, KindHyperNode: APIVersionHyperNode,
		},
		order: []string{KindNode, KindCNR, KindPod, KindHyperNode},
	}
	workloadKinds = kindSet{
		what: "workload",
		allowed: map[string]string{
			KindQueue: APIVersionScheduling, KindPodGroup: APIVersionScheduling, KindPod: APIVersionCore,
			KindVolcanoJob: APIVersionBatch, KindPyTorchJob: APIVersionKubeflow,
			KindPriorityClass: APIVersionPriorityClass,
			KindTrainJob:      APIVersionTrainer, KindTrainingRuntime: APIVersionTrainer, KindClusterTrainingRuntime: APIVersionTrainer,
		},
		order: []string{KindQueue, KindPodGroup, KindPod, KindVolcanoJob, KindPyTorchJob, KindTrainJob, KindClusterTrainingRuntime, KindTrainingRuntime, KindPriorityClass},
	}
)

// check verifies that the object's kind and apiVersion belong in the file.
func (ks kindSet) check(r *rawObject) *InputError {
	if r.kind == "" {
		return r.errorf("kind", "missing; a %s file holds %s", ks.what, ks.describe())
	}
	want, ok := ks.allowed[r.kind]
	if !ok {
		return r.errorf("kind", "unknown kind %q (apiVersion %q); a %s file holds %s", r.kind, r.apiVersion, ks.what, ks.describe())
	}
	if r.apiVersion != want {
		return r.errorf("apiVersion", "must be %s for kind %s, got %q", want, r.kind, r.apiVersion)
	}
	return nil
}

// describe lists the allowed kinds.
func (ks kindSet) describe() string {
	parts := make([]string, 0, len(ks.order))
	for _, k := range ks.order {
		parts = append(parts, fmt.Sprintf("%s (%s)", k, ks.allowed[k]))
	}
	return strings.Join(parts, ", ")
}

// objectKey identifies an object for duplicate detection.
type objectKey struct {
	kind, namespace, name string
}

// registry detects duplicate objects across a file.
type registry map[objectKey]origin

// add records an object, failing on a duplicate.
func (reg registry) add(o origin, kind, namespace, name string) *InputError {
	k := objectKey{kind, namespace, name}
	if prev, ok := reg[k]; ok {
		return o.errorf(kind, namespace, name, "metadata.name", "duplicate %s: already defined in document %d", kind, prev.doc)
	}
	reg[k] = o
	return nil
}

// clock hands out increasing creation times from Epoch.
type clock struct {
	next time.Time
}

// tick returns the next creation time.
func (c *clock) tick() time.Time {
	if c.next.IsZero() {
		c.next = Epoch
	}
	t := c.next
	c.next = c.next.Add(time.Second)
	return t
}
