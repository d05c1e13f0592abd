package integration

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"

	"github.com/rdmatopo/rdmatopo/internal/testing/harness"
	"github.com/rdmatopo/rdmatopo/internal/testing/webhookcert"
)

// Kubeflow Trainer v2 runs a TrainJob as a JobSet, JobSet runs each
// replicated job as a batch Job, and kube-controller-manager's Job
// controller creates the pods. The three run here like the other
// components: on 127.0.0.1, as the admin user, without leader election.
//
// JobSet and Trainer serve admission webhooks that matter: JobSet's
// defaulting webhook makes every replicated Job Indexed (the pods'
// batch.kubernetes.io/job-completion-index, their rank), sets the pods'
// restart policy and the success and startup policies its controller reads;
// Trainer's validating webhooks reject TrainJobs and runtimes its
// controller cannot run. So the harness serves them as shipped: it
// generates a CA and a serving certificate for 127.0.0.1, gives both
// controllers the certificate (their own certificate management, which
// needs a Service and a Secret mounted by kubelet, is off), and installs
// the webhook configurations of the modules with the Service references
// replaced by https://127.0.0.1:<port> URLs and the CA bundle.
const (
	// trainerModule and jobsetModule ship the CRDs, the webhook
	// configurations and the binaries (built in tools/trainer).
	trainerModule = "github.com/kubeflow/trainer/v2"
	jobsetModule  = "sigs.k8s.io/jobset"
	// trainerToolModule is the tool module both binaries are built in.
	trainerToolModule = "trainer"
)

var (
	trainJobGVR               = schema.GroupVersionResource{Group: "trainer.kubeflow.org", Version: "v1alpha1", Resource: "trainjobs"}
	clusterTrainingRuntimeGVR = schema.GroupVersionResource{Group: "trainer.kubeflow.org", Version: "v1alpha1", Resource: "clustertrainingruntimes"}
	jobSetGVR                 = schema.GroupVersionResource{Group: "jobset.x-k8s.io", Version: "v1alpha2", Resource: "jobsets"}
)

// trainerCRDFiles returns the CRD manifests of Trainer (TrainJob,
// TrainingRuntime, ClusterTrainingRuntime) and JobSet from the modules.
func (e *Env) trainerCRDFiles(ctx context.Context) ([]string, error) {
	trainer, jobset, err := e.trainerModuleDirs(ctx)
	if err != nil {
		return nil, err
	}
	crds := filepath.Join(trainer, "manifests", "base", "crds")
	return []string{
		filepath.Join(crds, "trainer.kubeflow.org_trainjobs.yaml"),
		filepath.Join(crds, "trainer.kubeflow.org_trainingruntimes.yaml"),
		filepath.Join(crds, "trainer.kubeflow.org_clustertrainingruntimes.yaml"),
		filepath.Join(jobset, "config", "components", "crd", "bases", "jobset.x-k8s.io_jobsets.yaml"),
	}, nil
}

// trainerModuleDirs returns the module directories of Trainer and JobSet as
// the tool module resolves them.
func (e *Env) trainerModuleDirs(ctx context.Context) (trainer, jobset string, err error) {
	tool := filepath.Join(e.RepoRoot, "integration", "tools", trainerToolModule)
	if trainer, err = harness.ModuleDir(ctx, tool, trainerModule); err != nil {
		return "", "", err
	}
	jobset, err = harness.ModuleDir(ctx, tool, jobsetModule)
	return trainer, jobset, err
}

// startKubeControllerManager starts kube-controller-manager with only the
// Job controller (JobSet's Jobs need it to get pods). Its secure port
// serves /healthz without authentication.
func (e *Env) startKubeControllerManager(ctx context.Context) error {
	port, err := harness.FreePort()
	if err != nil {
		return err
	}
	e.kcm, err = e.start(harness.Spec{
		Name: "kube-controller-manager",
		Path: e.binary("kube-controller-manager"),
		Args: []string{
			"--kubeconfig=" + e.adminKubeconfig,
			"--controllers=job",
			"--leader-elect=false",
			"--bind-address=127.0.0.1",
			fmt.Sprintf("--secure-port=%d", port),
			"--cert-dir=" + filepath.Join(e.Dir, "certs", "kube-controller-manager"),
			"--v=2",
		},
	})
	if err != nil {
		return err
	}
	return harness.WaitHTTP(ctx, e.kcm, harness.InsecureHTTP(), "https://"+harness.HostPort(port)+"/healthz", "", componentReadyTimeout)
}

