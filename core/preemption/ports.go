package preemption

import (
	v1 "k8s.io/api/core/v1"
	k8sframework "k8s.io/kubernetes/pkg/scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/nodeports"
)

// HostPortsOf returns the ports pod's containers bind on the host (those
// with a hostPort), as Kubernetes' NodePorts filter counts a pod's ports on
// its node; nil when there are none.
func HostPortsOf(pod *v1.Pod) []v1.ContainerPort {
	if pod == nil {
		return nil
	}
	var out []v1.ContainerPort
	for _, c := range pod.Spec.Containers {
		for _, p := range c.Ports {
			if p.HostPort > 0 {
				out = append(out, p)
			}
		}
	}
	return out
}

// HostPortsFree reports whether pod's host ports are free beside the host
// ports the kept tasks hold on their node, as Kubernetes' NodePorts filter
// judges a pod on a node running those tasks' pods.
func HostPortsFree(pod *v1.Pod, kept []HoldTask) bool {
	if len(HostPortsOf(pod)) == 0 {
		return true
	}
	var held []*v1.Pod
	for _, k := range kept {
		if len(k.HostPorts) > 0 {
			held = append(held, &v1.Pod{Spec: v1.PodSpec{Containers: []v1.Container{{Ports: k.HostPorts}}}})
		}
	}
	if len(held) == 0 {
		return true
	}
	return nodeports.Fits(pod, k8sframework.NewNodeInfo(held...))
}
