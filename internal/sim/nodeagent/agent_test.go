package nodeagent

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/kubewharf/katalyst-api/pkg/apis/node/v1alpha1"
	"github.com/kubewharf/katalyst-api/pkg/consts"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/rdmatopo/rdmatopo/core/ledger"
	"github.com/rdmatopo/rdmatopo/core/topology"
	"github.com/rdmatopo/rdmatopo/internal/testing/builders"
)

// agentCNR is a two-zone node (4 GPUs, 16 cores and two NICs per zone)
// whose KCNR lists another pod on zone0GPUsTaken of zone 0's GPUs.
func agentCNR(zone0GPUsTaken int64) *v1alpha1.CustomNodeResource {
	w := builders.MakeCNR("n1").Policy(v1alpha1.TopologyPolicyNone).
		Zone(0, 4, 16000).Zone(1, 4, 16000).
		NIC(builders.NUMANICs[0][0], 0, "A").NIC(builders.NUMANICs[0][1], 0, "A").
		NIC(builders.NUMANICs[1][0], 1, "B").NIC(builders.NUMANICs[1][1], 1, "B")
	if zone0GPUsTaken > 0 {
		w = w.Alloc(0, "ns/other/u-other", corev1.ResourceList{
			builders.GPUResource: *resource.NewQuantity(zone0GPUsTaken, resource.DecimalSI)})
	}
	return w.Obj()
}

// agentPod asks for gpu GPUs, 4 cores and nics NICs; it was annotated with
// annotatedNICs and the hint.
func agentPod(gpu, nics string, hint string, annotatedNICs ...string) *corev1.Pod {
	w := builders.MakePod("ns", "p").UID("u-p").Node("n1").Group("g").
		Req(builders.GPUResource, gpu).Req(corev1.ResourceCPU, "4")
	if nics != "" {
		w = w.Req(builders.RDMAResource, nics)
	}
	if len(annotatedNICs) > 0 {
		w = w.Annotation(ledger.AnnotationNICs, joinNICs(annotatedNICs))
	}
	if hint != "" {
		w = w.Annotation(consts.PodAnnotationNUMABindResultKey, hint)
	}
	return w.Obj()
}

func joinNICs(nics []string) string {
	ids := make([]topology.NICID, len(nics))
	for i, n := range nics {
		ids[i] = topology.NICID(n)
	}
	return ledger.FormatNICs(ids)
}

func use(numa int, gpu, cpuMilli int64, nics ...string) ledger.ZoneUse {
	u := ledger.ZoneUse{NUMA: numa, GPU: gpu, CPUMilli: cpuMilli}
	for _, n := range nics {
		u.NICs = append(u.NICs, topology.NICID(n))
	}
	return u
}

