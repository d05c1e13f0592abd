// Package integration tests rdmatopo end to end on a real Kubernetes control
// plane: etcd and kube-apiserver built from their Go modules, Volcano's
// vc-controller-manager, the Kubeflow training operator and rdmatopo's own
// vc-scheduler, all started as processes on 127.0.0.1. There is no kubelet:
// Nodes are API objects with a status, and bound pods stay bound.
//
// The tests live in _test.go files; `make -C integration test` builds the
// binaries (see hack/build-tools.sh) and runs them. Component logs go to
// files under a temporary directory, and their tails are printed when a test
// fails.
package integration
