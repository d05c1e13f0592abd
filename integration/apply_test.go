package integration

import (
	"context"
	"path/filepath"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/rdmatopo/rdmatopo/internal/testing/harness"
)

// crdEstablishedTimeout bounds the wait for installed CRDs to be served.
const crdEstablishedTimeout = 60 * time.Second

// Modules that ship the CRDs the tests install (and harness.VolcanoModule).
const (
	katalystModule         = "github.com/kubewharf/katalyst-api"
	trainingOperatorModule = "github.com/kubeflow/training-operator"
)

// installCRDs installs, from the modules that define them, Volcano's CRDs
// (PodGroup and Job with the v1.12+ topology fields added),
// katalyst's CustomNodeResource, the training operator's PyTorchJob,
// Trainer's TrainJob and (Cluster)TrainingRuntime and JobSet's JobSet, plus
// Volcano's HyperNode (see hyperNodeCRD), and waits until every one is
// established.
func (e *Env) installCRDs(ctx context.Context) error {
	volcano, err := harness.ModuleDir(ctx, e.RepoRoot, harness.VolcanoModule)
	if err != nil {
		return err
	}
	katalyst, err := harness.ModuleDir(ctx, e.RepoRoot, katalystModule)
	if err != nil {
		return err
	}
	operator, err := harness.ModuleDir(ctx, filepath.Join(e.RepoRoot, "integration", "tools", "training-operator"), trainingOperatorModule)
	if err != nil {
		return err
	}
	volcanoFiles, err := harness.VolcanoCRDFiles(volcano)
	if err != nil {
		return err
	}
	// Volcano's CRDs with the v1.12+ topology fields, as on a cluster on
	// Volcano >= 1.12 (harness.AddNativeTopologySchema).
	var volcanoCRDs []*unstructured.Unstructured
	for _, f := range volcanoFiles {
		objs, err := harness.ReadManifests(f)
		if err != nil {
			return err
		}
		volcanoCRDs = append(volcanoCRDs, objs...)
	}
	if err := harness.AddNativeTopologySchema(volcanoCRDs); err != nil {
		return err
	}
	files := []string{
		filepath.Join(katalyst, "config", "crd", "bases", "node.katalyst.kubewharf.io_customnoderesources.yaml"),
		filepath.Join(operator, "manifests", "base", "crds", "kubeflow.org_pytorchjobs.yaml"),
	}
	trainer, err := e.trainerCRDFiles(ctx)
	if err != nil {
		return err
	}
	files = append(files, trainer...)
	return harness.InstallCRDs(ctx, e.Dynamic, files, append(volcanoCRDs, hyperNodeCRD()), crdEstablishedTimeout)
}

// createClusterObjects creates what the components expect to exist: the
// default Queue, the scheduler's RBAC (Volcano's stock ClusterRole and
// binding from the module's installer, plus config/rbac), and the training
// operator's namespace, Secret and webhook configuration.
func (e *Env) createClusterObjects(ctx context.Context) error {
	if err := e.CreateVolcanoBasics(ctx, e.RepoRoot, operatorNamespace); err != nil {
		return err
	}
	return e.createOperatorPrerequisites(ctx)
}

// create creates objects through the dynamic client; objects that already
// exist are left as they are.
func (e *Env) create(ctx context.Context, objs []*unstructured.Unstructured) error {
	return harness.CreateObjects(ctx, e.Kube.Discovery(), e.Dynamic, objs)
}

func ptrTo[T any](v T) *T { return &v }
