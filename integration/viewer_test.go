package integration

import (
	"context"
	"path/filepath"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rdmatopo/rdmatopo/internal/testing/harness"
)

// TestViewerRole: a user bound to nothing but config/rbac's read-only
// kubectl-rdmatopo-viewer objects runs every read command of the kubectl
// plugin (topology, map, simulate, explain of a Volcano Job); without
// them the same commands are refused.
func TestViewerRole(t *testing.T) {
	e := requireEnv(t)
	ctx := context.Background()
	const user = "rdmatopo-viewer-it"
	f := newFabric(t, e)
	ns := newNamespace(t, e)
	_ = twoGroups(ctx, f)
	useSchedulerConfigMap(t, e)
	job := volcanoJob{Name: "llm", Workers: 3, Shape: trainer, Contract: hardS0}
	job.Create(t, e, ns)
	waitBound(t, e, ns, job.Selector(), job.Size(), placeTimeout)

	// Before the role: refused.
	if code, _, _ := kubectlRun(t, e, "topology", "--as", user); code == 0 {
		t.Fatalf("kubectl rdmatopo topology ran as %s without any role", user)
	}

	objs, err := harness.ReadManifests(filepath.Join(e.RepoRoot, "config", "rbac", "kubectl-rdmatopo-viewer.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := e.create(ctx, objs); err != nil {
		t.Fatalf("create the viewer role: %v", err)
	}
	crb := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: user},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "rdmatopo-viewer"},
		Subjects: []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: user}}}
	rb := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: user, Namespace: "volcano-system"},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "rdmatopo-viewer-conf"},
		Subjects: []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: user}}}
	if _, err := e.Kube.RbacV1().ClusterRoleBindings().Create(ctx, crb, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Kube.RbacV1().RoleBindings("volcano-system").Create(ctx, rb, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		bg := context.Background()
		_ = e.Kube.RbacV1().ClusterRoleBindings().Delete(bg, user, metav1.DeleteOptions{})
		_ = e.Kube.RbacV1().RoleBindings("volcano-system").Delete(bg, user, metav1.DeleteOptions{})
		_ = e.Kube.RbacV1().ClusterRoles().Delete(bg, "rdmatopo-viewer", metav1.DeleteOptions{})
		_ = e.Kube.RbacV1().Roles("volcano-system").Delete(bg, "rdmatopo-viewer-conf", metav1.DeleteOptions{})
	})

	eventually(t, placeTimeout, func() (bool, string) {
		code, _, errOut := kubectlRun(t, e, "topology", "--as", user)
		return code == 0, errOut
	})
	for _, args := range [][]string{
		{"topology", "-o", "json"},
		{"map", "-o", "json"},
		{"simulate", "-o", "json"},
		{"explain", "job/" + job.Name, "-n", ns},
	} {
		code, _, errOut := kubectlRun(t, e, append(args, "--as", user)...)
		if code != 0 {
			t.Errorf("kubectl rdmatopo %v as %s: exit %d: %s", args, user, code, errOut)
		}
	}
}
