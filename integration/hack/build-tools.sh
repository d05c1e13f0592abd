#!/usr/bin/env bash
# Builds the binaries the integration tests run, into integration/.bin
# (git-ignored), one after another:
#
#   etcd                  go.etcd.io/etcd/server/v3 v3.5.10   (tools/etcd)
#   kube-apiserver        k8s.io/kubernetes v1.30.2           (tools/kube-apiserver)
#   kube-controller-manager k8s.io/kubernetes v1.30.2         (tools/kube-apiserver, the Job controller)
#   kubectl               k8s.io/kubernetes v1.30.2           (tools/kubectl, runs the docs' commands)
#   vc-controller-manager volcano.sh/volcano v1.10.0          (tools/volcano)
#   training-operator     github.com/kubeflow/training-operator v1.8.1 (tools/training-operator)
#   trainer-controller-manager github.com/kubeflow/trainer/v2 v2.1.0 (tools/trainer)
#   jobset-controller     sigs.k8s.io/jobset v0.10.1          (tools/trainer)
#   helm                  helm.sh/helm/v4 v4.3.2              (tools/helm, renders Volcano's chart)
#   kube-scheduler        k8s.io/kubernetes v1.30.2           (tools/kube-apiserver, the companion's tests)
#   hypernode-check       volcano.sh/apis v1.14.0             (tools/volcanoapis, decodes HyperNodes)
#   vc-scheduler          this repository's cmd/vc-scheduler (and cmd/rdmatopo, the companion,
#                         and the kubectl plugin's kubectl-rdmatopo and kubectl-rdmatopo-simulate)
#
# and, on request only (the end-to-end benchmark, `make bench-e2e`):
#
#   kwok                  sigs.k8s.io/kwok v0.8.0             (tools/kwok, Kubernetes 0.36)
#   vc-scheduler-stock    volcano.sh/volcano v1.10.0 cmd/scheduler (tools/volcano)
#   kueue                 sigs.k8s.io/kueue v0.17.0           (tools/kueue, Kubernetes 0.35)
#
# The third-party tools are rebuilt only when their stamp changes: a hash of
# their tool module (go.mod, go.sum, Go files), the Go version and the build
# flags. vc-scheduler is handed to `go build` every time; Go itself leaves an
# up-to-date binary alone, so an unchanged tree costs about a second.
#
# Usage: hack/build-tools.sh [name...]   (default: the first twelve, in the order above)
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
bin="${BIN_DIR:-$here/.bin}"
go="${GO:-go}"
mkdir -p "$bin"
export GOWORK=off

# Version information kube-apiserver reports on /version (a source build
# otherwise says v0.0.0-master); clients use it for feature checks.
# kube-controller-manager gets the same.
kas_ldflags="-X k8s.io/component-base/version.gitVersion=v1.30.2 -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=30"

# stamp prints the cache key of a tool: its module files, the Go version,
# the package and the flags.
stamp() {
	local dir="$1" pkg="$2" ldflags="$3"
	{
		"$go" env GOVERSION GOOS GOARCH CGO_ENABLED
		echo "$pkg"
		echo "$ldflags"
		(cd "$dir" && find . -maxdepth 1 -type f \( -name 'go.mod' -o -name 'go.sum' -o -name '*.go' \) -print0 |
			sort -z | xargs -0 sha256sum)
	} | sha256sum | cut -d' ' -f1
}

# build_tool NAME DIR PKG LDFLAGS builds a third-party tool unless its
# binary exists and was built from the same stamp.
build_tool() {
	local name="$1" dir="$here/$2" pkg="$3" ldflags="$4"
	local out="$bin/$name" want
	want="$(stamp "$dir" "$pkg" "$ldflags")"
	if [[ -x "$out" && -f "$out.stamp" && "$(cat "$out.stamp")" == "$want" ]]; then
		echo "build-tools: $name is up to date"
		return
	fi
	echo "build-tools: building $name ($pkg) ..."
	local start=$SECONDS
	rm -f "$out.stamp"
	(cd "$dir" && "$go" build -o "$out.tmp" -ldflags "$ldflags" "$pkg")
	mv -f "$out.tmp" "$out"
	echo "$want" >"$out.stamp"
	echo "build-tools: built $name in $((SECONDS - start))s"
}

