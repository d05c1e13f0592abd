package main

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kubewharf/katalyst-api/pkg/apis/node/v1alpha1"
	"github.com/kubewharf/katalyst-api/pkg/consts"
	corev1 "k8s.io/api/core/v1"

	"github.com/rdmatopo/rdmatopo/core/ledger"
	"github.com/rdmatopo/rdmatopo/internal/sim/nodeagent"
	"github.com/rdmatopo/rdmatopo/internal/testing/builders"
)

// e2eCNR is a two-zone node (4 GPUs, 16 cores and two NICs per zone;
// zone 0's NICs on leaf A, zone 1's on leaf B).
func e2eCNR() *v1alpha1.CustomNodeResource {
	nic := builders.NUMANICs
	return builders.MakeCNR("n1").Policy(v1alpha1.TopologyPolicyNone).
		Zone(0, 4, 16000).Zone(1, 4, 16000).
		NIC(nic[0][0], 0, "A").NIC(nic[0][1], 0, "A").
		NIC(nic[1][0], 1, "B").NIC(nic[1][1], 1, "B").Obj()
}

// e2ePod asks for gpu GPUs, 4 cores and nics NICs, with an optional
// numa_bind_result.
func e2ePod(name, gpu, nics, hint string) *corev1.Pod {
	w := builders.MakePod("ns", name).UID("u-"+name).Node("n1").Group("g").
		Req(builders.GPUResource, gpu).Req(corev1.ResourceCPU, "4").Req(builders.RDMAResource, nics)
	if hint != "" {
		w = w.Annotation(consts.PodAnnotationNUMABindResultKey, hint)
	}
	return w.Obj()
}

// TestAgentConfirm: the driver's agent lists bound pods where
// nodeagent.Decide puts them, counts hinted, unhinted and misaligned pods,
// keeps each pod's leaves after it is gone and frees its devices.
func TestAgentConfirm(t *testing.T) {
	nic := builders.NUMANICs
	cases := []struct {
		name                         string
		mode                         nodeagent.Mode
		pods                         []*corev1.Pod
		wantNICs                     map[string][]string // consumer pod -> NICs listed
		wantLeaves                   map[string][]string
		hinted, unhinted, misaligned int
	}{
		{
			name:       "numa: the hinted zone, then no hint: the lowest zone with room",
			mode:       nodeagent.NUMA,
			pods:       []*corev1.Pod{e2ePod("a", "2", "1", "1"), e2ePod("b", "2", "1", "")},
			wantNICs:   map[string][]string{"a": {nic[1][0]}, "b": {nic[0][0]}},
			wantLeaves: map[string][]string{"a": {"B"}, "b": {"A"}},
			hinted:     1, unhinted: 1,
		},
		{
			name:       "numa: no zone holds the pod, spread and counted misaligned",
			mode:       nodeagent.NUMA,
			pods:       []*corev1.Pod{e2ePod("a", "6", "3", "")},
			wantNICs:   map[string][]string{"a": {nic[0][0], nic[0][1], nic[1][0]}},
			wantLeaves: map[string][]string{"a": {"A", "A", "B"}},
			unhinted:   1, misaligned: 1,
		},
		{
			name:       "blind: the hint is ignored",
			mode:       nodeagent.Blind,
			pods:       []*corev1.Pod{e2ePod("a", "2", "1", "1")},
			wantNICs:   map[string][]string{"a": {nic[0][0]}},
			wantLeaves: map[string][]string{"a": {"A"}},
			hinted:     1,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			a := newAgent(nil, 0, tc.mode, []*v1alpha1.CustomNodeResource{e2eCNR()})
			for _, p := range tc.pods {
				a.observe(p)
			}
			a.confirmDue(time.Now().Add(time.Second))
			if a.hinted != tc.hinted || a.unhinted != tc.unhinted || a.misaligned != tc.misaligned {
				t.Errorf("hinted/unhinted/misaligned = %d/%d/%d, want %d/%d/%d",
					a.hinted, a.unhinted, a.misaligned, tc.hinted, tc.unhinted, tc.misaligned)
			}
			if !a.dirty["n1"] {
				t.Error("the KCNR is not marked for writing")
			}
			listed := nodeagent.ListedNICs(a.cnrs["n1"])
			for _, p := range tc.pods {
				var got []string
				for _, n := range listed[nodeagent.Consumer(p)] {
					got = append(got, string(n))
				}
				if want := lower(tc.wantNICs[p.Name]); !slices.Equal(got, want) {
					t.Errorf("pod %s listed on %v, want %v", p.Name, got, want)
				}
				a.forget(p)
				if leaves, ok := a.leavesOf(p.Namespace, p.Name); !ok || !slices.Equal(leaves, tc.wantLeaves[p.Name]) {
					t.Errorf("pod %s leaves %v (%v), want %v", p.Name, leaves, ok, tc.wantLeaves[p.Name])
				}
			}
			if left := nodeagent.ListedNICs(a.cnrs["n1"]); len(left) != 0 {
				t.Errorf("after every pod is gone the KCNR still lists %v", left)
			}
		})
	}
}

