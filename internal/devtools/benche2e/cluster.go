package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/kubewharf/katalyst-api/pkg/apis/node/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rdmatopo/rdmatopo/internal/devtools/bench/trace"
	"github.com/rdmatopo/rdmatopo/internal/sim/nodeagent"
	"github.com/rdmatopo/rdmatopo/internal/workload"
)

// preboundNamespace holds the pods running before the trace starts.
const preboundNamespace = trace.PreboundNamespace

// setupWorkers is how many requests the driver has in flight while it
// writes the cluster.
const setupWorkers = 16

// writeCluster creates the generated Nodes, their KCNRs (object, then
// status with the running pods' allocations) and the running pods, bound.
// It returns the agent, which owns the KCNR status from then on.
func writeCluster(ctx context.Context, s *stack, c *workload.Cluster, lag time.Duration, mode nodeagent.Mode) (*agent, error) {
	start := time.Now()
	if err := errors.Join(parallel(ctx, len(c.Nodes), setupWorkers, func(i int) error {
		n := c.Nodes[i].DeepCopy()
		n.ResourceVersion = ""
		_, err := s.Kube.CoreV1().Nodes().Create(ctx, n, metav1.CreateOptions{})
		return err
	})...); err != nil {
		return nil, fmt.Errorf("create Nodes: %w", err)
	}
	logf("%d Nodes created in %s", len(c.Nodes), time.Since(start).Round(time.Millisecond))

	start = time.Now()
	running := make([]*corev1.Pod, len(c.Pods))
	if err := errors.Join(parallel(ctx, len(c.Pods), setupWorkers, func(i int) error {
		p := c.Pods[i].DeepCopy()
		p.ResourceVersion, p.UID = "", ""
		p.CreationTimestamp = metav1.Time{}
		p.Status = corev1.PodStatus{}
		for j := range p.Spec.Containers {
			p.Spec.Containers[j].Image = podImage
		}
		out, err := s.Kube.CoreV1().Pods(p.Namespace).Create(ctx, p, metav1.CreateOptions{})
		running[i] = out
		return err
	})...); err != nil {
		return nil, fmt.Errorf("create running pods: %w", err)
	}
	logf("%d running pods created in %s", len(c.Pods), time.Since(start).Round(time.Millisecond))

	// The KCNRs list the running pods (with their real UIDs) from the start.
	ag := newAgent(s.Katalyst, lag, mode, c.CNRs)
	for _, p := range running {
		if err := ag.preallocate(p); err != nil {
			return nil, err
		}
	}
	start = time.Now()
	if err := errors.Join(parallel(ctx, len(c.CNRs), setupWorkers, func(i int) error {
		ag.mu.Lock()
		cnr := ag.cnrs[c.CNRs[i].Name].DeepCopy()
		ag.mu.Unlock()
		obj := &v1alpha1.CustomNodeResource{ObjectMeta: metav1.ObjectMeta{Name: cnr.Name, Labels: cnr.Labels, Annotations: cnr.Annotations}, Spec: cnr.Spec}
		out, err := s.Katalyst.NodeV1alpha1().CustomNodeResources().Create(ctx, obj, metav1.CreateOptions{})
		if err != nil {
			return err
		}
		out.Status = cnr.Status
		out, err = s.Katalyst.NodeV1alpha1().CustomNodeResources().UpdateStatus(ctx, out, metav1.UpdateOptions{})
		if err != nil {
			return err
		}
		ag.mu.Lock()
		ag.cnrs[out.Name].ResourceVersion = out.ResourceVersion
		ag.mu.Unlock()
		return nil
	})...); err != nil {
		return nil, fmt.Errorf("write KCNRs: %w", err)
	}
	ag.dirty = map[string]bool{}
	logf("%d KCNRs written in %s", len(c.CNRs), time.Since(start).Round(time.Millisecond))
	return ag, nil
}
