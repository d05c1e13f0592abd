package harness

import (
	"context"
	"path/filepath"
	"testing"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// volcanoModuleDir is the Volcano module directory of the repository's
// main module.
func volcanoModuleDir(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs(filepath.Join("..", "..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	dir, err := ModuleDir(context.Background(), root, VolcanoModule)
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestAddNativeTopologySchema: Volcano v1.10's PodGroup and Job CRDs, from
// the module the tests install them from, gain the v1.12+ topology fields
// in every version; other CRDs are left alone.
func TestAddNativeTopologySchema(t *testing.T) {
	dir := volcanoModuleDir(t)
	var crds []*unstructured.Unstructured
	for _, f := range []string{"scheduling.volcano.sh_podgroups.yaml", "batch.volcano.sh_jobs.yaml", "scheduling.volcano.sh_queues.yaml"} {
		objs, err := ReadManifests(filepath.Join(dir, "config", "crd", "volcano", "bases", f))
		if err != nil {
			t.Fatal(err)
		}
		crds = append(crds, objs...)
	}
	queueBefore := crds[2].DeepCopy()
	if err := AddNativeTopologySchema(crds); err != nil {
		t.Fatal(err)
	}
	has := func(crd *unstructured.Unstructured, path ...string) bool {
		versions, _, _ := unstructured.NestedSlice(crd.Object, "spec", "versions")
		for _, v := range versions {
			root := append([]string{"schema", "openAPIV3Schema", "properties", "spec", "properties"}, path...)
			if _, found, _ := unstructured.NestedMap(v.(map[string]interface{}), root...); !found {
				return false
			}
		}
		return len(versions) > 0
	}
	for _, c := range []struct {
		crd  *unstructured.Unstructured
		path []string
	}{
		{crds[0], []string{"networkTopology", "properties", "highestTierName"}},
		{crds[0], []string{"subGroupPolicy", "items", "properties", "matchLabelKeys"}},
		{crds[1], []string{"networkTopology", "properties", "highestTierAllowed"}},
		{crds[1], []string{"tasks", "items", "properties", "partitionPolicy", "properties", "minPartitions"}},
	} {
		if !has(c.crd, c.path...) {
			t.Errorf("CRD %s lacks spec.%v", c.crd.GetName(), c.path)
		}
	}
	if !equality.Semantic.DeepEqual(queueBefore, crds[2]) {
		t.Errorf("the Queue CRD was changed")
	}
	bad := &unstructured.Unstructured{Object: map[string]interface{}{"metadata": map[string]interface{}{"name": PodGroupCRD}}}
	if err := AddNativeTopologySchema([]*unstructured.Unstructured{bad}); err == nil {
		t.Errorf("a PodGroup CRD without versions was accepted")
	}
}
