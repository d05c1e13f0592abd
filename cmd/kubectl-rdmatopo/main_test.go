package main

import (
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// volcanoScheduler is the import path prefix of Volcano's scheduler
// packages (its session, cache, actions and plugins).
const volcanoScheduler = "volcano.sh/volcano/pkg/scheduler"

// goList lists the packages a main package links (go list -deps).
func goList(t *testing.T, pkg string) []string {
	t.Helper()
	goBin := filepath.Join(runtime.GOROOT(), "bin", "go")
	if _, err := exec.LookPath(goBin); err != nil {
		goBin = "go"
	}
	out, err := exec.Command(goBin, "list", "-deps", pkg).Output()
	if err != nil {
		var stderr string
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = string(ee.Stderr)
		}
		t.Fatalf("go list -deps %s: %v\n%s", pkg, err, stderr)
	}
	return strings.Fields(string(out))
}

// TestNoVolcanoScheduler: kubectl-rdmatopo links no package of Volcano's
// scheduler; what runs a session is kubectl-rdmatopo-simulate, which does
// (so the check has something to find).
func TestNoVolcanoScheduler(t *testing.T) {
	var linked []string
	for _, p := range goList(t, ".") {
		if p == volcanoScheduler || strings.HasPrefix(p, volcanoScheduler+"/") {
			linked = append(linked, p)
		}
	}
	if len(linked) > 0 {
		t.Errorf("kubectl-rdmatopo links %d Volcano scheduler packages (move what needs them to kubectl-rdmatopo-simulate):\n%s",
			len(linked), strings.Join(linked, "\n"))
	}
	found := false
	for _, p := range goList(t, "../kubectl-rdmatopo-simulate") {
		found = found || p == volcanoScheduler+"/framework"
	}
	if !found {
		t.Errorf("kubectl-rdmatopo-simulate does not link %s/framework: the check above would find nothing either", volcanoScheduler)
	}
}
