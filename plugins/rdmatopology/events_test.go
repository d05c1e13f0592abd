package rdmatopology

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/kubewharf/katalyst-api/pkg/apis/node/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"volcano.sh/volcano/pkg/scheduler/api"

	"github.com/rdmatopo/rdmatopo/core/ledger"
	"github.com/rdmatopo/rdmatopo/core/placement"
	"github.com/rdmatopo/rdmatopo/core/topology"
	"github.com/rdmatopo/rdmatopo/internal/testing/builders"
)

// annotateSession is a session with only a fabric: one node whose NUMA-0
// NICs sit under leaf A and NUMA-1 NICs under leaf B, with a policy that
// lets a pod span zones. annotate needs nothing else.
func annotateSession() *SessionState {
	cfg := topology.Config{}.WithDefaults()
	node := builders.MakeNode("n1").Shared().GPU(8).RDMA(4).CPU("128").Obj()
	cnr := builders.MakeCNR("n1").Policy(v1alpha1.TopologyPolicyNone).
		Zone(0, 4, 64000).Zone(1, 4, 64000).
		NIC(builders.NUMANICs[0][0], 0, "A").NIC(builders.NUMANICs[0][1], 0, "A").
		NIC(builders.NUMANICs[1][0], 1, "B").NIC(builders.NUMANICs[1][1], 1, "B").Obj()
	return testSession(nil, nil, topology.Build(cfg, []*corev1.Node{node}, []*v1alpha1.CustomNodeResource{cnr}))
}

func zoneUse(numa int, nics ...string) ledger.ZoneUse {
	z := ledger.ZoneUse{NUMA: numa, GPU: 4, CPUMilli: 4000}
	for _, n := range nics {
		z.NICs = append(z.NICs, topology.NICID(n))
	}
	return z
}

func taskWith(ann map[string]string) *api.TaskInfo {
	return &api.TaskInfo{Namespace: "ns", Name: "p", Pod: &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p", Annotations: ann}}}
}

// TestAnnotateNUMABindResult: katalyst's numa_bind_result is written at
// bind equal to rdmatopo.io/numa, for a pod in one zone and a pod spanning
// zones, and a value the user set is replaced.
func TestAnnotateNUMABindResult(t *testing.T) {
	nic := builders.NUMANICs
	cases := []struct {
		name  string
		user  map[string]string
		zones []ledger.ZoneUse
		want  map[string]string
	}{
		{
			name:  "one zone",
			zones: []ledger.ZoneUse{zoneUse(1, nic[1][0], nic[1][1])},
			want: map[string]string{
				ledger.AnnotationNICs:    nic[1][0] + "," + nic[1][1],
				ledger.AnnotationNUMA:    "1",
				ledger.AnnotationS0:      "B",
				AnnotationNUMABindResult: "1",
			},
		},
		{
			name:  "spanning zones",
			zones: []ledger.ZoneUse{zoneUse(0, nic[0][0], nic[0][1]), zoneUse(1, nic[1][0], nic[1][1])},
			want: map[string]string{
				ledger.AnnotationNICs:    nic[0][0] + "," + nic[0][1] + "," + nic[1][0] + "," + nic[1][1],
				ledger.AnnotationNUMA:    "0,1",
				ledger.AnnotationS0:      "A,B",
				AnnotationNUMABindResult: "0,1",
			},
		},
		{
			name:  "user-set value replaced",
			user:  map[string]string{AnnotationNUMABindResult: "1", "other": "kept"},
			zones: []ledger.ZoneUse{zoneUse(0, nic[0][0])},
			want: map[string]string{
				ledger.AnnotationNICs:    nic[0][0],
				ledger.AnnotationNUMA:    "0",
				ledger.AnnotationS0:      "A",
				AnnotationNUMABindResult: "0",
				"other":                  "kept",
			},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := annotateSession()
			task := taskWith(tc.user)
			original := task.Pod
			s.annotate(task, placement.Assignment{Node: "n1", Zones: tc.zones})
			if diff := cmp.Diff(tc.want, task.Pod.Annotations); diff != "" {
				t.Errorf("annotations (-want +got):\n%s", diff)
			}
			if got, want := task.Pod.Annotations[AnnotationNUMABindResult], task.Pod.Annotations[ledger.AnnotationNUMA]; got != want {
				t.Errorf("numa_bind_result %q, rdmatopo.io/numa %q: must be equal", got, want)
			}
			if diff := cmp.Diff(tc.user, original.Annotations); diff != "" {
				t.Errorf("the cached pod was modified (-want +got):\n%s", diff)
			}
		})
	}
}

// TestStripAnnotations: scheduler-only keys a user set, katalyst's
// numa_bind_result among them, never reach the Binding of a pod the plugin
// gives no NICs; other annotations stay.
func TestStripAnnotations(t *testing.T) {
	cases := []struct {
		name string
		ann  map[string]string
		want map[string]string
	}{
		{
			name: "forged keys",
			ann: map[string]string{ledger.AnnotationNICs: builders.NUMANICs[0][0], ledger.AnnotationNUMA: "0",
				ledger.AnnotationS0: "A", AnnotationNUMABindResult: "0", "other": "kept"},
			want: map[string]string{"other": "kept"},
		},
		{
			name: "numa_bind_result alone",
			ann:  map[string]string{AnnotationNUMABindResult: "1"},
			want: map[string]string{},
		},
		{
			name: "nothing to strip",
			ann:  map[string]string{"other": "kept"},
			want: map[string]string{"other": "kept"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			task := taskWith(tc.ann)
			stripAnnotations(task)
			if diff := cmp.Diff(tc.want, task.Pod.Annotations); diff != "" {
				t.Errorf("annotations (-want +got):\n%s", diff)
			}
		})
	}
}
