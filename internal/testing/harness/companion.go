package harness

import (
	"context"
	"fmt"
	"net/http"
	"path/filepath"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/rdmatopo/rdmatopo/internal/testing/webhookcert"
)

// BindWebhookName is the name of the pods/binding webhook the companion's
// Helm chart installs; kube-apiserver's admission metrics carry it.
const BindWebhookName = "bind.companion.rdmatopo.io"

// Companion says how StartCompanion runs `rdmatopo companion`.
type Companion struct {
	// Name of the process (its log file).
	Name string
	// Binary is the rdmatopo CLI.
	Binary string
	// Kubeconfig the companion talks to the API server with.
	Kubeconfig string
	// Namespace of its owner Lease; created when missing.
	Namespace string
	// CertDir holds the webhook's serving certificate (webhookcert files);
	// empty: the companion serves no webhook.
	CertDir string
	// ExtraArgs are appended to the command line.
	ExtraArgs []string
	// Timeout bounds the wait for /readyz.
	Timeout time.Duration
}

// CompanionProcess is a running companion replica.
type CompanionProcess struct {
	*Process
	// MetricsURL serves /metrics, /healthz, /readyz and /debug/pprof.
	MetricsURL string
	// WebhookURL is the replica's /bind ("" when it serves no webhook).
	WebhookURL string
}

// StartCompanion starts a companion replica on two free loopback ports
// (metrics, webhook) in g, creates its Lease namespace through kube, and
// waits until it is ready.
func (g *Group) StartCompanion(ctx context.Context, kube kubernetes.Interface, c Companion) (*CompanionProcess, error) {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: c.Namespace}}
	if _, err := kube.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return nil, fmt.Errorf("create Namespace %s: %w", c.Namespace, err)
	}
	ports, err := FreePorts(2)
	if err != nil {
		return nil, err
	}
	out := &CompanionProcess{MetricsURL: "http://" + HostPort(ports[0])}
	argv := []string{"companion", "--kubeconfig=" + c.Kubeconfig, "--namespace=" + c.Namespace,
		"--metrics-address=" + HostPort(ports[0])}
	if c.CertDir != "" {
		argv = append(argv, "--webhook-address="+HostPort(ports[1]),
			"--tls-cert-file="+filepath.Join(c.CertDir, webhookcert.CertFile), "--tls-private-key-file="+filepath.Join(c.CertDir, webhookcert.KeyFile))
		out.WebhookURL = "https://" + HostPort(ports[1]) + "/bind"
	} else {
		argv = append(argv, "--webhook-address=")
	}
	argv = append(argv, c.ExtraArgs...)
	if out.Process, err = g.Start(Spec{Name: c.Name, Path: c.Binary, Args: argv}); err != nil {
		return nil, err
	}
	if err := WaitHTTP(ctx, out.Process, http.DefaultClient, out.MetricsURL+"/readyz", "", c.Timeout); err != nil {
		return out, err
	}
	return out, nil
}

// BindHook is one pods/binding webhook of BindWebhookConfiguration.
type BindHook struct {
	// Name of the webhook (BindWebhookName as the chart ships it).
	Name string
	// URL is the companion's /bind.
	URL string
	// Namespace, when set, limits the webhook to that namespace's pods.
	Namespace string
}

// BindWebhookConfiguration is the MutatingWebhookConfiguration the
// companion's chart ships (pods/binding CREATE, failurePolicy Ignore, no
// side effects), one webhook per hook, calling its URL with the CA.
func BindWebhookConfiguration(name string, ca []byte, timeoutSeconds int32, hooks ...BindHook) *admissionregistrationv1.MutatingWebhookConfiguration {
	ignore := admissionregistrationv1.Ignore
	none := admissionregistrationv1.SideEffectClassNone
	cfg := &admissionregistrationv1.MutatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: name}}
	for _, h := range hooks {
		url := h.URL
		timeout := timeoutSeconds
		w := admissionregistrationv1.MutatingWebhook{
			Name:         h.Name,
			ClientConfig: admissionregistrationv1.WebhookClientConfig{URL: &url, CABundle: ca},
			Rules: []admissionregistrationv1.RuleWithOperations{{
				Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
				Rule:       admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"pods/binding"}},
			}},
			FailurePolicy:           &ignore,
			SideEffects:             &none,
			TimeoutSeconds:          &timeout,
			AdmissionReviewVersions: []string{"v1"},
		}
		if h.Namespace != "" {
			w.NamespaceSelector = &metav1.LabelSelector{MatchLabels: map[string]string{corev1.LabelMetadataName: h.Namespace}}
		}
		cfg.Webhooks = append(cfg.Webhooks, w)
	}
	return cfg
}
