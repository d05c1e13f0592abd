package integration

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

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/restmapper"
	schedulingv1beta1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"
)

// crdEstablishedTimeout bounds the wait for installed CRDs to be served.
const crdEstablishedTimeout = 60 * time.Second

// Modules that ship the CRDs the tests install.
const (
	volcanoModule          = "volcano.sh/volcano"
	katalystModule         = "github.com/kubewharf/katalyst-api"
	trainingOperatorModule = "github.com/kubeflow/training-operator"
)

var crdGVR = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

// installCRDs installs, from the modules that define them, Volcano's CRDs,
// katalyst's CustomNodeResource, the training operator's PyTorchJob,
// Trainer's TrainJob and (Cluster)TrainingRuntime and JobSet's JobSet, plus
// Volcano's HyperNode (see hyperNodeCRD), and waits until every one is
// established.
func (e *Env) installCRDs(ctx context.Context) error {
	volcano, err := moduleDir(ctx, e.RepoRoot, volcanoModule)
	if err != nil {
		return err
	}
	katalyst, err := moduleDir(ctx, e.RepoRoot, katalystModule)
	if err != nil {
		return err
	}
	operator, err := moduleDir(ctx, filepath.Join(e.RepoRoot, "integration", "tools", "training-operator"), trainingOperatorModule)
	if err != nil {
		return err
	}
	var files []string
	for _, pattern := range []string{
		filepath.Join(volcano, "config", "crd", "volcano", "bases", "*.yaml"),
		filepath.Join(volcano, "config", "crd", "jobflow", "bases", "*.yaml"),
	} {
		m, err := filepath.Glob(pattern)
		if err != nil {
			return err
		}
		if len(m) == 0 {
			return fmt.Errorf("no CRDs match %s", pattern)
		}
		files = append(files, m...)
	}
	files = append(files,
		filepath.Join(katalyst, "config", "crd", "bases", "node.katalyst.kubewharf.io_customnoderesources.yaml"),
		filepath.Join(operator, "manifests", "base", "crds", "kubeflow.org_pytorchjobs.yaml"),
	)
	trainer, err := e.trainerCRDFiles(ctx)
	if err != nil {
		return err
	}
	files = append(files, trainer...)
	var names []string
	hn := hyperNodeCRD()
	if _, err := e.Dynamic.Resource(crdGVR).Create(ctx, hn, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create CRD %s: %w", hn.GetName(), err)
	}
	names = append(names, hn.GetName())
	for _, f := range files {
		objs, err := readManifests(f)
		if err != nil {
			return err
		}
		for _, o := range objs {
			if o.GetKind() != "CustomResourceDefinition" {
				return fmt.Errorf("%s: %s %s is not a CustomResourceDefinition", f, o.GetKind(), o.GetName())
			}
			if _, err := e.Dynamic.Resource(crdGVR).Create(ctx, o, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
				return fmt.Errorf("%s: create CRD %s: %w", f, o.GetName(), err)
			}
			names = append(names, o.GetName())
		}
	}
	sort.Strings(names)
	ctx, cancel := context.WithTimeout(ctx, crdEstablishedTimeout)
	defer cancel()
	for _, name := range names {
		for {
			ok, err := crdEstablished(ctx, e, name)
			if err != nil {
				return err
			}
			if ok {
				break
			}
			select {
			case <-ctx.Done():
				return fmt.Errorf("CRD %s not established within %s", name, crdEstablishedTimeout)
			case <-time.After(100 * time.Millisecond):
			}
		}
	}
	return nil
}

func crdEstablished(ctx context.Context, e *Env, name string) (bool, error) {
	crd, err := e.Dynamic.Resource(crdGVR).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return false, fmt.Errorf("get CRD %s: %w", name, err)
	}
	conds, _, _ := unstructured.NestedSlice(crd.Object, "status", "conditions")
	for _, c := range conds {
		m, _ := c.(map[string]interface{})
		if m["type"] == "Established" && m["status"] == "True" {
			return true, nil
		}
	}
	return false, nil
}

// createClusterObjects creates what the components expect to exist: the
// default Queue, the scheduler's RBAC (Volcano's stock ClusterRole and
// binding from the module's installer, plus config/rbac), and the training
// operator's namespace, Secret and webhook configuration.
func (e *Env) createClusterObjects(ctx context.Context) error {
	queue := &schedulingv1beta1.Queue{
		ObjectMeta: metav1.ObjectMeta{Name: "default"},
		Spec:       schedulingv1beta1.QueueSpec{Weight: 1, Reclaimable: ptrTo(true)},
	}
	if _, err := e.Volcano.SchedulingV1beta1().Queues().Create(ctx, queue, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create Queue default: %w", err)
	}
	for _, ns := range []string{"volcano-system", operatorNamespace} {
		obj := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}
		if _, err := e.Kube.CoreV1().Namespaces().Create(ctx, obj, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("create Namespace %s: %w", ns, err)
		}
	}
	volcano, err := moduleDir(ctx, e.RepoRoot, volcanoModule)
	if err != nil {
		return err
	}
	installer := filepath.Join(volcano, "installer", "volcano-development.yaml")
	stock, err := readManifests(installer)
	if err != nil {
		return err
	}
	want := map[string]bool{"ClusterRole/volcano-scheduler": true, "ClusterRoleBinding/volcano-scheduler-role": true}
	var rbac []*unstructured.Unstructured
	for _, o := range stock {
		if want[o.GetKind()+"/"+o.GetName()] {
			rbac = append(rbac, o)
			delete(want, o.GetKind()+"/"+o.GetName())
		}
	}
	if len(want) > 0 {
		return fmt.Errorf("%s: missing %v", installer, want)
	}
	ours, err := readManifests(filepath.Join(e.RepoRoot, "config", "rbac", "rbac.yaml"))
	if err != nil {
		return err
	}
	if err := e.create(ctx, append(rbac, ours...)); err != nil {
		return err
	}
	return e.createOperatorPrerequisites(ctx)
}

// create creates objects through the dynamic client; objects that already
// exist are left as they are.
func (e *Env) create(ctx context.Context, objs []*unstructured.Unstructured) error {
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(e.Kube.Discovery()))
	for _, o := range objs {
		gvk := o.GroupVersionKind()
		mapping, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
		if err != nil {
			return fmt.Errorf("%s %s: %w", gvk.Kind, o.GetName(), err)
		}
		var res = e.Dynamic.Resource(mapping.Resource)
		var err2 error
		if mapping.Scope.Name() == meta.RESTScopeNameNamespace {
			ns := o.GetNamespace()
			if ns == "" {
				ns = metav1.NamespaceDefault
			}
			_, err2 = res.Namespace(ns).Create(ctx, o, metav1.CreateOptions{})
		} else {
			_, err2 = res.Create(ctx, o, metav1.CreateOptions{})
		}
		if err2 != nil && !apierrors.IsAlreadyExists(err2) {
			return fmt.Errorf("create %s %s: %w", gvk.Kind, o.GetName(), err2)
		}
	}
	return nil
}

// readManifests decodes every object of a multi-document YAML file.
func readManifests(path string) ([]*unstructured.Unstructured, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return decodeManifests(path, data)
}

// decodeManifests decodes every object of multi-document YAML; path names
// the input in errors.
func decodeManifests(path string, data []byte) ([]*unstructured.Unstructured, error) {
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

func ptrTo[T any](v T) *T { return &v }
