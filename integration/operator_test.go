package integration

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rdmatopo/rdmatopo/internal/testing/harness"
)

// The training operator (v1.8.1) manages its webhook certificates itself:
// it fills a Secret in its namespace, injects the CA into a
// ValidatingWebhookConfiguration, and waits until the Secret's files appear
// in a fixed directory (in a pod, kubelet mounts the Secret there). Only
// then does it start its controllers.
const (
	// operatorNamespace is the operator's namespace (its default).
	operatorNamespace = "kubeflow"
	// webhookSecretName is the Secret the operator fills with certificates.
	webhookSecretName = "training-operator-webhook-cert"
	// webhookConfigName is the ValidatingWebhookConfiguration it injects
	// its CA into. It has no webhooks here: with webhooks, the API server
	// would call a Service that does not exist.
	webhookConfigName = "validator.training-operator.kubeflow.org"
	// webhookCertDir is where the operator expects the Secret's files. The
	// path is fixed in the operator; the harness removes it at the end when
	// it created it.
	webhookCertDir = "/tmp/k8s-webhook-server/serving-certs"
	// operatorCertTimeout bounds the wait for the operator to fill the
	// Secret.
	operatorCertTimeout = 90 * time.Second
)

// createOperatorPrerequisites creates the empty Secret and webhook
// configuration the operator fills in.
func (e *Env) createOperatorPrerequisites(ctx context.Context) error {
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: webhookSecretName, Namespace: operatorNamespace}}
	if _, err := e.Kube.CoreV1().Secrets(operatorNamespace).Create(ctx, secret, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create Secret %s/%s: %w", operatorNamespace, webhookSecretName, err)
	}
	vwc := &admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: webhookConfigName}}
	if _, err := e.Kube.AdmissionregistrationV1().ValidatingWebhookConfigurations().Create(ctx, vwc, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create ValidatingWebhookConfiguration %s: %w", webhookConfigName, err)
	}
	return nil
}

// startOperator starts the training operator with Volcano gang scheduling
// for PyTorchJobs, copies its certificates where it expects them and waits
// until it reports ready (certificates in place, controllers started).
func (e *Env) startOperator(ctx context.Context) error {
	ports := make([]int, 3)
	for i := range ports {
		p, err := harness.FreePort()
		if err != nil {
			return err
		}
		ports[i] = p
	}
	webhookPort, metricsPort, probePort := ports[0], ports[1], ports[2]
	var err error
	e.operator, err = e.start(harness.Spec{
		Name: "training-operator",
		Path: e.binary("training-operator"),
		Args: []string{
			"--gang-scheduler-name=volcano",
			"--enable-scheme=pytorchjob",
			fmt.Sprintf("--webhook-server-port=%d", webhookPort),
			"--metrics-bind-address=" + harness.HostPort(metricsPort),
			"--health-probe-bind-address=" + harness.HostPort(probePort),
			"--leader-elect=false",
		},
		Env: []string{
			"KUBECONFIG=" + e.adminKubeconfig,
			"MY_POD_NAMESPACE=" + operatorNamespace,
			// The webhook server reads its certificates from
			// $TMPDIR/k8s-webhook-server/serving-certs, the operator's
			// readiness check from the fixed webhookCertDir: make them one.
			"TMPDIR=/tmp",
		},
	})
	if err != nil {
		return err
	}
	if err := e.installWebhookCerts(ctx); err != nil {
		return err
	}
	return harness.WaitHTTP(ctx, e.operator, http.DefaultClient, "http://"+harness.HostPort(probePort)+"/readyz", "", componentReadyTimeout)
}

// installWebhookCerts waits for the operator to fill its Secret and writes
// the files to webhookCertDir, as kubelet would.
func (e *Env) installWebhookCerts(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, operatorCertTimeout)
	defer cancel()
	var data map[string][]byte
	for {
		if err := e.operator.Alive(); err != nil {
			return err
		}
		s, err := e.Kube.CoreV1().Secrets(operatorNamespace).Get(ctx, webhookSecretName, metav1.GetOptions{})
		if err == nil && len(s.Data["tls.crt"]) > 0 && len(s.Data["tls.key"]) > 0 && len(s.Data["ca.crt"]) > 0 {
			data = s.Data
			break
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("training-operator did not fill Secret %s/%s within %s", operatorNamespace, webhookSecretName, operatorCertTimeout)
		case <-time.After(200 * time.Millisecond):
		}
	}
	if !harness.FileExists(filepath.Dir(webhookCertDir)) {
		e.removeWebhookCertDir = true
	}
	if err := os.MkdirAll(webhookCertDir, 0o700); err != nil {
		return err
	}
	for _, name := range []string{"ca.crt", "tls.crt", "tls.key"} {
		if err := os.WriteFile(filepath.Join(webhookCertDir, name), data[name], 0o600); err != nil {
			return err
		}
	}
	return nil
}
