package topology_test

import (
	"strings"
	"testing"

	"github.com/rdmatopo/rdmatopo/core/topology"
)

func TestDecodeCNR(t *testing.T) {
	cases := map[string]struct {
		doc      string
		wantName string
		wantErr  []string
	}{
		"JSON without kind": {
			doc:      `{"metadata":{"name":"n1"},"status":{"topologyPolicy":"None"}}`,
			wantName: "n1",
		},
		"YAML with kind": {
			doc:      "apiVersion: node.katalyst.kubewharf.io/v1alpha1\nkind: CustomNodeResource\nmetadata:\n  name: n2\n",
			wantName: "n2",
		},
		"unknown field": {
			doc:     "metadata: {name: n3}\nspec: {nodeResourceProperty: []}\n",
			wantErr: []string{`CustomNodeResource "n3"`, "spec.nodeResourceProperty"},
		},
		"wrong type": {
			doc:     "metadata: {name: n4}\nstatus: {topologyZone: [{name: 0, type: Numa, children: 3}]}\n",
			wantErr: []string{`CustomNodeResource "n4"`, "children"},
		},
		"bad quantity": {
			doc:     "metadata: {name: n5}\nstatus: {topologyZone: [{name: '0', type: Numa, resources: {allocatable: {cpu: lots}}}]}\n",
			wantErr: []string{`CustomNodeResource "n5"`, "quantities must match"},
		},
		"another kind": {
			doc:     "apiVersion: v1\nkind: Node\nmetadata: {name: n6}\n",
			wantErr: []string{`CustomNodeResource "n6"`, "Node"},
		},
		"not a document": {
			doc:     "[1, 2",
			wantErr: []string{"decode CustomNodeResource"},
		},
		"no name": {
			doc:     "status: {topologyPolicy: None}\n",
			wantErr: []string{"metadata.name is empty"},
		},
		"empty": {
			doc:     "",
			wantErr: []string{"decode CustomNodeResource"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			cnr, err := topology.DecodeCNR([]byte(tc.doc))
			if tc.wantErr != nil {
				if err == nil {
					t.Fatalf("DecodeCNR succeeded: %+v", cnr)
				}
				for _, w := range tc.wantErr {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("error %q does not contain %q", err, w)
					}
				}
				return
			}
			if err != nil {
				t.Fatalf("DecodeCNR: %v", err)
			}
			if cnr.Name != tc.wantName {
				t.Errorf("name = %q, want %q", cnr.Name, tc.wantName)
			}
		})
	}
}
