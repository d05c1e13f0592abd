package workload

// Volcano ≥ 1.12's topology fields, which the volcano.sh/apis v1.10 types
// the simulator decodes into do not carry: PodGroup spec.networkTopology
// and spec.subGroupPolicy, Volcano Job spec.networkTopology and
// spec.tasks[].partitionPolicy (v1.14). They are cut out of the object
// before its strict typed decode and decoded, as strictly, into small local
// types: a typo under them is an input error naming the field.

import (
	"encoding/json"
	"fmt"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	batchv1alpha1 "volcano.sh/apis/pkg/apis/batch/v1alpha1"

	"github.com/rdmatopo/rdmatopo/core/placement"
)

// PartitionPolicy is a Volcano Job task's spec.partitionPolicy
// (volcano.sh/apis v1.14 PartitionPolicySpec).
type PartitionPolicy struct {
	TotalPartitions int32                      `json:"totalPartitions"`
	PartitionSize   int32                      `json:"partitionSize"`
	NetworkTopology *placement.NetworkTopology `json:"networkTopology,omitempty"`
	MinPartitions   int32                      `json:"minPartitions,omitempty"`
}

// jobNative is what a Volcano Job states in Volcano ≥ 1.12's fields.
type jobNative struct {
	networkTopology *placement.NetworkTopology
	// partitions is parallel to spec.tasks (nil where a task has none).
	partitions []*PartitionPolicy
}

// set reports whether the Job states anything in them.
func (j *jobNative) set() bool {
	if j == nil {
		return false
	}
	for _, p := range j.partitions {
		if p != nil {
			return true
		}
	}
	return j.networkTopology != nil
}

// objectFields is a JSON object cut into its fields.
type objectFields map[string]json.RawMessage

// cutFields removes the named spec fields (and, with taskField, that field
// of every spec.tasks[] item) from r.data, and returns a document holding
// only what was removed, at the same paths, for a strict decode that names
// fields as the input does. r.data is left as it is when none is present.
func cutFields(r *rawObject, specFields []string, taskField string) ([]byte, bool) {
	var top objectFields
	if json.Unmarshal(r.data, &top) != nil {
		return nil, false // the typed decode reports it
	}
	var spec objectFields
	if json.Unmarshal(top["spec"], &spec) != nil || spec == nil {
		return nil, false
	}
	cut := objectFields{}
	for _, f := range specFields {
		if v, ok := spec[f]; ok {
			cut[f] = v
			delete(spec, f)
		}
	}
	if taskField != "" {
		var tasks []objectFields
		if json.Unmarshal(spec["tasks"], &tasks) == nil && tasks != nil {
			cutTasks := make([]objectFields, len(tasks))
			any := false
			for i, t := range tasks {
				cutTasks[i] = objectFields{}
				if v, ok := t[taskField]; ok {
					cutTasks[i][taskField] = v
					delete(t, taskField)
					any = true
				}
			}
			if any {
				spec["tasks"], _ = json.Marshal(tasks)
				cut["tasks"], _ = json.Marshal(cutTasks)
			}
		}
	}
	if len(cut) == 0 {
		return nil, false
	}
	top["spec"], _ = json.Marshal(spec)
	r.data, _ = json.Marshal(top)
	doc, _ := json.Marshal(objectFields{"spec": mustJSON(cut)})
	return doc, true
}

// mustJSON encodes fields already valid JSON.
func mustJSON(f objectFields) json.RawMessage {
	out, _ := json.Marshal(f)
	return out
}

// podGroupNativeDoc is the document a PodGroup's native fields decode from.
type podGroupNativeDoc struct {
	Spec struct {
		NetworkTopology json.RawMessage `json:"networkTopology"`
		SubGroupPolicy  json.RawMessage `json:"subGroupPolicy"`
	} `json:"spec"`
}

// podGroupNativeTyped checks the same document strictly.
type podGroupNativeTyped struct {
	Spec struct {
		NetworkTopology *placement.NetworkTopology `json:"networkTopology"`
		SubGroupPolicy  []placement.SubGroupPolicy `json:"subGroupPolicy"`
	} `json:"spec"`
}

// cutPodGroupNative cuts a PodGroup's native topology fields out of r and
// decodes them strictly (nil: none).
func cutPodGroupNative(r *rawObject) (*placement.NativeTopology, *InputError) {
	doc, ok := cutFields(r, []string{"networkTopology", "subGroupPolicy"}, "")
	if !ok {
		return nil, nil
	}
	if ierr := decodeStrict(&rawObject{origin: r.origin, kind: r.kind, namespace: r.namespace, name: r.name, data: doc}, &podGroupNativeTyped{}); ierr != nil {
		return nil, ierr
	}
	var raw podGroupNativeDoc
	_ = json.Unmarshal(doc, &raw)
	n := placement.DecodeNativeTopology(raw.Spec.NetworkTopology, raw.Spec.SubGroupPolicy)
	if len(n.Problems) > 0 { // the strict decode above found none; kept as a guard
		return nil, r.errorf(n.Problems[0].Key, "%s", n.Problems[0].Msg)
	}
	return n, nil
}

// jobNativeTyped is the document a Job's native fields decode from.
type jobNativeTyped struct {
	Spec struct {
		NetworkTopology *placement.NetworkTopology `json:"networkTopology"`
		Tasks           []struct {
			PartitionPolicy *PartitionPolicy `json:"partitionPolicy"`
		} `json:"tasks"`
	} `json:"spec"`
}

