package integration

import (
	"bufio"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestDocsRBACRecipe runs the `kubectl auth can-i` checks of
// docs/operations.md ("RBAC: Volcano's stock role plus rdmatopo's") as
// SubjectAccessReviews, on the environment's RBAC (Volcano's installer
// role and binding plus config/rbac, the objects the docs name): every
// check must be allowed, as the docs say.
func TestDocsRBACRecipe(t *testing.T) {
	e := requireEnv(t)
	ctx := context.Background()
	f, err := os.Open(filepath.Join(e.RepoRoot, "docs", "operations.md"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sa := ""
	checks := 0
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line, _, _ := strings.Cut(sc.Text(), "#")
		fields := strings.Fields(line)
		if len(fields) == 1 && strings.HasPrefix(fields[0], "SA=") {
			sa = strings.TrimPrefix(fields[0], "SA=")
			continue
		}
		if len(fields) < 5 || fields[0] != "kubectl" || fields[1] != "auth" || fields[2] != "can-i" {
			continue
		}
		verb, what := fields[3], fields[4]
		attrs := &authorizationv1.ResourceAttributes{Verb: verb}
		resource, group, _ := strings.Cut(what, ".")
		resource, sub, _ := strings.Cut(resource, "/")
		attrs.Resource, attrs.Group, attrs.Subresource = resource, group, sub
		user := ""
		for i := 5; i < len(fields)-1; i++ {
			switch fields[i] {
			case "-n":
				attrs.Namespace = fields[i+1]
			case "--as":
				user = strings.ReplaceAll(fields[i+1], "$SA", sa)
			}
		}
		if user != schedulerUser {
			t.Errorf("docs: %q checks as %q, want the scheduler's ServiceAccount %s", line, user, schedulerUser)
			continue
		}
		checks++
		review, err := e.Kube.AuthorizationV1().SubjectAccessReviews().Create(ctx, &authorizationv1.SubjectAccessReview{
			Spec: authorizationv1.SubjectAccessReviewSpec{User: user, ResourceAttributes: attrs},
		}, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("%s: %v", line, err)
		}
		if !review.Status.Allowed {
			t.Errorf("docs say yes, the API server says no: %s (%s)", strings.TrimSpace(line), review.Status.Reason)
		}
	}
	if checks < 5 {
		t.Errorf("docs/operations.md has %d `kubectl auth can-i` checks, want the recipe's 5", checks)
	}
}
