package harness

import (
	"context"
	"fmt"
	"time"

	katalystclient "github.com/kubewharf/katalyst-api/pkg/client/clientset/versioned"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	schedulingv1beta1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"
	vcclient "volcano.sh/apis/pkg/client/clientset/versioned"

	"github.com/rdmatopo/rdmatopo/internal/live"
)

// Clients talk to the API server as one user.
type Clients struct {
	Kube     kubernetes.Interface
	Volcano  vcclient.Interface
	Katalyst katalystclient.Interface
	Dynamic  dynamic.Interface
	// Config is their client configuration.
	Config *rest.Config
}

// NewClients builds Clients from a kubeconfig (with live.NewClients, as
// the kubectl plugin builds its own); configure, when set, adjusts the
// configuration first (QPS, user agent, warning handler).
func NewClients(kubeconfig string, configure func(*rest.Config)) (Clients, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return Clients{}, err
	}
	if configure != nil {
		configure(cfg)
	}
	lc, err := live.NewClients(cfg, cfg.UserAgent)
	if err != nil {
		return Clients{}, err
	}
	return Clients{Kube: lc.Kube, Volcano: lc.Volcano, Katalyst: lc.Katalyst, Dynamic: lc.Dynamic, Config: cfg}, nil
}

// CreateVolcanoBasics creates what Volcano's components and the scheduler
// expect to exist: the default Queue (weight 1, reclaimable), the
// volcano-system namespace and the others named, and the scheduler's RBAC
// (SchedulerRBAC of Volcano's module as the module at repoRoot resolves
// it). Objects that exist are left as they are.
func (c Clients) CreateVolcanoBasics(ctx context.Context, repoRoot string, namespaces ...string) error {
	reclaimable := true
	queue := &schedulingv1beta1.Queue{
		ObjectMeta: metav1.ObjectMeta{Name: "default"},
		Spec:       schedulingv1beta1.QueueSpec{Weight: 1, Reclaimable: &reclaimable},
	}
	if _, err := c.Volcano.SchedulingV1beta1().Queues().Create(ctx, queue, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create Queue default: %w", err)
	}
	for _, ns := range append([]string{"volcano-system"}, namespaces...) {
		obj := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}
		if _, err := c.Kube.CoreV1().Namespaces().Create(ctx, obj, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("create Namespace %s: %w", ns, err)
		}
	}
	volcano, err := ModuleDir(ctx, repoRoot, VolcanoModule)
	if err != nil {
		return err
	}
	rbac, err := SchedulerRBAC(volcano, repoRoot)
	if err != nil {
		return err
	}
	return CreateObjects(ctx, c.Kube.Discovery(), c.Dynamic, rbac)
}

// Step is one stage of bringing a stack up.
type Step struct {
	Name string
	Run  func(context.Context) error
}

// RunSteps runs steps in order, stopping at the first error (wrapped as
// "start <name>: ..."); ready, when set, hears how long each one took.
func RunSteps(ctx context.Context, steps []Step, ready func(name string, took time.Duration)) error {
	for _, st := range steps {
		start := time.Now()
		if err := st.Run(ctx); err != nil {
			return fmt.Errorf("start %s: %w", st.Name, err)
		}
		if ready != nil {
			ready(st.Name, time.Since(start).Round(time.Millisecond))
		}
	}
	return nil
}
