package main

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"
	"volcano.sh/volcano/pkg/scheduler/api"
	"volcano.sh/volcano/pkg/scheduler/cache"
	"volcano.sh/volcano/pkg/scheduler/metrics"
)

// BindConcurrencyEnv bounds how many bind requests the scheduler has in
// flight at once (default DefaultBindConcurrency; 0: unbounded, as stock
// Volcano).
const BindConcurrencyEnv = "RDMATOPO_BIND_CONCURRENCY"

// DefaultBindConcurrency is the bound without the environment variable.
//
// Volcano binds every task of a session in its own goroutine, and
// topology-allocate commits whole gangs: a session that places a few large
// gangs sends hundreds of binds at once. An API server rejects mutating
// requests beyond its in-flight limit (--max-mutating-requests-inflight,
// 200 by default; with flow control, the scheduler's priority level and
// queues) with HTTP 429. 32 binds in flight is far more than the API
// server needs to keep up (a bind takes milliseconds) and far below that
// limit.
const DefaultBindConcurrency = 32

func init() {
	n, err := bindConcurrency(os.Getenv(BindConcurrencyEnv))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if n > 0 {
		cache.RegisterBindMethod(newBoundedBinder(n))
	}
}

// bindConcurrency parses the environment variable's value.
func bindConcurrency(s string) (int, error) {
	if s == "" {
		return DefaultBindConcurrency, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("%s=%q: want a number of binds ≥ 0 (0: unbounded)", BindConcurrencyEnv, s)
	}
	return n, nil
}

// boundedBinder is Volcano's default binder (a Binding per pod carrying
// the pod's annotations, the task-scheduling latency metric) with at most
// cap(slots) bind requests in flight over all of the scheduler's bind
// goroutines.
type boundedBinder struct {
	slots chan struct{}
}

func newBoundedBinder(n int) *boundedBinder {
	return &boundedBinder{slots: make(chan struct{}, n)}
}

// Bind implements cache.Binder.
func (b *boundedBinder) Bind(kubeClient kubernetes.Interface, tasks []*api.TaskInfo) map[api.TaskID]string {
	errMsg := make(map[api.TaskID]string)
	for _, task := range tasks {
		p := task.Pod
		b.slots <- struct{}{}
		err := kubeClient.CoreV1().Pods(p.Namespace).Bind(context.TODO(),
			&v1.Binding{
				ObjectMeta: metav1.ObjectMeta{Namespace: p.Namespace, Name: p.Name, UID: p.UID, Annotations: p.Annotations},
				Target:     v1.ObjectReference{Kind: "Node", Name: task.NodeName},
			},
			metav1.CreateOptions{})
		<-b.slots
		if err != nil {
			klog.Errorf("Failed to bind pod <%v/%v> to node %s : %#v", p.Namespace, p.Name, task.NodeName, err)
			errMsg[task.UID] = err.Error()
			continue
		}
		metrics.UpdateTaskScheduleDuration(time.Since(p.CreationTimestamp.Time))
	}
	return errMsg
}