// webhookCerts is the CA and serving certificate the harness gives the
// webhook servers.
type webhookCerts struct {
	// Dir holds tls.crt and tls.key, the names controller-runtime reads.
	Dir string
	// CA is the PEM CA bundle for the webhook configurations.
	CA []byte
}

// writeWebhookCerts generates a CA and a serving certificate for 127.0.0.1
// into dir.
func writeWebhookCerts(dir string) (webhookCerts, error) {
	ca, err := webhookcert.Write(dir, "rdmatopo-it-webhook-ca")
	if err != nil {
		return webhookCerts{}, err
	}
	return webhookCerts{Dir: dir, CA: ca}, nil
}

// startJobSet starts the JobSet controller with its webhook server on
// 127.0.0.1 and, once it is ready, installs its webhook configurations.
func (e *Env) startJobSet(ctx context.Context) error {
	_, jobset, err := e.trainerModuleDirs(ctx)
	if err != nil {
		return err
	}
	dir := filepath.Join(jobset, "config", "components", "webhook")
	e.jobset, err = e.startWithWebhooks(ctx, func(probePort, webhookPort int) (harness.Spec, error) {
		conf := filepath.Join(e.Dir, "certs", "jobset-config.yaml")
		if err := os.WriteFile(conf, []byte(fmt.Sprintf(`apiVersion: config.jobset.x-k8s.io/v1alpha1
kind: Configuration
leaderElection:
  leaderElect: false
health:
  healthProbeBindAddress: %s
webhook:
  host: 127.0.0.1
  port: %d
  certDir: %s
metrics:
  certDir: %s
internalCertManagement:
  enable: false
`, harness.HostPort(probePort), webhookPort, e.webhookCerts.Dir, e.webhookCerts.Dir)), 0o600); err != nil {
			return harness.Spec{}, err
		}
		return harness.Spec{
			Name: "jobset-controller",
			Path: e.binary("jobset-controller"),
			Args: []string{
				"--config=" + conf,
				"--kubeconfig=" + e.adminKubeconfig,
				// "0" turns the metrics server off.
				"--metrics-bind-address=0",
			},
		}, nil
	}, "jobset-", filepath.Join(dir, "manifests.yaml"), []string{
		filepath.Join(dir, "patches", "mutating-patch.yaml"),
		filepath.Join(dir, "patches", "validating-patch.yaml"),
	})
	return err
}

// startTrainer starts Trainer's controller manager with its webhook server
// on 127.0.0.1 and, once it is ready, installs its webhook configuration.
func (e *Env) startTrainer(ctx context.Context) error {
	trainer, _, err := e.trainerModuleDirs(ctx)
	if err != nil {
		return err
	}
	manifest := filepath.Join(trainer, "manifests", "base", "webhook", "manifests.yaml")
	e.trainer, err = e.startWithWebhooks(ctx, func(probePort, webhookPort int) (harness.Spec, error) {
		conf := filepath.Join(e.Dir, "certs", "trainer-config.yaml")
		if err := os.WriteFile(conf, []byte(fmt.Sprintf(`apiVersion: config.trainer.kubeflow.org/v1alpha1
kind: Configuration
leaderElection:
  leaderElect: false
health:
  healthProbeBindAddress: %s
metrics:
  bindAddress: "0"
webhook:
  host: 127.0.0.1
  port: %d
certManagement:
  enable: false
`, harness.HostPort(probePort), webhookPort)), 0o600); err != nil {
			return harness.Spec{}, err
		}
		// Trainer has no setting for its certificate directory: the webhook
		// server reads $TMPDIR/k8s-webhook-server/serving-certs.
		tmp := filepath.Join(e.Dir, "trainer-tmp")
		certDir := filepath.Join(tmp, "k8s-webhook-server", "serving-certs")
		if err := os.MkdirAll(certDir, 0o700); err != nil {
			return harness.Spec{}, err
		}
		for _, name := range []string{"tls.crt", "tls.key"} {
			data, err := os.ReadFile(filepath.Join(e.webhookCerts.Dir, name))
			if err != nil {
				return harness.Spec{}, err
			}
			if err := os.WriteFile(filepath.Join(certDir, name), data, 0o600); err != nil {
				return harness.Spec{}, err
			}
		}
		return harness.Spec{
			Name: "trainer-controller-manager",
			Path: e.binary("trainer-controller-manager"),
			Args: []string{"--config=" + conf, "--kubeconfig=" + e.adminKubeconfig},
			Env:  []string{"TMPDIR=" + tmp},
		}, nil
	}, "trainer-", manifest, nil)
	return err
}

