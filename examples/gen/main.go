// Command gen writes examples/cluster.yaml, the sample cluster that
// `rdmatopo simulate` uses by default: two miniPods of eight nodes in the
// cloud provider's shape, with a few pods of an older job already running;
// and examples/cluster-namespace.yaml, the Namespace and PodGroup of that
// job, which an API server needs before the pods (docs/operations.md).
//
// Run it from the examples directory (go generate does): go run ./gen
package main

import (
	"bytes"
	"crypto/sha1"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"strings"

	"github.com/kubewharf/katalyst-api/pkg/apis/node/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"
	schedulingv1beta1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"

	"github.com/rdmatopo/rdmatopo/core/ledger"
	"github.com/rdmatopo/rdmatopo/core/topology"
	"github.com/rdmatopo/rdmatopo/internal/sim/nodeagent"
	"github.com/rdmatopo/rdmatopo/internal/testing/builders"
	"github.com/rdmatopo/rdmatopo/internal/workload"
)

// header is the first line of the generated file: what it shows.
const header = "# Sample cluster: two miniPods (S1) of 8 nodes, 8 GPUs and 4 RDMA NICs per node, NUMA-0 and NUMA-1 NICs on different S0 leaves, 6 pods of an older job running.\n"

// Shape of the sample cluster.
const (
	nodesPerMiniPod = 8
	// nodesPerLeafPair nodes share a pair of leaves: their NUMA-0 NICs go to
	// the first leaf, their NUMA-1 NICs to the second.
	nodesPerLeafPair = 4
	gpusPerNUMA      = 4
	cpuPerNUMA       = 64
)

// miniPods name the S1s and the node name prefixes.
var miniPods = []struct{ s1, prefix string }{{"minipod-a", "gpu-a"}, {"minipod-b", "gpu-b"}}

// spanning lists the nodes whose topology policy lets a pod span NUMA
// zones (None); the others are SingleNUMANodeContainerLevel.
var spanning = map[string]bool{"gpu-b01": true, "gpu-b02": true, "gpu-b03": true, "gpu-b04": true}

// running places the pods of the older job "research/legacy-eval": one
// NUMA zone (4 GPUs, 2 NICs) each, spread so that only two leaves keep all
// four of their zones free.
var running = []struct {
	node string
	numa int
}{{"gpu-a01", 0}, {"gpu-a05", 0}, {"gpu-b01", 0}, {"gpu-b04", 1}, {"gpu-b05", 0}, {"gpu-b07", 1}}

// leafID is the opaque hash a leaf switch reports (40 hex digits).
func leafID(s1 string, i int) string {
	sum := sha1.Sum([]byte(fmt.Sprintf("%s/s0-%d", s1, i)))
	return hex.EncodeToString(sum[:])
}

