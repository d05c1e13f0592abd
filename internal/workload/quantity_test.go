package workload

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/require"
)

// resourcesPod is a pending pod of PodGroup pg whose container has the
// given resources (a YAML flow map).
func resourcesPod(resources string) string {
	return "apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\n" + groupAnn +
		"spec: {containers: [{name: c, resources: " + resources + "}]}\n"
}

// TestQuantitiesTheAPIServerRejects: pod quantities the API server's pod
// validation rejects are input errors naming the file, the pod and the
// field, in the workload (pods and job templates) and the cluster.
func TestQuantitiesTheAPIServerRejects(t *testing.T) {
	limitsField := func(name string) string { return `spec.containers[0].resources.limits["` + name + `"]` }
	cases := map[string]struct {
		in   string
		want wantErr
	}{
		"negative RDMA": {
			in:   resourcesPod("{limits: {vke.volcengine.com/rdma: -1}}"),
			want: wantErr{Doc: 2, Kind: "Pod", Name: "default/p", Field: limitsField("vke.volcengine.com/rdma"), Msg: "-1: must be greater than or equal to 0"},
		},
		"fractional RDMA": {
			in:   resourcesPod("{limits: {vke.volcengine.com/rdma: 2.5}}"),
			want: wantErr{Doc: 2, Kind: "Pod", Name: "default/p", Field: limitsField("vke.volcengine.com/rdma"), Msg: "2500m: must be a whole number"},
		},
		"milli RDMA": {
			in:   resourcesPod(`{limits: {vke.volcengine.com/rdma: 500m}}`),
			want: wantErr{Doc: 2, Kind: "Pod", Name: "default/p", Field: limitsField("vke.volcengine.com/rdma"), Msg: "500m: must be a whole number"},
		},
		"GPU beyond int64": {
			in:   resourcesPod("{limits: {nvidia.com/gpu: 1e400}}"),
			want: wantErr{Doc: 2, Kind: "Pod", Name: "default/p", Field: limitsField("nvidia.com/gpu"), Msg: "too large for extended resource nvidia.com/gpu"},
		},
		"negative CPU request": {
			in:   resourcesPod("{requests: {cpu: -2}}"),
			want: wantErr{Doc: 2, Kind: "Pod", Name: "default/p", Field: `spec.containers[0].resources.requests.cpu`, Msg: "must be greater than or equal to 0"},
		},
		"extended request without a limit": {
			in:   resourcesPod("{requests: {nvidia.com/gpu: 4}}"),
			want: wantErr{Doc: 2, Kind: "Pod", Name: "default/p", Field: limitsField("nvidia.com/gpu"), Msg: "required: extended resource nvidia.com/gpu is requested (4) without a limit"},
		},
		"extended request unlike its limit": {
			in:   resourcesPod("{requests: {vke.volcengine.com/rdma: 1}, limits: {vke.volcengine.com/rdma: 2}}"),
			want: wantErr{Doc: 2, Kind: "Pod", Name: "default/p", Field: `spec.containers[0].resources.requests["vke.volcengine.com/rdma"]`, Msg: "1: must equal the limit of 2"},
		},
		"init container": {
			in: "apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\n" + groupAnn +
				"spec: {initContainers: [{name: i, resources: {limits: {nvidia.com/gpu: 0.5}}}], containers: [{name: c}]}\n",
			want: wantErr{Doc: 2, Kind: "Pod", Name: "default/p", Field: `spec.initContainers[0].resources.limits["nvidia.com/gpu"]`, Msg: "must be a whole number"},
		},
		"CPU the scheduler cannot count": {
			in:   resourcesPod(`{limits: {cpu: "9e18"}}`),
			want: wantErr{Doc: 2, Kind: "Pod", Name: "default/p", Field: `spec.containers[0].resources.limits.cpu`, Msg: "9e18: more cpu than the scheduler can count"},
		},
		"CPU beyond every counter": {
			in:   resourcesPod(`{requests: {cpu: "1e30"}}`),
			want: wantErr{Doc: 2, Kind: "Pod", Name: "default/p", Field: `spec.containers[0].resources.requests.cpu`, Msg: "1e30: more cpu than the scheduler can count"},
		},
		"memory the scheduler cannot count": {
			in:   resourcesPod(`{requests: {memory: "1e19"}}`),
			want: wantErr{Doc: 2, Kind: "Pod", Name: "default/p", Field: `spec.containers[0].resources.requests.memory`, Msg: "10e18: more memory than the scheduler can count"},
		},
		"ephemeral storage counted in thousandths": {
			in:   resourcesPod(`{requests: {ephemeral-storage: "1e16"}}`),
			want: wantErr{Doc: 2, Kind: "Pod", Name: "default/p", Field: `spec.containers[0].resources.requests.ephemeral-storage`, Msg: "10e15: more ephemeral-storage than the scheduler can count"},
		},
		"GPUs each countable, together not": {
			in: "apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\n" + groupAnn +
				"spec: {containers: [{name: a, resources: {limits: {nvidia.com/gpu: 5e15}}}, {name: b, resources: {limits: {nvidia.com/gpu: 5e15}}}]}\n",
			want: wantErr{Doc: 2, Kind: "Pod", Name: "default/p", Field: `spec.containers[*].resources.requests["nvidia.com/gpu"]`, Msg: "the pod's requests of nvidia.com/gpu add up to 10P"},
		},
		"Volcano Job template": {
			in:   strings.Replace(volcanoJob("", 1), "vke.volcengine.com/rdma: 2,", "vke.volcengine.com/rdma: 1.5,", 1),
			want: wantErr{Doc: 1, Kind: KindVolcanoJob, Name: "team/mpi", Field: `spec.tasks[].template.` + limitsField("vke.volcengine.com/rdma"), Msg: "must be a whole number"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			in := tc.in
			if !strings.Contains(in, "kind: Job") {
				in = pgDoc + "---\n" + in
			}
			_, err := LoadWorkload("w.yaml", []byte(in))
			require.Error(t, err)
			if diff := cmp.Diff(tc.want, asWant(t, err, tc.want.Msg)); diff != "" {
				t.Errorf("error (-want,+got):\n%s\n%v", diff, err)
			}
			require.True(t, strings.HasPrefix(err.Error(), "w.yaml: "), err.Error())
		})
	}
	t.Run("bound pod of the cluster", func(t *testing.T) {
		in := nodeDoc + "---\napiVersion: v1\nkind: Pod\nmetadata: {name: p, namespace: ns}\n" +
			"spec: {nodeName: n1, containers: [{name: c, resources: {limits: {vke.volcengine.com/rdma: -1}}}]}\n"
		_, err := LoadCluster("c.yaml", []byte(in))
		require.Error(t, err)
		want := wantErr{Doc: 2, Kind: "Pod", Name: "ns/p", Field: limitsField("vke.volcengine.com/rdma"), Msg: "must be greater than or equal to 0"}
		if diff := cmp.Diff(want, asWant(t, err, want.Msg)); diff != "" {
			t.Errorf("error (-want,+got):\n%s\n%v", diff, err)
		}
	})
}

func TestQuantitiesTheAPIServerAccepts(t *testing.T) {
	for name, resources := range map[string]string{
		"whole extended limits":           "{limits: {nvidia.com/gpu: 8, vke.volcengine.com/rdma: 4, cpu: 500m, memory: 1.5Gi}}",
		"extended request equal to limit": "{requests: {nvidia.com/gpu: 4}, limits: {nvidia.com/gpu: \"4\"}}",
		"zero RDMA":                       "{limits: {vke.volcengine.com/rdma: 0}}",
		"native resources overcommitted":  "{requests: {cpu: 1, memory: 1Gi}, limits: {cpu: 2}}",
		"kubernetes.io resources":         "{requests: {example.kubernetes.io/x: 500m}}",
		"the most CPU and memory counted": `{requests: {cpu: "9223372036854775807m", memory: "9223372036854775807"}}`,
	} {
		t.Run(name, func(t *testing.T) {
			_, err := LoadWorkload("w.yaml", []byte(pgDoc+"---\n"+resourcesPod(resources)))
			require.NoError(t, err)
		})
	}
}
