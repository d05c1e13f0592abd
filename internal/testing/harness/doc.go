// Package harness runs a local control plane for the integration tests and
// the end-to-end benchmark: components started as processes in their own
// process groups with their output in log files (Group, Process), etcd and
// kube-apiserver on loopback ports with static token users (StartEtcd,
// StartAPIServer), readiness polling (WaitHTTP), kubeconfigs, and the
// objects both install from their modules: CRDs, manifests, Volcano's
// scheduler RBAC and admission webhook configurations pointed at servers on
// 127.0.0.1 (InstallCRDs, CreateObjects, InstallWebhooks).
package harness
