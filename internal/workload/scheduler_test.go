package workload

import (
	"strings"
	"testing"
)

// TestPlainPodSchedulerName: a pending pod of a plain PodGroup that names
// no scheduler is simulated as Volcano's and reported as a warning naming
// the pod and the field (on a cluster the default scheduler takes it); a
// pod naming Volcano, a running pod and a Volcano Job's pods are not.
func TestPlainPodSchedulerName(t *testing.T) {
	const group = `apiVersion: scheduling.volcano.sh/v1beta1
kind: PodGroup
metadata: {name: g, namespace: default}
spec: {minMember: 1}
`
	pod := func(name, spec string) string {
		return "---\napiVersion: v1\nkind: Pod\nmetadata: {name: " + name + ", namespace: default, annotations: {scheduling.k8s.io/group-name: g}}\nspec: {" + spec + "containers: [{name: c, image: x}]}\n"
	}
	cases := []struct {
		name string
		file string
		want []string
	}{
		{"unset", group + pod("p", ""), []string{`w.yaml: document 2 (Pod default/p): spec.schedulerName: unset: on a cluster the default scheduler takes this pod`}},
		{"volcano", group + pod("p", "schedulerName: volcano, "), nil},
		{"two unset", group + pod("a", "") + pod("b", ""), []string{"(Pod default/a)", "(Pod default/b)"}},
		{"volcano job", `apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata: {name: j, namespace: default}
spec:
  minAvailable: 1
  tasks:
  - name: t
    replicas: 1
    template:
      spec:
        containers: [{name: c, image: x}]
`, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			set, err := LoadWorkload("w.yaml", []byte(tc.file))
			if err != nil {
				t.Fatal(err)
			}
			if len(set.Warnings) != len(tc.want) {
				t.Fatalf("warnings %q, want %d", set.Warnings, len(tc.want))
			}
			for i, w := range tc.want {
				if !strings.Contains(set.Warnings[i], w) {
					t.Errorf("warning %q does not say %q", set.Warnings[i], w)
				}
			}
			for _, p := range set.Pods {
				if p.Spec.SchedulerName != DefaultSchedulerName {
					t.Errorf("pod %s simulated with scheduler %q", p.Name, p.Spec.SchedulerName)
				}
			}
		})
	}
}
