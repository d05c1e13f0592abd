package rdmatopology

import (
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/rest"
	"volcano.sh/volcano/pkg/scheduler/api"

	"github.com/rdmatopo/rdmatopo/core/placement"
	"github.com/rdmatopo/rdmatopo/core/topology"
	"github.com/rdmatopo/rdmatopo/internal/testing/builders"
)

// newJob builds a job of n pods whose PodGroup is namespace/name.
func newJob(namespace, name string, n int) *api.JobInfo {
	job := api.NewJobInfo(api.JobID(namespace + "/" + name))
	job.Namespace, job.Name = namespace, name
	job.PodGroup = &api.PodGroup{}
	job.PodGroup.Namespace, job.PodGroup.Name, job.PodGroup.UID = namespace, name, types.UID("uid-"+name)
	job.PodGroup.Spec.MinMember = int32(n)
	for i := 0; i < n; i++ {
		job.AddTaskInfo(api.NewTaskInfo(builders.MakePod(namespace, fmt.Sprintf("%s-%d", name, i)).UID(fmt.Sprintf("p%d", i)).Obj()))
	}
	return job
}

// podGroupU builds an unstructured PodGroup; spec holds extra spec fields
// and manager, when set, is the newest writer.
func podGroupU(name, uid, manager string, spec map[string]interface{}) *unstructured.Unstructured {
	s := map[string]interface{}{"minMember": int64(4), "queue": "default"}
	for k, v := range spec {
		s[k] = v
	}
	u := &unstructured.Unstructured{Object: map[string]interface{}{
		"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup",
		"metadata": map[string]interface{}{"name": name, "namespace": "ns", "uid": uid, "resourceVersion": "3",
			"annotations": map[string]interface{}{"note": "a long annotation the store does not keep"}},
		"spec":   s,
		"status": map[string]interface{}{"phase": "Inqueue", "conditions": []interface{}{map[string]interface{}{"type": "Scheduled", "status": "True"}}},
	}}
	if manager != "" {
		now := metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
		older := metav1.NewTime(now.Add(-time.Minute))
		u.SetManagedFields([]metav1.ManagedFieldsEntry{
			{Manager: "kubectl-create", Operation: metav1.ManagedFieldsOperationUpdate, Time: &older},
			{Manager: manager, Operation: metav1.ManagedFieldsOperationUpdate, Time: &now},
		})
	}
	return u
}

var hardTier1 = map[string]interface{}{"networkTopology": map[string]interface{}{"mode": "hard", "highestTierAllowed": int64(1)}}

func TestTrimPodGroup(t *testing.T) {
	got, err := trimPodGroup(podGroupU("pg", "u1", "vc-scheduler", hardTier1))
	if err != nil {
		t.Fatal(err)
	}
	p := got.(*podGroupTopology)
	if p.Name != "pg" || p.Namespace != "ns" || p.UID != "u1" || p.ResourceVersion != "3" || p.Annotations != nil {
		t.Errorf("identity kept wrongly: %+v", p.ObjectMeta)
	}
	if string(p.networkTopology) != `{"highestTierAllowed":1,"mode":"hard"}` || p.subGroupPolicy != nil {
		t.Errorf("raw fields = %s, %s", p.networkTopology, p.subGroupPolicy)
	}
	if p.lastManager != "vc-scheduler" {
		t.Errorf("lastManager = %q, want vc-scheduler", p.lastManager)
	}
	other := &metav1.Status{}
	if got, _ := trimPodGroup(other); got != other {
		t.Errorf("a non-PodGroup object was changed")
	}
}

// TestNativeWatcherKeepsWhatTheSchedulerDrops: the fields are kept, and
// written back, when the scheduler's own write dropped them; a user who
// removes them is believed.
func TestNativeWatcherKeepsWhatTheSchedulerDrops(t *testing.T) {
	cases := map[string]struct {
		manager     string
		wantKept    bool
		wantRestore bool
	}{
		"dropped by the scheduler's own Update": {manager: "vc-scheduler", wantKept: true, wantRestore: true},
		"removed by a user":                     {manager: "kubectl-edit"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			w := &nativeWatcher{store: &nativeTopologies{}, self: "vc-scheduler", restore: make(chan restoreRequest, 1)}
			with, _ := trimPodGroup(podGroupU("pg", "u1", "kubectl-create", hardTier1))
			w.update(with)
			without, _ := trimPodGroup(podGroupU("pg", "u1", tc.manager, nil))
			w.update(without)
			_, kept := w.store.get("ns/pg")
			if kept != tc.wantKept {
				t.Errorf("kept = %v, want %v", kept, tc.wantKept)
			}
			if got := len(w.restore) == 1; got != tc.wantRestore {
				t.Errorf("restore queued = %v, want %v", got, tc.wantRestore)
			}
			w.remove(without)
			if w.store.len() != 0 {
				t.Errorf("a deleted PodGroup is still stored")
			}
		})
	}
}

