package live

import (
	"context"
	"strings"
	"testing"

	katalystfake "github.com/kubewharf/katalyst-api/pkg/client/clientset/versioned/fake"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	kubefake "k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"

	"github.com/rdmatopo/rdmatopo/core/topology"
)

// hyperNode builds a tier-2 HyperNode over exact node names.
func hyperNode(name string, nodes ...string) *unstructured.Unstructured {
	members := make([]interface{}, 0, len(nodes))
	for _, n := range nodes {
		members = append(members, map[string]interface{}{
			"type":     "Node",
			"selector": map[string]interface{}{"exactMatch": map[string]interface{}{"name": n}},
		})
	}
	return &unstructured.Unstructured{Object: map[string]interface{}{
		"apiVersion": "topology.volcano.sh/v1alpha1",
		"kind":       "HyperNode",
		"metadata":   map[string]interface{}{"name": name},
		"spec":       map[string]interface{}{"tier": int64(2), "members": members},
	}}
}

// TestFetchHyperNodes: HyperNodes are read only when the conf takes S1 from
// them; then a cluster without the HyperNode API has none, and a user who
// may not list them gets an error that names the resource and the reason.
func TestFetchHyperNodes(t *testing.T) {
	hnGR := schema.GroupResource{Group: topology.HyperNodeResource.Group, Resource: topology.HyperNodeResource.Resource}
	forbidden := apierrors.NewForbidden(hnGR, "", nil)
	notFound := apierrors.NewNotFound(hnGR, "")
	tests := []struct {
		name string
		read bool
		// listErr is what the API answers to a HyperNode list (nil: the
		// objects).
		listErr error
		// wantNames are the HyperNodes read; wantErr a part of the error.
		wantNames []string
		wantErr   string
		wantLists int
	}{
		{name: "label source, forbidden: not read", read: false, listErr: forbidden, wantLists: 0},
		{name: "label source, allowed: not read", read: false, wantLists: 0},
		{name: "hypernode source, allowed", read: true, wantNames: []string{"s1-a", "s1-b"}, wantLists: 1},
		{name: "hypernode source, API not served", read: true, listErr: notFound, wantLists: 1},
		{name: "hypernode source, forbidden", read: true, listErr: forbidden, wantLists: 1,
			wantErr: "s1Source is hypernode, so S1s come from HyperNodes, but this user may not list hypernodes.topology.volcano.sh"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			scheme := runtime.NewScheme()
			dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(scheme,
				map[schema.GroupVersionResource]string{topology.HyperNodeResource: "HyperNodeList"},
				hyperNode("s1-a", "n1"), hyperNode("s1-b", "n2"))
			lists := 0
			dyn.PrependReactor("list", "hypernodes", func(clienttesting.Action) (bool, runtime.Object, error) {
				lists++
				return tt.listErr != nil, nil, tt.listErr
			})
			node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}}
			c := &Clients{
				Kube:           kubefake.NewSimpleClientset(node),
				Katalyst:       katalystfake.NewSimpleClientset(),
				Dynamic:        dyn,
				ReadHyperNodes: tt.read,
			}
			cluster, err := FetchCluster(context.Background(), c)
			if lists != tt.wantLists {
				t.Errorf("HyperNode lists: %d, want %d", lists, tt.wantLists)
			}
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) || !apierrors.IsForbidden(err) {
					t.Fatalf("error %v, want one containing %q that wraps the Forbidden answer", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("FetchCluster: %v", err)
			}
			var names []string
			for _, hn := range cluster.HyperNodes {
				names = append(names, hn.Name)
			}
			if strings.Join(names, ",") != strings.Join(tt.wantNames, ",") {
				t.Errorf("HyperNodes %v, want %v", names, tt.wantNames)
			}
			if len(cluster.Nodes) != 1 {
				t.Errorf("nodes %d, want 1", len(cluster.Nodes))
			}
		})
	}
}