// TestAgentIgnores: pods the agent does not report.
func TestAgentIgnores(t *testing.T) {
	cases := []struct {
		name string
		pod  *corev1.Pod
	}{
		{name: "not bound", pod: builders.MakePod("ns", "p").Req(builders.RDMAResource, "1").Obj()},
		{name: "no RDMA", pod: builders.MakePod("ns", "p").Node("n1").Req(builders.GPUResource, "1").Obj()},
		{name: "terminating", pod: builders.MakePod("ns", "p").Node("n1").Req(builders.RDMAResource, "1").Terminating(time.Now()).Obj()},
		{name: "node without KCNR", pod: builders.MakePod("ns", "p").Node("n2").Req(builders.RDMAResource, "1").Obj()},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			a := newAgent(nil, 0, nodeagent.NUMA, []*v1alpha1.CustomNodeResource{e2eCNR()})
			a.observe(tc.pod)
			a.confirmDue(time.Now().Add(time.Second))
			if len(a.held) != 0 || len(a.dirty) != 0 {
				t.Errorf("agent holds %v, dirty %v", a.held, a.dirty)
			}
		})
	}
}

// TestAgentPreallocate: a running pod is listed on exactly its annotated
// NICs; an annotation naming a NIC the node lacks, or one that does not
// read, is an error that names the pod.
func TestAgentPreallocate(t *testing.T) {
	nic := builders.NUMANICs
	running := func(nics string) *corev1.Pod {
		return builders.MakePod("ns", "r").UID("u-r").Node("n1").
			Req(builders.GPUResource, "8").Req(corev1.ResourceCPU, "8").Req(builders.RDMAResource, "2").
			Annotation(ledger.AnnotationNICs, nics).Obj()
	}
	cases := []struct {
		name    string
		pod     *corev1.Pod
		want    []string
		wantErr string
	}{
		{name: "over both zones", pod: running(nic[0][1] + "," + nic[1][0]), want: []string{nic[0][1], nic[1][0]}},
		{name: "a NIC the node lacks", pod: running(nic[0][1] + ",0000:ff:00.0"), wantErr: "0000:ff:00.0"},
		{name: "malformed", pod: running("eth0"), wantErr: "ns/r"},
		{name: "no annotation", pod: builders.MakePod("ns", "r").Node("n1").Req(builders.RDMAResource, "1").Obj()},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			a := newAgent(nil, 0, nodeagent.NUMA, []*v1alpha1.CustomNodeResource{e2eCNR()})
			err := a.preallocate(tc.pod)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want one naming %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, n := range nodeagent.ListedNICs(a.cnrs["n1"])[nodeagent.Consumer(tc.pod)] {
				got = append(got, string(n))
			}
			if want := lower(tc.want); !slices.Equal(got, want) {
				t.Errorf("listed on %v, want %v", got, want)
			}
		})
	}
}

func lower(ss []string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = strings.ToLower(s)
	}
	return out
}