func TestAllot(t *testing.T) {
	nic := builders.NUMANICs
	cases := []struct {
		name   string
		agent  Mode
		cnr    *v1alpha1.CustomNodeResource
		held   []ledger.Reservation
		pod    *corev1.Pod
		want   []ledger.ZoneUse
		wantOK bool
		how    Outcome
	}{
		{
			name: "numa: hinted zone 0, its first free NIC by name, not the annotated one", how: Hinted,
			agent: NUMA, cnr: agentCNR(0),
			pod:  agentPod("2", "1", "0", nic[0][1]),
			want: []ledger.ZoneUse{use(0, 2, 4000, nic[0][0])}, wantOK: true,
		},
		{
			name: "numa: hinted zone 1 although zone 0 has room", how: Hinted,
			agent: NUMA, cnr: agentCNR(0),
			pod:  agentPod("4", "2", "1", nic[1][0], nic[1][1]),
			want: []ledger.ZoneUse{use(1, 4, 4000, nic[1][0], nic[1][1])}, wantOK: true,
		},
		{
			name: "numa: the NICs the agent handed out before are not free", how: Hinted,
			agent: NUMA, cnr: agentCNR(0),
			held: []ledger.Reservation{{UID: "u-q", Node: "n1", Zones: []ledger.ZoneUse{use(0, 1, 1000, nic[0][0])}}},
			pod:  agentPod("1", "1", "0", nic[0][0]),
			want: []ledger.ZoneUse{use(0, 1, 4000, nic[0][1])}, wantOK: true,
		},
		{
			name: "numa: hinted zone full, first zone with room", how: OneZone,
			agent: NUMA, cnr: agentCNR(4),
			pod:  agentPod("2", "1", "0", nic[0][0]),
			want: []ledger.ZoneUse{use(1, 2, 4000, nic[1][0])}, wantOK: true,
		},
		{
			name: "numa: no hint, first zone with room", how: OneZone,
			agent: NUMA, cnr: agentCNR(0),
			pod:  agentPod("1", "1", "", nic[1][1]),
			want: []ledger.ZoneUse{use(0, 1, 4000, nic[0][0])}, wantOK: true,
		},
		{
			name: "numa: spanning hint", how: Hinted,
			agent: NUMA, cnr: agentCNR(0),
			pod:  agentPod("8", "4", "0,1", nic[0][0], nic[0][1], nic[1][0], nic[1][1]),
			want: []ledger.ZoneUse{use(0, 4, 4000, nic[0][0], nic[0][1]), use(1, 4, 0, nic[1][0], nic[1][1])}, wantOK: true,
		},
		{
			name: "blind: ignores the hint, takes zone 0", how: OneZone,
			agent: Blind, cnr: agentCNR(0),
			pod:  agentPod("4", "2", "1", nic[1][0], nic[1][1]),
			want: []ledger.ZoneUse{use(0, 4, 4000, nic[0][0], nic[0][1])}, wantOK: true,
		},
		{
			name: "blind: zone 0 lacks GPUs, takes zone 1", how: OneZone,
			agent: Blind, cnr: agentCNR(3),
			pod:  agentPod("2", "1", "0", nic[0][1]),
			want: []ledger.ZoneUse{use(1, 2, 4000, nic[1][0])}, wantOK: true,
		},
		{
			name: "blind: no zone holds the pod, spread over both", how: Spread,
			agent: Blind, cnr: agentCNR(0),
			pod:  agentPod("8", "4", "0,1", nic[0][0], nic[0][1], nic[1][0], nic[1][1]),
			want: []ledger.ZoneUse{use(0, 4, 4000, nic[0][0], nic[0][1]), use(1, 4, 0, nic[1][0], nic[1][1])}, wantOK: true,
		},
		{
			name: "exact: the annotated NICs", how: Followed,
			agent: Exact, cnr: agentCNR(0),
			pod:  agentPod("2", "1", "0", nic[0][1]),
			want: []ledger.ZoneUse{use(0, 2, 4000, nic[0][1])}, wantOK: true,
		},
		{
			name: "exact: annotated NICs over two zones, GPUs and CPU split evenly", how: Followed,
			agent: Exact, cnr: agentCNR(0),
			pod:  agentPod("8", "2", "0,1", nic[0][0], nic[1][0]),
			want: []ledger.ZoneUse{use(0, 4, 2000, nic[0][0]), use(1, 4, 2000, nic[1][0])}, wantOK: true,
		},
		{
			name: "numa: not even both zones hold the pod, the annotated NICs", how: Overflow,
			agent: NUMA, cnr: agentCNR(0),
			pod:  agentPod("10", "1", "", nic[1][1]),
			want: []ledger.ZoneUse{use(1, 10, 4000, nic[1][1])}, wantOK: true,
		},
		{
			name:  "exact: no annotated NIC on the node, nothing to report",
			agent: Exact, cnr: agentCNR(0),
			pod: agentPod("1", "1", "0", "0000:ff:00.0"),
		},
		{
			name:  "no RDMA requested: nothing to report",
			agent: NUMA, cnr: agentCNR(0),
			pod: agentPod("1", "", "0"),
		},
		{
			name:  "no KCNR: nothing to report",
			agent: Blind,
			pod:   agentPod("1", "1", "0", nic[0][0]),
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := Allot(tc.agent, topology.Config{}, tc.cnr, tc.held, tc.pod)
			if ok != tc.wantOK {
				t.Fatalf("ok = %v, want %v", ok, tc.wantOK)
			}
			if _, how := Decide(tc.agent, topology.Config{}, tc.cnr, tc.held, tc.pod); how != tc.how {
				t.Errorf("outcome %v, want %v", how, tc.how)
			}
			if diff := cmp.Diff(tc.want, got.Zones); diff != "" {
				t.Errorf("zones (-want +got):\n%s", diff)
			}
			if ok && (got.UID != "u-p" || got.Node != "n1" || got.Job != "ns/g") {
				t.Errorf("reservation names %q on %q of job %q", got.UID, got.Node, got.Job)
			}
		})
	}
}

