package preemption

import (
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/rdmatopo/rdmatopo/internal/testing/builders"
)

// TestHostPortsFree: a hold keeps its tasks' host ports on their node as
// Kubernetes' NodePorts filter counts them (protocol and host IP, 0.0.0.0
// meaning every address).
func TestHostPortsFree(t *testing.T) {
	port := func(p int32, proto v1.Protocol, ip string) v1.ContainerPort {
		return v1.ContainerPort{ContainerPort: p, HostPort: p, Protocol: proto, HostIP: ip}
	}
	pod := func(ports ...v1.ContainerPort) *v1.Pod {
		p := builders.MakePod("ns", "p").Obj()
		p.Spec.Containers[0].Ports = ports
		return p
	}
	keep := func(ports ...v1.ContainerPort) []HoldTask {
		return []HoldTask{{UID: "h", Node: "n1", HostPorts: HostPortsOf(pod(ports...))}}
	}
	cases := map[string]struct {
		pod  *v1.Pod
		kept []HoldTask
		want bool
	}{
		"no hold":                     {pod: pod(port(29500, v1.ProtocolTCP, "")), want: true},
		"pod without host ports":      {pod: pod(), kept: keep(port(29500, v1.ProtocolTCP, "")), want: true},
		"hold without host ports":     {pod: pod(port(29500, v1.ProtocolTCP, "")), kept: keep(), want: true},
		"same port":                   {pod: pod(port(29500, v1.ProtocolTCP, "")), kept: keep(port(29500, v1.ProtocolTCP, ""))},
		"another port":                {pod: pod(port(29501, v1.ProtocolTCP, "")), kept: keep(port(29500, v1.ProtocolTCP, "")), want: true},
		"same port, another protocol": {pod: pod(port(29500, v1.ProtocolUDP, "")), kept: keep(port(29500, v1.ProtocolTCP, "")), want: true},
		"same port, other addresses":  {pod: pod(port(29500, v1.ProtocolTCP, "10.0.0.1")), kept: keep(port(29500, v1.ProtocolTCP, "10.0.0.2")), want: true},
		"every address against one":   {pod: pod(port(29500, v1.ProtocolTCP, "0.0.0.0")), kept: keep(port(29500, v1.ProtocolTCP, "10.0.0.2"))},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := HostPortsFree(tc.pod, tc.kept); got != tc.want {
				t.Errorf("HostPortsFree = %v, want %v", got, tc.want)
			}
		})
	}
}
