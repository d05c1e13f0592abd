package harness

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/restmapper"
)

// VolcanoModule ships Volcano's CRDs and its installer manifest.
const VolcanoModule = "volcano.sh/volcano"

// CRDResource is the CustomResourceDefinition resource.
var CRDResource = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

// ReadManifests decodes every object of a multi-document YAML file.
func ReadManifests(path string) ([]*unstructured.Unstructured, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return DecodeManifests(path, data)
}

// DecodeManifests decodes every object of multi-document YAML; path names
// the input in errors. Empty documents are skipped; an object without a
// kind is an error.
func DecodeManifests(path string, data []byte) ([]*unstructured.Unstructured, error) {
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	var out []*unstructured.Unstructured
	for {
		var obj map[string]interface{}
		if err := dec.Decode(&obj); err != nil {
			if errors.Is(err, io.EOF) {
				return out, nil
			}
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		if len(obj) == 0 {
			continue
		}
		u := &unstructured.Unstructured{Object: obj}
		if u.GetKind() == "" {
			return nil, fmt.Errorf("%s: object without kind", path)
		}
		out = append(out, u)
	}
}

// CreateObjects creates objects through the dynamic client, finding each
// kind's resource by discovery; objects that already exist are left as
// they are. A namespaced object without a namespace goes to "default".
func CreateObjects(ctx context.Context, disc discovery.DiscoveryInterface, dyn dynamic.Interface, objs []*unstructured.Unstructured) error {
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(disc))
	for _, o := range objs {
		gvk := o.GroupVersionKind()
		m, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
		if err != nil {
			return fmt.Errorf("%s %s: %w", gvk.Kind, o.GetName(), err)
		}
		res := dyn.Resource(m.Resource)
		if m.Scope.Name() == meta.RESTScopeNameNamespace {
			ns := o.GetNamespace()
			if ns == "" {
				ns = metav1.NamespaceDefault
			}
			_, err = res.Namespace(ns).Create(ctx, o, metav1.CreateOptions{})
		} else {
			_, err = res.Create(ctx, o, metav1.CreateOptions{})
		}
		if err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("create %s %s: %w", gvk.Kind, o.GetName(), err)
		}
	}
	return nil
}

// InstallCRDs creates the CRDs of the files, and the extra ones given as
// objects, and waits up to timeout until every one is established. A file
// object that is not a CustomResourceDefinition is an error.
func InstallCRDs(ctx context.Context, dyn dynamic.Interface, files []string, extra []*unstructured.Unstructured, timeout time.Duration) error {
	crds := append([]*unstructured.Unstructured(nil), extra...)
	for _, f := range files {
		objs, err := ReadManifests(f)
		if err != nil {
			return err
		}
		for _, o := range objs {
			if o.GetKind() != "CustomResourceDefinition" {
				return fmt.Errorf("%s: %s %s is not a CustomResourceDefinition", f, o.GetKind(), o.GetName())
			}
		}
		crds = append(crds, objs...)
	}
	names := make([]string, 0, len(crds))
	for _, o := range crds {
		if _, err := dyn.Resource(CRDResource).Create(ctx, o, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("create CRD %s: %w", o.GetName(), err)
		}
		names = append(names, o.GetName())
	}
	sort.Strings(names)
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	for _, name := range names {
		for {
			crd, err := dyn.Resource(CRDResource).Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return fmt.Errorf("get CRD %s: %w", name, err)
			}
			if Established(crd) {
				break
			}
			select {
			case <-ctx.Done():
				return fmt.Errorf("CRD %s not established within %s", name, timeout)
			case <-time.After(100 * time.Millisecond):
			}
		}
	}
	return nil
}

// Established reports whether a CRD's Established condition is True.
func Established(crd *unstructured.Unstructured) bool {
	conds, _, _ := unstructured.NestedSlice(crd.Object, "status", "conditions")
	for _, c := range conds {
		if m, _ := c.(map[string]interface{}); m["type"] == "Established" && m["status"] == "True" {
			return true
		}
	}
	return false
}

// VolcanoCRDFiles returns the CRD manifests of Volcano's module directory:
// its scheduling and batch kinds and JobFlow's (vc-controller-manager waits
// for the JobFlow informers too).
func VolcanoCRDFiles(volcanoDir string) ([]string, error) {
	var files []string
	for _, sub := range []string{"volcano", "jobflow"} {
		pattern := filepath.Join(volcanoDir, "config", "crd", sub, "bases", "*.yaml")
		m, err := filepath.Glob(pattern)
		if err != nil {
			return nil, err
		}
		if len(m) == 0 {
			return nil, fmt.Errorf("no CRDs match %s", pattern)
		}
		files = append(files, m...)
	}
	return files, nil
}

// SchedulerRBAC returns what the scheduler runs with: Volcano's stock
// volcano-scheduler ClusterRole and its binding, from the installer
// manifest of Volcano's module directory, plus rdmatopo's config/rbac
// under repoRoot. A missing stock object is an error.
func SchedulerRBAC(volcanoDir, repoRoot string) ([]*unstructured.Unstructured, error) {
	installer := filepath.Join(volcanoDir, "installer", "volcano-development.yaml")
	stock, err := ReadManifests(installer)
	if err != nil {
		return nil, err
	}
	want := map[string]bool{"ClusterRole/volcano-scheduler": true, "ClusterRoleBinding/volcano-scheduler-role": true}
	var out []*unstructured.Unstructured
	for _, o := range stock {
		if k := o.GetKind() + "/" + o.GetName(); want[k] {
			out = append(out, o)
			delete(want, k)
		}
	}
	if len(want) > 0 {
		return nil, fmt.Errorf("%s: missing %v", installer, want)
	}
	ours, err := ReadManifests(filepath.Join(repoRoot, "config", "rbac", "rbac.yaml"))
	if err != nil {
		return nil, err
	}
	return append(out, ours...), nil
}
