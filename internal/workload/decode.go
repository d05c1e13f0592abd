// Package workload reads the inputs of `rdmatopo simulate`: a cluster (Nodes,
// katalyst CustomNodeResources, bound Pods) and a workload (Queues,
// PodGroups, Pods, Volcano Jobs and PyTorchJobs), from multi-document YAML or
// JSON, strictly and with kubectl's YAML semantics (sigs.k8s.io/yaml, YAML 1.1
// scalars: an unquoted `yes` is a boolean).
//
// Controller-owned kinds are expanded into the PodGroup and Pods their
// controllers create: a batch.volcano.sh/v1alpha1 Job as Volcano v1.10's job
// controller does, a kubeflow.org/v1 PyTorchJob as the training operator
// (v1.8) does with Volcano gang scheduling.
//
// Every problem is an *InputError naming the file, the object and the field.
// Objects get deterministic UIDs and creation timestamps when the input has
// none, so that a simulation of the same input is reproducible.
package workload

import (
	"encoding/json"
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"
	kjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"
)

// rawObject is one decoded YAML document (or List item) before it is typed.
type rawObject struct {
	origin
	apiVersion string
	kind       string
	namespace  string
	name       string
	// data is the object as JSON.
	data []byte
}

// errorf builds an InputError naming this object.
func (r *rawObject) errorf(field, format string, args ...any) *InputError {
	return r.origin.errorf(r.kind, r.namespace, r.name, field, format, args...)
}

// document is one YAML document of a file with its first line (1-based).
type document struct {
	text      []byte
	startLine int
}

// splitDocuments cuts a multi-document YAML stream at `---` lines. The
// first line of each document is kept so YAML errors can name file lines.
func splitDocuments(data []byte) []document {
	lines := strings.SplitAfter(string(data), "\n")
	var docs []document
	cur := document{startLine: 1}
	var b strings.Builder
	for i, line := range lines {
		trimmed := strings.TrimRight(line, "\r\n")
		if trimmed == "---" || strings.HasPrefix(trimmed, "--- ") {
			cur.text = []byte(b.String())
			docs = append(docs, cur)
			b.Reset()
			cur = document{startLine: i + 2}
			continue
		}
		b.WriteString(line)
	}
	cur.text = []byte(b.String())
	docs = append(docs, cur)
	return docs
}

// yamlLine matches the line numbers in go-yaml error messages.
var yamlLine = regexp.MustCompile(`line (\d+)`)

// shiftYAMLLines rewrites document-relative line numbers in a YAML error
// message into file line numbers.
func shiftYAMLLines(msg string, startLine int) string {
	msg = strings.TrimPrefix(msg, "error converting YAML to JSON: ")
	msg = strings.TrimPrefix(msg, "yaml: ")
	msg = strings.ReplaceAll(msg, "unmarshal errors:\n  ", "")
	return yamlLine.ReplaceAllStringFunc(msg, func(m string) string {
		n, err := strconv.Atoi(strings.TrimPrefix(m, "line "))
		if err != nil {
			return m
		}
		return fmt.Sprintf("line %d", n+startLine-1)
	})
}

// readObjects splits a file into raw objects: one per non-empty document,
// one per item of a List document.
func readObjects(file string, data []byte) ([]*rawObject, error) {
	var out []*rawObject
	for i, doc := range splitDocuments(data) {
		o := origin{file: file, doc: i + 1}
		js, err := yaml.YAMLToJSONStrict(doc.text)
		if err != nil {
			return nil, o.errorf("", "", "", "", "invalid YAML: %s", shiftYAMLLines(err.Error(), doc.startLine))
		}
		trimmed := strings.TrimSpace(string(js))
		if trimmed == "null" || trimmed == "" {
			continue // empty or comment-only document
		}
		objs, ierr := splitList(o, js)
		if ierr != nil {
			return nil, ierr
		}
		out = append(out, objs...)
	}
	return out, nil
}

// header is the part of every object read before its kind is known.
type header struct {
	APIVersion any `json:"apiVersion"`
	Kind       any `json:"kind"`
	Metadata   any `json:"metadata"`
	Items      any `json:"items"`
}

// identify reads apiVersion, kind, metadata.name and metadata.namespace
// leniently (wrong types are reported by the strict, typed decode later).
func identify(o origin, js []byte) (*rawObject, *InputError) {
	var h header
	if err := json.Unmarshal(js, &h); err != nil {
		return nil, o.errorf("", "", "", "", "document is not an object: %v", err)
	}
	r := &rawObject{origin: o, data: js}
	r.apiVersion, _ = h.APIVersion.(string)
	r.kind, _ = h.Kind.(string)
	if md, ok := h.Metadata.(map[string]any); ok {
		r.name, _ = md["name"].(string)
		r.namespace, _ = md["namespace"].(string)
	}
	return r, nil
}

