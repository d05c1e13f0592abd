package harness

import (
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// HyperNodeResource is Volcano's HyperNode resource.
var HyperNodeResource = schema.GroupVersionResource{Group: "topology.volcano.sh", Version: "v1alpha1", Resource: "hypernodes"}

// HyperNodeCRD is Volcano's HyperNode CRD (topology.volcano.sh/v1alpha1,
// cluster-scoped, plural hypernodes, short name hn), written after the
// kubebuilder markers of volcano.sh/apis v1.13.0's hypernode_types.go:
// its manifest ships in volcano.sh/volcano v1.13.0, a module version the
// module proxy does not serve. The schema holds what the scheduler reads
// (tier, v1.14's tierName, members with type Node or HyperNode and one
// selector) with the
// upstream validation; status is left open.
func HyperNodeCRD() *unstructured.Unstructured {
	str := map[string]interface{}{"type": "string"}
	selector := map[string]interface{}{
		"type": "object",
		"properties": map[string]interface{}{
			"exactMatch": map[string]interface{}{"type": "object", "properties": map[string]interface{}{"name": str}},
			"regexMatch": map[string]interface{}{"type": "object", "properties": map[string]interface{}{"pattern": str}},
			"labelMatch": map[string]interface{}{"type": "object", "x-kubernetes-preserve-unknown-fields": true},
		},
		"x-kubernetes-validations": []interface{}{
			map[string]interface{}{
				"rule":    "has(self.exactMatch) || has(self.regexMatch) || has(self.labelMatch)",
				"message": "Either ExactMatch or RegexMatch or LabelMatch must be specified",
			},
			map[string]interface{}{
				"rule":    "(has(self.exactMatch) ? 1 : 0) + (has(self.regexMatch) ? 1 : 0) + (has(self.labelMatch) ? 1 : 0) <= 1",
				"message": "Only one of ExactMatch, RegexMatch, or LabelMatch can be specified",
			},
		},
	}
	schema := map[string]interface{}{
		"type": "object",
		"properties": map[string]interface{}{
			"spec": map[string]interface{}{
				"type":     "object",
				"required": []interface{}{"tier"},
				"properties": map[string]interface{}{
					"tier":     map[string]interface{}{"type": "integer"},
					"tierName": map[string]interface{}{"type": "string", "maxLength": int64(253)},
					"members": map[string]interface{}{
						"type": "array",
						"items": map[string]interface{}{
							"type": "object",
							"properties": map[string]interface{}{
								"type":     map[string]interface{}{"type": "string", "enum": []interface{}{"Node", "HyperNode"}},
								"selector": selector,
							},
						},
					},
				},
			},
			"status": map[string]interface{}{"type": "object", "x-kubernetes-preserve-unknown-fields": true},
		},
	}
	gvr := HyperNodeResource
	return &unstructured.Unstructured{Object: map[string]interface{}{
		"apiVersion": "apiextensions.k8s.io/v1",
		"kind":       "CustomResourceDefinition",
		"metadata":   map[string]interface{}{"name": gvr.Resource + "." + gvr.Group},
		"spec": map[string]interface{}{
			"group": gvr.Group,
			"scope": "Cluster",
			"names": map[string]interface{}{
				"plural": gvr.Resource, "singular": "hypernode", "kind": "HyperNode",
				"listKind": "HyperNodeList", "shortNames": []interface{}{"hn"},
			},
			"versions": []interface{}{map[string]interface{}{
				"name": gvr.Version, "served": true, "storage": true,
				"schema":       map[string]interface{}{"openAPIV3Schema": schema},
				"subresources": map[string]interface{}{"status": map[string]interface{}{}},
			}},
		},
	}}
}