# build_scheduler builds this repository's vc-scheduler; Go decides whether
# anything changed.
build_scheduler() {
	local start=$SECONDS
	echo "build-tools: building vc-scheduler (./cmd/vc-scheduler) ..."
	(cd "$here/.." && "$go" build -o "$bin/vc-scheduler" ./cmd/vc-scheduler)
	build_cli
	build_kubectl_plugin
	echo "build-tools: vc-scheduler ready in $((SECONDS - start))s"
}

# build_cli builds this repository's rdmatopo CLI (the companion's binary).
build_cli() {
	(cd "$here/.." && "$go" build -o "$bin/rdmatopo" ./cmd/rdmatopo)
}

# build_kubectl_plugin builds this repository's two kubectl plugin binaries
# side by side, as they are installed (kubectl finds them on PATH).
build_kubectl_plugin() {
	(cd "$here/.." && "$go" build -o "$bin/kubectl-rdmatopo" ./cmd/kubectl-rdmatopo &&
		"$go" build -o "$bin/kubectl-rdmatopo-simulate" ./cmd/kubectl-rdmatopo-simulate)
}

build() {
	case "$1" in
	etcd) build_tool etcd tools/etcd . "" ;;
	kube-apiserver) build_tool kube-apiserver tools/kube-apiserver k8s.io/kubernetes/cmd/kube-apiserver "$kas_ldflags" ;;
	kube-controller-manager) build_tool kube-controller-manager tools/kube-apiserver k8s.io/kubernetes/cmd/kube-controller-manager "$kas_ldflags" ;;
	kubectl) build_tool kubectl tools/kubectl k8s.io/kubernetes/cmd/kubectl "$kas_ldflags" ;;
	trainer-controller-manager) build_tool trainer-controller-manager tools/trainer github.com/kubeflow/trainer/v2/cmd/trainer-controller-manager "" ;;
	jobset-controller) build_tool jobset-controller tools/trainer sigs.k8s.io/jobset "" ;;
	vc-controller-manager) build_tool vc-controller-manager tools/volcano volcano.sh/volcano/cmd/controller-manager "" ;;
	training-operator) build_tool training-operator tools/training-operator github.com/kubeflow/training-operator/cmd/training-operator.v1 "" ;;
	helm) build_tool helm tools/helm helm.sh/helm/v4/cmd/helm "" ;;
	vc-scheduler) build_scheduler ;;
	rdmatopo) build_cli ;;
	kubectl-rdmatopo) build_kubectl_plugin ;;
	kwok) build_tool kwok tools/kwok sigs.k8s.io/kwok/cmd/kwok "" ;;
	vc-scheduler-stock) build_tool vc-scheduler-stock tools/volcano volcano.sh/volcano/cmd/scheduler "" ;;
	kube-scheduler) build_tool kube-scheduler tools/kube-apiserver k8s.io/kubernetes/cmd/kube-scheduler "$kas_ldflags" ;;
	hypernode-check) build_tool hypernode-check tools/volcanoapis . "" ;;
	kueue) build_tool kueue tools/kueue sigs.k8s.io/kueue/cmd/kueue "" ;;
	*)
		echo "build-tools: unknown tool $1" >&2
		return 2
		;;
	esac
}

tools=("$@")
if [[ ${#tools[@]} -eq 0 ]]; then
	tools=(etcd kube-apiserver kube-controller-manager kubectl vc-controller-manager training-operator trainer-controller-manager jobset-controller helm kube-scheduler hypernode-check vc-scheduler)
fi
for t in "${tools[@]}"; do
	build "$t"
done