// splitList returns the object of a document, or the items of a List.
func splitList(o origin, js []byte) ([]*rawObject, *InputError) {
	r, ierr := identify(o, js)
	if ierr != nil {
		return nil, ierr
	}
	if !strings.HasSuffix(r.kind, "List") {
		return []*rawObject{r}, nil
	}
	var list struct {
		Items []json.RawMessage `json:"items"`
	}
	if err := json.Unmarshal(js, &list); err != nil {
		return nil, r.errorf("items", "must be a list of objects")
	}
	itemKind := strings.TrimSuffix(r.kind, "List")
	out := make([]*rawObject, 0, len(list.Items))
	for i, item := range list.Items {
		io := origin{file: o.file, doc: o.doc, item: i + 1}
		ri, ierr := identify(io, item)
		if ierr != nil {
			return nil, ierr
		}
		// Typed lists (NodeList, ...) may omit the items' kind.
		if ri.kind == "" && itemKind != "" {
			ri.kind, ri.apiVersion = itemKind, r.apiVersion
			ri.data, ierr = withTypeMeta(io, item, ri.apiVersion, ri.kind)
			if ierr != nil {
				return nil, ierr
			}
		}
		out = append(out, ri)
	}
	return out, nil
}

// withTypeMeta sets apiVersion and kind on a JSON object.
func withTypeMeta(o origin, js []byte, apiVersion, kind string) ([]byte, *InputError) {
	var m map[string]any
	if err := json.Unmarshal(js, &m); err != nil {
		return nil, o.errorf(kind, "", "", "", "item is not an object")
	}
	m["apiVersion"], m["kind"] = apiVersion, kind
	out, err := json.Marshal(m)
	if err != nil {
		return nil, o.errorf(kind, "", "", "", "re-encoding item: %v", err)
	}
	return out, nil
}

// typeError matches encoding/json type errors, which name the Go struct
// type followed by the JSON path: "... Go struct field PodGroupSpec.spec.minMember of type int32".
var typeError = regexp.MustCompile(`cannot unmarshal (\S+) into Go struct field [^.\s]+\.(\S+) of type (\S+)`)

// unknownField matches the strict decoder's unknown-field errors.
var unknownField = regexp.MustCompile(`unknown field "([^"]+)"`)

// decodeStrict decodes r into out, rejecting unknown and duplicate fields,
// and turns any failure into an InputError naming the field.
func decodeStrict(r *rawObject, out any) *InputError {
	strictErrs, err := kjson.UnmarshalStrict(r.data, out, kjson.DisallowDuplicateFields, kjson.DisallowUnknownFields)
	if err != nil {
		return decodeError(r, err)
	}
	if len(strictErrs) > 0 {
		return decodeError(r, strictErrs[0])
	}
	return nil
}

// decodeError names the field of a decoding error.
func decodeError(r *rawObject, err error) *InputError {
	msg := err.Error()
	if m := unknownField.FindStringSubmatch(msg); m != nil {
		return r.errorf(m[1], "unknown field")
	}
	if m := typeError.FindStringSubmatch(msg); m != nil {
		return r.errorf(m[2], "must be %s, got %s", jsonTypeName(m[3]), m[1])
	}
	if strings.Contains(msg, "quantities must match") || strings.Contains(msg, "unable to parse quantity") {
		if path := badQuantityPath(r.data); path != "" {
			return r.errorf(path, "not a valid quantity")
		}
		return r.errorf("", "a resource quantity is not valid")
	}
	if strings.Contains(msg, "duplicate field") {
		return r.errorf("", "%s", msg)
	}
	return r.errorf("", "%s", msg)
}

// jsonTypeName renders a Go type of a type error the way a manifest author
// thinks of it.
func jsonTypeName(goType string) string {
	switch {
	case strings.HasPrefix(goType, "int"), strings.HasPrefix(goType, "uint"):
		return "an integer"
	case goType == "bool":
		return "a boolean"
	case goType == "string":
		return "a string (quote it)"
	case strings.HasPrefix(goType, "map"), strings.HasPrefix(goType, "v1.") || strings.Contains(goType, "."):
		return "an object (" + goType + ")"
	case strings.HasPrefix(goType, "[]"):
		return "a list"
	default:
		return goType
	}
}

// badQuantityPath finds the first string in a document that sits in a
// resource list and does not parse as a quantity, and returns its path.
func badQuantityPath(js []byte) string {
	var doc any
	if json.Unmarshal(js, &doc) != nil {
		return ""
	}
	var found string
	var walk func(v any, path string, inResources bool)
	walk = func(v any, path string, inResources bool) {
		if found != "" {
			return
		}
		switch t := v.(type) {
		case map[string]any:
			keys := make([]string, 0, len(t))
			for k := range t {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			for _, k := range keys {
				walk(t[k], joinPath(path, k), inResources || quantityParents[k])
			}
		case []any:
			for i, e := range t {
				walk(e, fmt.Sprintf("%s[%d]", path, i), inResources)
			}
		case string:
			if inResources {
				if _, err := resource.ParseQuantity(t); err != nil {
					found = path
				}
			}
		}
	}
	walk(doc, "", false)
	return found
}

// quantityParents are the keys whose values are resource lists.
var quantityParents = map[string]bool{
	"requests": true, "limits": true, "allocatable": true, "capacity": true,
	"minResources": true, "overhead": true, "capability": true, "deserved": true,
	"guarantee": true, "resource": true, "hard": true, "propertyQuantity": true,
}

// identRE matches keys that can be written after a dot in a field path.
var identRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_-]*$`)

// joinPath appends a key to a JSON path, quoting keys like nvidia.com/gpu.
func joinPath(path, key string) string {
	if !identRE.MatchString(key) {
		return fmt.Sprintf("%s[%q]", path, key)
	}
	if path == "" {
		return key
	}
	return path + "." + key
}
