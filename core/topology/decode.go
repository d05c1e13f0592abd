package topology

import (
	"bytes"
	"errors"
	"fmt"

	"github.com/kubewharf/katalyst-api/pkg/apis/node/v1alpha1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer/json"
	"sigs.k8s.io/yaml"
)

// cnrDecoder decodes YAML or JSON KCNRs strictly: unknown fields and
// duplicate keys are errors.
var cnrDecoder = func() runtime.Decoder {
	scheme := runtime.NewScheme()
	if err := v1alpha1.AddToScheme(scheme); err != nil {
		panic(fmt.Sprintf("registering katalyst node/v1alpha1 types: %v", err))
	}
	return json.NewSerializerWithOptions(json.DefaultMetaFactory, scheme, scheme,
		json.SerializerOptions{Yaml: true, Strict: true})
}()

// cnrKind is assumed when the document names no apiVersion/kind.
var cnrKind = v1alpha1.SchemeGroupVersion.WithKind("CustomNodeResource")

// DecodeCNR decodes one KCNR from YAML or JSON. A document without
// apiVersion/kind is taken as a KCNR; an empty document, a missing
// metadata.name, any other kind, an unknown field or a wrongly typed value is
// an error naming the object and the field. It never panics.
func DecodeCNR(data []byte) (cnr *v1alpha1.CustomNodeResource, err error) {
	defer func() {
		if r := recover(); r != nil {
			cnr, err = nil, fmt.Errorf("decode CustomNodeResource%s: malformed document: %v", nameOf(data), r)
		}
	}()
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, errors.New("decode CustomNodeResource: empty document")
	}
	obj, gvk, err := cnrDecoder.Decode(data, &cnrKind, nil)
	if err != nil {
		return nil, fmt.Errorf("decode CustomNodeResource%s: %w", nameOf(data), err)
	}
	out, ok := obj.(*v1alpha1.CustomNodeResource)
	if !ok {
		return nil, fmt.Errorf("decode CustomNodeResource%s: document is a %s", nameOf(data), gvk)
	}
	if out.Name == "" {
		return nil, errors.New("decode CustomNodeResource: metadata.name is empty")
	}
	return out, nil
}

// nameOf extracts metadata.name from a document that failed to decode, for
// the error message (" \"name\"", or "" when it cannot be found).
func nameOf(data []byte) (s string) {
	defer func() {
		if recover() != nil {
			s = ""
		}
	}()
	var doc struct {
		Metadata struct {
			Name string `json:"name"`
		} `json:"metadata"`
	}
	if yaml.Unmarshal(data, &doc) != nil || doc.Metadata.Name == "" {
		return ""
	}
	return fmt.Sprintf(" %q", doc.Metadata.Name)
}