func TestRestoreOne(t *testing.T) {
	stripped := podGroupU("pg", "u1", "vc-scheduler", nil)
	scheme := k8sruntime.NewScheme()
	client := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(scheme,
		map[schema.GroupVersionResource]string{PodGroupResource: "PodGroupList"}, stripped)
	w := &nativeWatcher{store: &nativeTopologies{}, self: "vc-scheduler"}
	with, _ := trimPodGroup(podGroupU("pg", "u1", "kubectl-create", hardTier1))
	w.update(with)
	if err := w.restoreOne(client, restoreRequest{namespace: "ns", name: "pg", uid: "u1"}); err != nil {
		t.Fatal(err)
	}
	got, err := client.Resource(PodGroupResource).Namespace("ns").Get(t.Context(), "pg", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	nt, _, _ := unstructured.NestedMap(got.Object, "spec", "networkTopology")
	if diff := cmp.Diff(map[string]interface{}{"mode": "hard", "highestTierAllowed": int64(1)}, nt); diff != "" {
		t.Errorf("written back (-want +got):\n%s", diff)
	}
	if got.Object["status"] == nil {
		t.Errorf("the write-back lost the status")
	}
	// Another PodGroup of the same name is left alone.
	if err := w.restoreOne(client, restoreRequest{namespace: "ns", name: "pg", uid: "other"}); err != nil {
		t.Fatal(err)
	}
}

func TestFieldManager(t *testing.T) {
	if got := fieldManager(&rest.Config{UserAgent: "vc-scheduler/v1.10.0 (linux/amd64) kubernetes/abc"}); got != "vc-scheduler" {
		t.Errorf("fieldManager = %q", got)
	}
	if got := fieldManager(&rest.Config{}); got == "" {
		t.Errorf("fieldManager of the default user agent is empty")
	}
}

func TestJobContractNative(t *testing.T) {
	job := newJob("ns", "pg", 2)
	native := placement.DecodeNativeTopology([]byte(`{"mode":"hard","highestTierAllowed":1}`), nil)
	c, err := JobContract(job, native, placement.VolcanoTiers{})
	if err != nil {
		t.Fatal(err)
	}
	if c.Mode != placement.ModeHard || c.HighestTier != placement.TierS0 {
		t.Errorf("contract = %+v, want hard s0", c)
	}
	typo := placement.DecodeNativeTopology([]byte(`{"mode":"hard","highestTierAlowed":1}`), nil)
	if _, err := JobContract(job, typo, placement.VolcanoTiers{}); err == nil ||
		err.Error() != "PodGroup ns/pg: invalid job contract: field spec.networkTopology.highestTierAlowed: unknown field: rdmatopo cannot honour it" {
		t.Errorf("err = %v", err)
	}
}

func TestNativeOfChecksTheUID(t *testing.T) {
	rt := NewRuntime(topology.Config{})
	job := newJob("ns", "pg", 2)
	rt.SetPodGroupTopology("ns", "pg", job.PodGroup.UID, placement.DecodeNativeTopology([]byte(`{"highestTierAllowed":2}`), nil))
	if rt.nativeOf(job) == nil {
		t.Errorf("the PodGroup's fields are not found")
	}
	rt.SetPodGroupTopology("ns", "pg", types.UID("an-older-one"), placement.DecodeNativeTopology([]byte(`{"highestTierAllowed":2}`), nil))
	if rt.nativeOf(job) != nil {
		t.Errorf("fields of another PodGroup of the same name were used")
	}
}

// BenchmarkPodGroupTopologyStore measures what the PodGroup informer's
// store costs: the heap its trimmed objects and the decoded fields hold,
// per PodGroup (the informer's indexer map not counted), when a
// share of them carry native fields (a 5,000-node cluster running one
// gang per 4 nodes holds 1,250 PodGroups; the benchmark keeps 5,000).
func BenchmarkPodGroupTopologyStore(b *testing.B) {
	for _, withNative := range []int{0, 50, 100} {
		b.Run(fmt.Sprintf("podgroups=5000/native=%d%%", withNative), func(b *testing.B) {
			const n = 5000
			objs := make([]*unstructured.Unstructured, n)
			for i := range objs {
				var spec map[string]interface{}
				if i*100 < withNative*n {
					spec = map[string]interface{}{
						"networkTopology": map[string]interface{}{"mode": "hard", "highestTierAllowed": int64(1)},
						"subGroupPolicy": []interface{}{map[string]interface{}{"name": "worker", "subGroupSize": int64(4),
							"matchLabelKeys":  []interface{}{"volcano.sh/partition-id"},
							"networkTopology": map[string]interface{}{"mode": "hard", "highestTierAllowed": int64(1)}}},
					}
				}
				objs[i] = podGroupU(fmt.Sprintf("pg-%05d", i), fmt.Sprintf("uid-%05d", i), "vc-scheduler", spec)
			}
			var perPG float64
			for b.Loop() {
				store := make([]interface{}, n)
				w := &nativeWatcher{store: &nativeTopologies{}, self: "vc-scheduler"}
				runtime.GC()
				var before, after runtime.MemStats
				runtime.ReadMemStats(&before)
				for i, u := range objs {
					store[i], _ = trimPodGroup(u)
					w.update(store[i])
				}
				runtime.GC()
				runtime.ReadMemStats(&after)
				perPG = float64(after.HeapAlloc-before.HeapAlloc) / n
				runtime.KeepAlive(store)
				runtime.KeepAlive(w)
			}
			b.ReportMetric(perPG, "heapB/podgroup")
			b.ReportMetric(perPG*n/1024, "heapKiB/5000podgroups")
		})
	}
}
