package harness

import (
	"context"
	"encoding/base64"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
)

// The admission webhook configuration resources.
var (
	ValidatingWebhookResource = schema.GroupVersionResource{Group: "admissionregistration.k8s.io", Version: "v1", Resource: "validatingwebhookconfigurations"}
	MutatingWebhookResource   = schema.GroupVersionResource{Group: "admissionregistration.k8s.io", Version: "v1", Resource: "mutatingwebhookconfigurations"}
)

// Webhooks says how InstallWebhooks points a module's webhook
// configurations at a webhook server on 127.0.0.1.
type Webhooks struct {
	// Prefix goes before every configuration's name.
	Prefix string
	// Port is the server's: each webhook calls
	// https://127.0.0.1:<Port><its clientConfig.service.path>.
	Port int
	// CA is the PEM bundle the server's certificate is signed with.
	CA []byte
	// Keep, when set, says whether a webhook is installed and may edit it;
	// a configuration left without webhooks is not created. Without it
	// every webhook is kept.
	Keep func(hook map[string]interface{}) (bool, error)
}

// InstallWebhooks creates the webhook configurations among objs (decoded
// from manifest, which names them in errors) as w says. Any other kind,
// a configuration without webhooks, or a webhook without a service path is
// an error.
func InstallWebhooks(ctx context.Context, dyn dynamic.Interface, manifest string, objs []*unstructured.Unstructured, w Webhooks) error {
	for _, o := range objs {
		var gvr schema.GroupVersionResource
		switch o.GetKind() {
		case "ValidatingWebhookConfiguration":
			gvr = ValidatingWebhookResource
		case "MutatingWebhookConfiguration":
			gvr = MutatingWebhookResource
		default:
			return fmt.Errorf("%s: unexpected %s %s", manifest, o.GetKind(), o.GetName())
		}
		hooks, _, err := unstructured.NestedSlice(o.Object, "webhooks")
		if err != nil || len(hooks) == 0 {
			return fmt.Errorf("%s: %s %s has no webhooks (%v)", manifest, o.GetKind(), o.GetName(), err)
		}
		var kept []interface{}
		for i, h := range hooks {
			hook, _ := h.(map[string]interface{})
			if hook == nil {
				return fmt.Errorf("%s: %s %s webhook %d is not an object", manifest, o.GetKind(), o.GetName(), i)
			}
			if w.Keep != nil {
				keep, err := w.Keep(hook)
				if err != nil {
					return fmt.Errorf("%s: %s %s webhook %d: %w", manifest, o.GetKind(), o.GetName(), i, err)
				}
				if !keep {
					continue
				}
			}
			path, ok, _ := unstructured.NestedString(hook, "clientConfig", "service", "path")
			if !ok {
				return fmt.Errorf("%s: %s %s webhook %d has no clientConfig.service.path", manifest, o.GetKind(), o.GetName(), i)
			}
			hook["clientConfig"] = map[string]interface{}{
				"url":      fmt.Sprintf("https://%s%s", HostPort(w.Port), path),
				"caBundle": base64.StdEncoding.EncodeToString(w.CA),
			}
			kept = append(kept, hook)
		}
		if len(kept) == 0 {
			continue
		}
		if err := unstructured.SetNestedSlice(o.Object, kept, "webhooks"); err != nil {
			return err
		}
		o.SetName(w.Prefix + o.GetName())
		if _, err := dyn.Resource(gvr).Create(ctx, o, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("create %s %s: %w", o.GetKind(), o.GetName(), err)
		}
	}
	return nil
}
