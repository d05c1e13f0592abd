package integration

import (
	"strings"
	"testing"
)

// TestDocsRBACRecipe runs the RBAC block of docs/operations.md ("RBAC:
// Volcano's stock role plus rdmatopo's") literally, with kubectl, on the
// environment's RBAC (Volcano's installer role and binding plus
// config/rbac, the objects the docs name): the apply and every
// `kubectl auth can-i` check must succeed and print `yes`, as the docs say.
func TestDocsRBACRecipe(t *testing.T) {
	e := requireEnv(t)
	block := docBlock(t, e.RepoRoot, "operations.md", "kubectl auth can-i")
	checks := 0
	for _, l := range block {
		if strings.HasPrefix(strings.TrimSpace(l), "kubectl auth can-i") {
			checks++
			if !strings.Contains(l, "--as $SA") {
				t.Errorf("docs: %q does not check as the scheduler's ServiceAccount ($SA)", l)
			}
		}
	}
	if checks < 5 {
		t.Fatalf("docs/operations.md has %d `kubectl auth can-i` checks, want the recipe's 5:\n%s", checks, strings.Join(block, "\n"))
	}
	out, errOut, err := docShell(t, e, block)
	if err != nil {
		t.Fatalf("the docs' RBAC block failed (%v): a correct install must pass it\n%s\nstdout:\n%s\nstderr:\n%s", err, strings.Join(block, "\n"), out, errOut)
	}
	var answers []string
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		if l == "yes" || l == "no" {
			answers = append(answers, l)
		}
	}
	if len(answers) != checks {
		t.Errorf("%d checks printed %d answers:\n%s", checks, len(answers), out)
	}
	for i, a := range answers {
		if a != "yes" {
			t.Errorf("check %d printed %q, the docs say every line prints yes", i+1, a)
		}
	}
	// The SA the docs check as is the one the scheduler runs as here.
	for _, l := range block {
		if sa, ok := strings.CutPrefix(strings.TrimSpace(l), "SA="); ok && sa != schedulerUser {
			t.Errorf("docs: SA=%s, the scheduler's ServiceAccount is %s", sa, schedulerUser)
		}
	}
}