// TestAllotPerContainer: on a SingleNUMANodeContainerLevel node the agents
// place a pod of several containers container by container.
func TestAllotPerContainer(t *testing.T) {
	nic := builders.NUMANICs
	containerLevel := func(zone0GPUsTaken int64) *v1alpha1.CustomNodeResource {
		cnr := agentCNR(zone0GPUsTaken)
		cnr.Status.TopologyPolicy = v1alpha1.TopologyPolicySingleNUMANodeContainerLevel
		return cnr
	}
	// twoContainers asks 4 GPUs, 2 NICs and 4 cores per container.
	twoContainers := func(hint string) *corev1.Pod {
		p := agentPod("4", "2", hint, nic[0][0], nic[0][1], nic[1][0], nic[1][1])
		p.Spec.Containers = append(p.Spec.Containers, *p.Spec.Containers[0].DeepCopy())
		p.Spec.Containers[1].Name = "aux"
		return p
	}
	cases := []struct {
		name  string
		agent Mode
		cnr   *v1alpha1.CustomNodeResource
		pod   *corev1.Pod
		want  []ledger.ZoneUse
		how   Outcome
	}{
		{
			name: "blind: each container in the first zone with room", how: PerContainer, agent: Blind, cnr: containerLevel(0),
			pod:  twoContainers(""),
			want: []ledger.ZoneUse{use(0, 4, 4000, nic[0][0], nic[0][1]), use(1, 4, 4000, nic[1][0], nic[1][1])},
		},
		{
			name: "numa: a hint naming two zones prefers none", how: PerContainer, agent: NUMA, cnr: containerLevel(0),
			pod:  twoContainers("0,1"),
			want: []ledger.ZoneUse{use(0, 4, 4000, nic[0][0], nic[0][1]), use(1, 4, 4000, nic[1][0], nic[1][1])},
		},
		{
			name: "numa: containers that fit the hinted zone together stay in it", how: PerContainer, agent: NUMA, cnr: containerLevel(0),
			pod: func() *corev1.Pod {
				p := agentPod("2", "1", "1", nic[1][0], nic[1][1])
				p.Spec.Containers = append(p.Spec.Containers, *p.Spec.Containers[0].DeepCopy())
				p.Spec.Containers[1].Name = "aux"
				return p
			}(),
			want: []ledger.ZoneUse{use(1, 4, 8000, nic[1][0], nic[1][1])},
		},
		{
			name: "exact: the annotated NICs, each zone with its containers' GPUs and CPU", how: Followed, agent: Exact, cnr: containerLevel(0),
			pod: func() *corev1.Pod {
				p := agentPod("3", "1", "0,1", nic[0][0], nic[1][0])
				p.Spec.Containers = append(p.Spec.Containers, *p.Spec.Containers[0].DeepCopy())
				p.Spec.Containers[1].Name = "aux"
				p.Spec.Containers[1].Resources.Requests[builders.GPUResource] = resource.MustParse("1")
				p.Annotations[ledger.AnnotationContainers] = `[{"containers":["main"],"numa":0,"nics":["` + nic[0][0] + `"]},{"containers":["aux"],"numa":1,"nics":["` + nic[1][0] + `"]}]`
				return p
			}(),
			want: []ledger.ZoneUse{use(0, 3, 4000, nic[0][0]), use(1, 1, 4000, nic[1][0])},
		},
		{
			name: "spanning node: the whole pod, spread when no zone holds it", how: Spread, agent: Blind, cnr: agentCNR(0),
			pod:  twoContainers(""),
			want: []ledger.ZoneUse{use(0, 4, 8000, nic[0][0], nic[0][1]), use(1, 4, 0, nic[1][0], nic[1][1])},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, how := Decide(tc.agent, topology.Config{}, tc.cnr, nil, tc.pod)
			if how != tc.how {
				t.Fatalf("outcome %v, want %v", how, tc.how)
			}
			if diff := cmp.Diff(tc.want, got.Zones); diff != "" {
				t.Errorf("zones (-want +got):\n%s", diff)
			}
		})
	}
}

func TestOutcomeMisaligned(t *testing.T) {
	for o := Unplaced; o <= Overflow; o++ {
		want := o == Spread || o == Overflow
		if got := o.Misaligned(); got != want {
			t.Errorf("%v.Misaligned() = %v, want %v", o, got, want)
		}
	}
	if got := Outcome(42).String(); got != "Outcome(42)" {
		t.Errorf("unknown outcome prints %q", got)
	}
}

func TestParseNodeAgent(t *testing.T) {
	cases := []struct {
		in      string
		want    Mode
		wantErr bool
	}{
		{in: "exact", want: Exact},
		{in: "numa", want: NUMA},
		{in: "blind", want: Blind},
		{in: "NUMA", wantErr: true},
		{in: "", wantErr: true},
	}
	for _, tc := range cases {
		got, err := ParseMode(tc.in)
		if (err != nil) != tc.wantErr || got != tc.want {
			t.Errorf("ParseMode(%q) = %q, %v; want %q, error %v", tc.in, got, err, tc.want, tc.wantErr)
		}
	}
}