// cutJobNative cuts a Volcano Job's native topology fields out of r and
// decodes them strictly (nil: none).
func cutJobNative(r *rawObject) (*jobNative, *InputError) {
	doc, ok := cutFields(r, []string{"networkTopology"}, "partitionPolicy")
	if !ok {
		return nil, nil
	}
	var typed jobNativeTyped
	if ierr := decodeStrict(&rawObject{origin: r.origin, kind: r.kind, namespace: r.namespace, name: r.name, data: doc}, &typed); ierr != nil {
		return nil, ierr
	}
	j := &jobNative{networkTopology: typed.Spec.NetworkTopology}
	for _, t := range typed.Spec.Tasks {
		j.partitions = append(j.partitions, t.PartitionPolicy)
	}
	return j, nil
}

// checkNetworkTopology refuses what Volcano's admission refuses in a
// networkTopology: both tier fields.
func checkNetworkTopology(r *rawObject, field string, nt *placement.NetworkTopology) *InputError {
	if nt != nil && nt.HighestTierAllowed != nil && nt.HighestTierName != "" {
		return r.errorf(field+".highestTierName", "must not be set together with highestTierAllowed")
	}
	return nil
}

// defaultPartitions applies Volcano v1.14's admission to the Job's
// partition policies before the Job's other defaults: a task without
// minAvailable gets minPartitions × partitionSize; totalPartitions and
// partitionSize must be positive, replicas their product, and a task's
// minAvailable minPartitions × partitionSize.
func defaultPartitions(r *rawObject, job *batchv1alpha1.Job, n *jobNative) *InputError {
	if ierr := checkNetworkTopology(r, "spec.networkTopology", n.networkTopology); ierr != nil {
		return ierr
	}
	for i, p := range n.partitions {
		if p == nil || i >= len(job.Spec.Tasks) {
			continue
		}
		t := &job.Spec.Tasks[i]
		field := fmt.Sprintf("spec.tasks[%d].partitionPolicy", i)
		switch {
		case p.TotalPartitions <= 0:
			return r.errorf(field+".totalPartitions", "must be greater than 0, got %d", p.TotalPartitions)
		case p.PartitionSize <= 0:
			return r.errorf(field+".partitionSize", "must be greater than 0, got %d", p.PartitionSize)
		case p.MinPartitions < 0:
			return r.errorf(field+".minPartitions", "must be 0 or more, got %d", p.MinPartitions)
		case t.Replicas != p.TotalPartitions*p.PartitionSize:
			return r.errorf(field, "replicas (%d) must equal totalPartitions × partitionSize (%d × %d)", t.Replicas, p.TotalPartitions, p.PartitionSize)
		}
		if ierr := checkNetworkTopology(r, field+".networkTopology", p.NetworkTopology); ierr != nil {
			return ierr
		}
		min := p.MinPartitions * p.PartitionSize
		if t.MinAvailable == nil {
			t.MinAvailable = &min
		} else if *t.MinAvailable != min {
			return r.errorf(fmt.Sprintf("spec.tasks[%d].minAvailable", i), "%d must equal partitionPolicy.minPartitions × partitionSize (%d)", *t.MinAvailable, min)
		}
	}
	return nil
}

// podGroupNative is what Volcano v1.14's job controller writes on the
// Job's PodGroup: spec.networkTopology (mode, and highestTierAllowed or
// else highestTierName) and one subGroupPolicy per task with a partition
// policy (named after the task, selecting its pods by
// volcano.sh/task-spec, grouped by volcano.sh/partition-id).
func podGroupNative(job *batchv1alpha1.Job, n *jobNative) *placement.NativeTopology {
	out := &placement.NativeTopology{}
	if nt := n.networkTopology; nt != nil {
		c := &placement.NetworkTopology{Mode: nt.Mode}
		if c.Mode == "" {
			c.Mode = "hard" // the Job CRD's default
		}
		if nt.HighestTierAllowed != nil {
			v := *nt.HighestTierAllowed
			c.HighestTierAllowed = &v
		} else {
			c.HighestTierName = nt.HighestTierName
		}
		out.NetworkTopology = c
	}
	for i, p := range n.partitions {
		if p == nil || i >= len(job.Spec.Tasks) {
			continue
		}
		size, min := p.PartitionSize, p.MinPartitions
		sg := placement.SubGroupPolicy{
			Name:           job.Spec.Tasks[i].Name,
			SubGroupSize:   &size,
			MinSubGroups:   &min,
			LabelSelector:  &metav1.LabelSelector{MatchLabels: map[string]string{batchv1alpha1.TaskSpecKey: job.Spec.Tasks[i].Name}},
			MatchLabelKeys: []string{placement.PartitionIDLabel},
		}
		if nt := p.NetworkTopology; nt != nil {
			c := *nt
			if c.Mode == "" {
				c.Mode = "hard"
			}
			sg.NetworkTopology = &c
		}
		out.SubGroupPolicy = append(out.SubGroupPolicy, sg)
	}
	return out
}

// labelPartitions labels the pods of tasks with a partition policy with
// their partition (index / partitionSize), as the job controller does.
func labelPartitions(job *batchv1alpha1.Job, n *jobNative, pods []*corev1.Pod) {
	for _, p := range pods {
		for i, t := range job.Spec.Tasks {
			if i >= len(n.partitions) || n.partitions[i] == nil || p.Labels[batchv1alpha1.TaskSpecKey] != t.Name {
				continue
			}
			idx, err := strconv.Atoi(p.Labels[batchv1alpha1.TaskIndex])
			if err != nil {
				continue
			}
			p.Labels[placement.PartitionIDLabel] = strconv.Itoa(idx / int(n.partitions[i].PartitionSize))
		}
	}
}