func main() {
	var docs []any
	var cnrs []*v1alpha1.CustomNodeResource
	cnrIndex := map[string]*builders.CNRWrapper{}
	var order []string
	for _, mp := range miniPods {
		for i := 1; i <= nodesPerMiniPod; i++ {
			name := fmt.Sprintf("%s%02d", mp.prefix, i)
			pair := (i - 1) / nodesPerLeafPair
			leaves := [2]string{leafID(mp.s1, 2*pair), leafID(mp.s1, 2*pair+1)}
			docs = append(docs, builders.MakeNode(name).Shared().S1(mp.s1).
				GPU(2*gpusPerNUMA).RDMA(4).CPU(fmt.Sprint(2*cpuPerNUMA)).
				Resource(corev1.ResourceMemory, "1Ti").Resource(corev1.ResourcePods, "110").
				Ready(corev1.ConditionTrue).Obj())
			policy := v1alpha1.TopologyPolicySingleNUMANodeContainerLevel
			if spanning[name] {
				policy = v1alpha1.TopologyPolicyNone
			}
			w := builders.MakeCNR(name).Policy(policy).
				Zone(0, gpusPerNUMA, cpuPerNUMA*1000).Zone(1, gpusPerNUMA, cpuPerNUMA*1000)
			for numa := 0; numa < 2; numa++ {
				for _, pci := range builders.NUMANICs[numa] {
					w.NIC(pci, numa, leaves[numa])
				}
			}
			cnrIndex[name] = w
			order = append(order, name)
		}
	}
	byNode := map[string]*v1alpha1.CustomNodeResource{}
	for _, name := range order {
		cnr := cnrIndex[name].Obj()
		byNode[name] = cnr
		cnrs = append(cnrs, cnr)
	}
	var pods []any
	for i, r := range running {
		name := fmt.Sprintf("legacy-eval-%d", i)
		// The pods carry no UID (an API server assigns its own); the KCNR
		// allocations name the one the simulator gives a pod without.
		uid := string(workload.StableUID(workload.KindPod, legacyNamespace, name))
		nics := builders.NUMANICs[r.numa]
		// The KCNR lists the pod as the node agent reports it (the
		// simulator's node agent writes it).
		nodeagent.Record(byNode[r.node], topology.Config{}, ledger.ConsumerID(legacyNamespace, name, uid), ledger.Reservation{
			Zones: []ledger.ZoneUse{{NUMA: r.numa, GPU: gpusPerNUMA, CPUMilli: 16000, NICs: []topology.NICID{topology.NICID(nics[0]), topology.NICID(nics[1])}}},
		})
		s1 := miniPods[0].s1
		if strings.HasPrefix(r.node, miniPods[1].prefix) {
			s1 = miniPods[1].s1
		}
		var idx int
		fmt.Sscanf(r.node[len(r.node)-2:], "%d", &idx)
		leaf := leafID(s1, 2*((idx-1)/nodesPerLeafPair)+r.numa)
		pods = append(pods, runningPod(name, r.node, r.numa, nics, leaf))
	}

	var objs []any
	for _, group := range [][]any{docs, toAny(cnrs), pods} {
		objs = append(objs, group...)
	}
	writeYAML("cluster.yaml", header, objs)
	writeYAML("cluster-namespace.yaml", namespaceHeader, []any{
		&corev1.Namespace{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Namespace"}, ObjectMeta: metav1.ObjectMeta{Name: legacyNamespace}},
		&schedulingv1beta1.PodGroup{
			TypeMeta:   metav1.TypeMeta{APIVersion: "scheduling.volcano.sh/v1beta1", Kind: "PodGroup"},
			ObjectMeta: metav1.ObjectMeta{Name: legacyJob, Namespace: legacyNamespace},
			Spec:       schedulingv1beta1.PodGroupSpec{MinMember: int32(len(running)), Queue: "default"},
		},
	})
}

// writeYAML writes objs to file as multi-document YAML after header; it
// exits on error.
func writeYAML(file, header string, objs []any) {
	var b bytes.Buffer
	b.WriteString(header)
	for _, obj := range objs {
		out, err := cleanYAML(obj)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		b.WriteString("---\n")
		b.Write(out)
	}
	if err := os.WriteFile(file, b.Bytes(), 0o644); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

// The older job's namespace and PodGroup.
const (
	legacyNamespace = "research"
	legacyJob       = "legacy-eval"
)

// namespaceHeader heads cluster-namespace.yaml.
const namespaceHeader = "# The Namespace and PodGroup of the older job in cluster.yaml, for an API server: apply before cluster.yaml (docs/operations.md). The simulator needs neither.\n"

// runningPod is one pod of the older job, bound with its NICs annotated as
// rdmatopo annotates them.
func runningPod(name, node string, numa int, nics [2]string, leaf string) *corev1.Pod {
	req := corev1.ResourceList{
		builders.GPUResource:  resource.MustParse(fmt.Sprint(gpusPerNUMA)),
		builders.RDMAResource: resource.MustParse("2"),
		corev1.ResourceCPU:    resource.MustParse("16"),
		corev1.ResourceMemory: resource.MustParse("64Gi"),
	}
	return &corev1.Pod{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{
			Name: name, Namespace: legacyNamespace,
			Annotations: map[string]string{
				builders.GroupNameAnnotation: legacyJob,
				"rdmatopo.io/nics":           nics[0] + "," + nics[1],
				"rdmatopo.io/numa":           fmt.Sprint(numa),
				"rdmatopo.io/s0":             leaf,
			},
		},
		Spec: corev1.PodSpec{
			SchedulerName: "volcano",
			NodeName:      node,
			Containers: []corev1.Container{{
				Name: "eval", Image: "registry.example.com/llm/eval:1.4",
				Resources: corev1.ResourceRequirements{Requests: req, Limits: req},
			}},
		},
		Status: corev1.PodStatus{Phase: corev1.PodRunning},
	}
}

// toAny widens a typed slice.
func toAny[T any](in []T) []any {
	out := make([]any, len(in))
	for i, v := range in {
		out[i] = v
	}
	return out
}

// cleanYAML renders an object as YAML without null and empty fields.
func cleanYAML(obj any) ([]byte, error) {
	js, err := json.Marshal(obj)
	if err != nil {
		return nil, err
	}
	var m any
	if err := json.Unmarshal(js, &m); err != nil {
		return nil, err
	}
	return yaml.Marshal(prune(m))
}

// prune drops empty values (see isEmpty), innermost first.
func prune(v any) any {
	switch t := v.(type) {
	case map[string]any:
		for k, e := range t {
			e = prune(e)
			if isEmpty(e) {
				delete(t, k)
				continue
			}
			t[k] = e
		}
		return t
	case []any:
		for i, e := range t {
			t[i] = prune(e)
		}
		return t
	}
	return v
}

// isEmpty reports null, "", 0, {} and [] (the zero values Go structs
// without omitempty marshal).
func isEmpty(v any) bool {
	switch t := v.(type) {
	case nil:
		return true
	case string:
		return t == ""
	case float64:
		return t == 0
	case map[string]any:
		return len(t) == 0
	case []any:
		return len(t) == 0
	}
	return false
}
