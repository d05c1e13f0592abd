package workload

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestLoadClusterReadableSchedulerAnnotations(t *testing.T) {
	cases := map[string]string{
		"device names":             `rdmatopo.io/nics: "mlx5_0,mlx5_1", rdmatopo.io/numa: "0", rdmatopo.io/s0: "a,a"`,
		"short bus addresses":      `rdmatopo.io/nics: "1a:00.0,3F:00.0", rdmatopo.io/numa: "0,1"`,
		"synthetic NICs":           `rdmatopo.io/nics: "rdma-0", rdmatopo.io/numa: "0"`,
		"no NICs, nothing to read": `rdmatopo.io/numa: "zero"`,
	}
	for name, annotations := range cases {
		t.Run(name, func(t *testing.T) {
			in := nodeDoc + "---\napiVersion: v1\nkind: Pod\nmetadata: {name: p, namespace: ns, annotations: {" + annotations + "}}\n" +
				"spec: {nodeName: n1, containers: [{name: c}]}\n"
			c, err := LoadCluster("c.yaml", []byte(in))
			require.NoError(t, err)
			require.Len(t, c.Pods, 1)
		})
	}
}
