package harness

import (
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// Volcano ≥ 1.12's topology fields, added to Volcano v1.10's PodGroup and
// Job CRDs so that the API server keeps them, as a cluster on Volcano
// ≥ 1.12 (whose CRDs carry them) does; an API server holding v1.10's CRDs
// prunes them before anyone reads them. The schemas are written after the
// kubebuilder markers of volcano.sh/apis v1.14.0 (scheduling/v1beta1
// NetworkTopologySpec and SubGroupPolicySpec, batch/v1alpha1
// NetworkTopologySpec and PartitionPolicySpec).

// CRD names the fields are added to.
const (
	PodGroupCRD = "podgroups.scheduling.volcano.sh"
	JobCRD      = "jobs.batch.volcano.sh"
)

func str() map[string]interface{} { return map[string]interface{}{"type": "string"} }

func integer(format string, minimum int64) map[string]interface{} {
	m := map[string]interface{}{"type": "integer", "minimum": minimum}
	if format != "" {
		m["format"] = format
	}
	return m
}

// networkTopologySchema is NetworkTopologySpec: the PodGroup's mode is an
// enum (hard|soft), the Job's a free string; both default to hard.
func networkTopologySchema(modeEnum bool) map[string]interface{} {
	mode := map[string]interface{}{"type": "string", "default": "hard"}
	if modeEnum {
		mode["enum"] = []interface{}{"hard", "soft"}
	}
	name := map[string]interface{}{"type": "string", "maxLength": int64(253)}
	return map[string]interface{}{
		"type": "object",
		"properties": map[string]interface{}{
			"mode":               mode,
			"highestTierAllowed": integer("", 0),
			"highestTierName":    name,
		},
	}
}

// labelSelectorSchema is metav1.LabelSelector's.
func labelSelectorSchema() map[string]interface{} {
	return map[string]interface{}{
		"type":                  "object",
		"x-kubernetes-map-type": "atomic",
		"properties": map[string]interface{}{
			"matchLabels": map[string]interface{}{"type": "object", "additionalProperties": str()},
			"matchExpressions": map[string]interface{}{
				"type": "array",
				"items": map[string]interface{}{
					"type":     "object",
					"required": []interface{}{"key", "operator"},
					"properties": map[string]interface{}{
						"key":      str(),
						"operator": str(),
						"values":   map[string]interface{}{"type": "array", "items": str(), "x-kubernetes-list-type": "atomic"},
					},
				},
				"x-kubernetes-list-type": "atomic",
			},
		},
	}
}

// subGroupPolicySchema is []SubGroupPolicySpec.
func subGroupPolicySchema() map[string]interface{} {
	size := integer("int32", 1)
	size["default"] = int64(1)
	min := integer("int32", 0)
	min["default"] = int64(0)
	return map[string]interface{}{
		"type": "array",
		"items": map[string]interface{}{
			"type": "object",
			"properties": map[string]interface{}{
				"name":            map[string]interface{}{"type": "string", "maxLength": int64(253)},
				"networkTopology": networkTopologySchema(true),
				"subGroupSize":    size,
				"minSubGroups":    min,
				"labelSelector":   labelSelectorSchema(),
				"matchLabelKeys":  map[string]interface{}{"type": "array", "items": str(), "x-kubernetes-list-type": "atomic"},
			},
		},
	}
}

// partitionPolicySchema is PartitionPolicySpec.
func partitionPolicySchema() map[string]interface{} {
	min := integer("int32", 0)
	min["default"] = int64(0)
	return map[string]interface{}{
		"type":     "object",
		"required": []interface{}{"partitionSize", "totalPartitions"},
		"properties": map[string]interface{}{
			"totalPartitions": integer("int32", 1),
			"partitionSize":   integer("int32", 1),
			"minPartitions":   min,
			"networkTopology": networkTopologySchema(false),
		},
	}
}

// AddNativeTopologySchema adds the v1.12+ topology fields to the PodGroup
// and Job CRDs among crds (every served version): PodGroup
// spec.networkTopology and spec.subGroupPolicy, Job spec.networkTopology
// and spec.tasks[].partitionPolicy. A CRD of another name is left as it
// is; a PodGroup or Job CRD without the expected schema is an error.
func AddNativeTopologySchema(crds []*unstructured.Unstructured) error {
	for _, crd := range crds {
		var add map[string]map[string]interface{}
		var path []string
		switch crd.GetName() {
		case PodGroupCRD:
			path = []string{"spec", "properties"}
			add = map[string]map[string]interface{}{"networkTopology": networkTopologySchema(true), "subGroupPolicy": subGroupPolicySchema()}
		case JobCRD:
			path = []string{"spec", "properties"}
			add = map[string]map[string]interface{}{"networkTopology": networkTopologySchema(false)}
		default:
			continue
		}
		versions, _, err := unstructured.NestedSlice(crd.Object, "spec", "versions")
		if err != nil || len(versions) == 0 {
			return fmt.Errorf("CRD %s: no spec.versions (%v)", crd.GetName(), err)
		}
		for i, v := range versions {
			vm, _ := v.(map[string]interface{})
			root := append([]string{"schema", "openAPIV3Schema", "properties"}, path...)
			props, found, err := unstructured.NestedMap(vm, root...)
			if err != nil || !found {
				return fmt.Errorf("CRD %s version %d: no %v (%v)", crd.GetName(), i, root, err)
			}
			for k, s := range add {
				props[k] = s
			}
			if crd.GetName() == JobCRD {
				task, found, err := unstructured.NestedMap(props, "tasks", "items", "properties")
				if err != nil || !found {
					return fmt.Errorf("CRD %s version %d: no spec.tasks item schema (%v)", crd.GetName(), i, err)
				}
				task["partitionPolicy"] = partitionPolicySchema()
				if err := unstructured.SetNestedMap(props, task, "tasks", "items", "properties"); err != nil {
					return err
				}
			}
			if err := unstructured.SetNestedMap(vm, props, root...); err != nil {
				return err
			}
			versions[i] = vm
		}
		if err := unstructured.SetNestedSlice(crd.Object, versions, "spec", "versions"); err != nil {
			return err
		}
	}
	return nil
}