// startWithWebhooks starts a controller that serves admission webhooks on
// 127.0.0.1: spec writes its configuration for a free readiness-probe port
// and a free webhook port and says how to run it. Once its probe answers,
// the manifest's webhook configurations (after patches) are installed,
// named with prefix and calling that port.
func (e *Env) startWithWebhooks(ctx context.Context, spec func(probePort, webhookPort int) (harness.Spec, error), prefix, manifest string, patches []string) (*harness.Process, error) {
	webhookPort, err := harness.FreePort()
	if err != nil {
		return nil, err
	}
	probePort, err := harness.FreePort()
	if err != nil {
		return nil, err
	}
	ps, err := spec(probePort, webhookPort)
	if err != nil {
		return nil, err
	}
	p, err := e.start(ps)
	if err != nil {
		return nil, err
	}
	if err := harness.WaitHTTP(ctx, p, http.DefaultClient, "http://"+harness.HostPort(probePort)+"/readyz", "", componentReadyTimeout); err != nil {
		return p, err
	}
	return p, e.installWebhooks(ctx, prefix, manifest, patches, webhookPort)
}

// installWebhooks creates the webhook configurations of a module's
// manifest, after its kustomize patches (only "replace /webhooks/<i>", the
// form the modules use), named with prefix, each webhook calling
// https://127.0.0.1:<port><its path> with the harness's CA.
func (e *Env) installWebhooks(ctx context.Context, prefix, manifest string, patches []string, port int) error {
	objs, err := harness.ReadManifests(manifest)
	if err != nil {
		return err
	}
	for _, p := range patches {
		if err := applyWebhookPatch(objs, p); err != nil {
			return err
		}
	}
	return harness.InstallWebhooks(ctx, e.Dynamic, manifest, objs, harness.Webhooks{Prefix: prefix, Port: port, CA: e.webhookCerts.CA})
}

// applyWebhookPatch applies a kustomize JSON 6902 patch of the form
// "replace /webhooks/<i>" to every webhook configuration of the kind its
// file name says (mutating-…, validating-…).
func applyWebhookPatch(objs []*unstructured.Unstructured, path string) error {
	ops, err := readPatch(path)
	if err != nil {
		return err
	}
	kind := "ValidatingWebhookConfiguration"
	if strings.HasPrefix(filepath.Base(path), "mutating") {
		kind = "MutatingWebhookConfiguration"
	}
	applied := false
	for _, o := range objs {
		if o.GetKind() != kind {
			continue
		}
		hooks, _, err := unstructured.NestedSlice(o.Object, "webhooks")
		if err != nil {
			return fmt.Errorf("%s: %s %s: %w", path, kind, o.GetName(), err)
		}
		for _, op := range ops {
			idx, ok := strings.CutPrefix(op.Path, "/webhooks/")
			i, err := strconv.Atoi(idx)
			if op.Op != "replace" || !ok || err != nil || i < 0 || i >= len(hooks) {
				return fmt.Errorf("%s: unsupported patch %s %s on %d webhooks", path, op.Op, op.Path, len(hooks))
			}
			hooks[i] = op.Value
		}
		if err := unstructured.SetNestedSlice(o.Object, hooks, "webhooks"); err != nil {
			return err
		}
		applied = true
	}
	if !applied {
		return fmt.Errorf("%s: no %s to patch", path, kind)
	}
	return nil
}

// patchOp is one JSON 6902 operation.
type patchOp struct {
	Op    string                 `json:"op"`
	Path  string                 `json:"path"`
	Value map[string]interface{} `json:"value"`
}

// readPatch decodes a YAML list of JSON 6902 operations.
func readPatch(path string) ([]patchOp, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var ops []patchOp
	if err := yaml.Unmarshal(data, &ops); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return ops, nil
}
