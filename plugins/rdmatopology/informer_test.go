package rdmatopology

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	nodev1alpha1 "github.com/kubewharf/katalyst-api/pkg/apis/node/v1alpha1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/rdmatopo/rdmatopo/core/topology"
	"github.com/rdmatopo/rdmatopo/internal/testing/builders"
)

// TestTrimCNRTransform checks the KCNR informer's transform: a KCNR is
// stored trimmed (topology.TrimCNR), anything else passes unchanged.
func TestTrimCNRTransform(t *testing.T) {
	full := builders.MakeCNR("n1").NIC("0000:1a:00.0", 0, "leafA").UseNIC("0000:1a:00.0", "ns/p/u").ResourceVersion("7").Obj()
	full.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "katalyst-agent", FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:status":{}}`)}}}
	full.Labels = map[string]string{"a": "b"}
	tombstone := cache.DeletedFinalStateUnknown{Key: "n1", Obj: full}
	cases := map[string]struct {
		in, want interface{}
	}{
		"KCNR":       {in: full, want: topology.TrimCNR(full)},
		"tombstone":  {in: tombstone, want: tombstone},
		"other type": {in: &metav1.Status{Message: "x"}, want: &metav1.Status{Message: "x"}},
		"nil":        {in: nil, want: nil},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := trimCNR(topology.NewCNRTrimmer())(tc.in)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("transform (-want +got):\n%s", diff)
			}
		})
	}
	got, _ := trimCNR(topology.NewCNRTrimmer())(full)
	if cnr := got.(*nodev1alpha1.CustomNodeResource); cnr.ManagedFields != nil || cnr.Labels != nil {
		t.Errorf("stored KCNR keeps managedFields %v, labels %v", cnr.ManagedFields, cnr.Labels)
	}
}
