package ledger_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	corev1 "k8s.io/api/core/v1"

	"github.com/rdmatopo/rdmatopo/core/ledger"
	"github.com/rdmatopo/rdmatopo/core/topology"
	"github.com/rdmatopo/rdmatopo/internal/testing/builders"
)

// splitPod is a pod of n2 with containers "main" (3 GPU, 2 RDMA, 6 CPU)
// and "aux" (1 GPU, 1 RDMA, 2 CPU), annotated on NICs A0, A1 (zone 0) and
// B0 (zone 1), with the given container annotation ("" for none).
func splitPod(containers string) *corev1.Pod {
	w := builders.MakePod("ns", "c").UID("u-c").Node("n2").Created(t0).
		Req(builders.GPUResource, "3").Req(builders.RDMAResource, "2").Req(corev1.ResourceCPU, "6").
		Container("aux", corev1.ResourceList{builders.GPUResource: mustQty("1"), builders.RDMAResource: mustQty("1"), corev1.ResourceCPU: mustQty("2")}).
		Annotation(ledger.AnnotationNICs, nicA0+","+nicA1+","+nicB0).Annotation(ledger.AnnotationNUMA, "0,1")
	if containers != "" {
		w.Annotation(ledger.AnnotationContainers, containers)
	}
	return w.Obj()
}

func TestRebuildContainerSplit(t *testing.T) {
	f := twoNodeFabric()
	split := []ledger.ContainerUse{
		{Names: []string{"main"}, NUMA: 0, NICs: []topology.NICID{nicA0, nicA1}},
		{Names: []string{"aux"}, NUMA: 1, NICs: []topology.NICID{nicB0}},
	}
	even := []ledger.ZoneUse{
		{NUMA: 0, GPU: 2, CPUMilli: 4000, NICs: []topology.NICID{nicA0, nicA1}},
		{NUMA: 1, GPU: 2, CPUMilli: 4000, NICs: []topology.NICID{nicB0}},
	}
	cases := map[string]struct {
		annotation     string
		wantZones      []ledger.ZoneUse
		wantContainers []ledger.ContainerUse
		wantErr        string
	}{
		"each zone holds its containers' GPUs and CPUs": {
			annotation: ledger.FormatContainers(split),
			wantZones: []ledger.ZoneUse{
				{NUMA: 0, GPU: 3, CPUMilli: 6000, NICs: []topology.NICID{nicA0, nicA1}},
				{NUMA: 1, GPU: 1, CPUMilli: 2000, NICs: []topology.NICID{nicB0}},
			},
			wantContainers: split,
		},
		"no annotation: split evenly, as before containers": {
			wantZones: even,
		},
		"a container the pod does not have": {
			annotation: strings.Replace(ledger.FormatContainers(split), `"aux"`, `"sidecar"`, 1),
			wantZones:  even,
			wantErr:    `pod ns/c: annotation rdmatopo.io/containers: malformed annotation value: the pod has no container "sidecar"`,
		},
		"a NIC in the wrong container zone": {
			annotation: `[{"containers":["main"],"numa":0,"nics":["` + nicA0 + `","` + nicB0 + `"]},{"containers":["aux"],"numa":1,"nics":["` + nicA1 + `"]}]`,
			wantZones:  even,
			wantErr:    "is not a NIC of NUMA 0 of the pod",
		},
		"not JSON": {
			annotation: "main=0",
			wantZones:  even,
			wantErr:    "pod ns/c: annotation rdmatopo.io/containers: malformed annotation value",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			l, errs := ledger.Rebuild(topology.Config{}, []*corev1.Pod{splitPod(tc.annotation)}, f)
			r, ok := l.Get("u-c")
			if !ok {
				t.Fatalf("no reservation; errors %v", errs)
			}
			if diff := cmp.Diff(tc.wantZones, r.Zones); diff != "" {
				t.Errorf("zones (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantContainers, r.Containers, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("containers (-want +got):\n%s", diff)
			}
			switch {
			case tc.wantErr == "" && len(errs) > 0:
				t.Errorf("errors %v, want none", errs)
			case tc.wantErr != "" && (len(errs) != 1 || !strings.Contains(errs[0].Error(), tc.wantErr)):
				t.Errorf("errors %v, want one containing %q", errs, tc.wantErr)
			}
			if err := l.CheckInvariants(); err != nil {
				t.Error(err)
			}
		})
	}
}

// TestContainerAnnotationsRoundTrip: what the scheduler writes for a split
// pod is what Rebuild reads back after a restart.
func TestContainerAnnotationsRoundTrip(t *testing.T) {
	f := twoNodeFabric()
	want := ledger.Reservation{UID: "u-c", Namespace: "ns", Name: "c", Node: "n2",
		Zones: []ledger.ZoneUse{
			{NUMA: 0, GPU: 3, CPUMilli: 6000, NICs: []topology.NICID{nicA0, nicA1}},
			{NUMA: 1, GPU: 1, CPUMilli: 2000, NICs: []topology.NICID{nicB0}},
		},
		Containers: []ledger.ContainerUse{
			{Names: []string{"main"}, NUMA: 0, NICs: []topology.NICID{nicA0, nicA1}},
			{Names: []string{"aux"}, NUMA: 1, NICs: []topology.NICID{nicB0}},
		},
	}
	ann := want.Annotations(f)
	pod := splitPod(ann[ledger.AnnotationContainers])
	for k, v := range ann {
		pod.Annotations[k] = v
	}
	l, errs := ledger.Rebuild(topology.Config{}, []*corev1.Pod{pod}, f)
	if len(errs) > 0 {
		t.Fatalf("Rebuild errors: %v", errs)
	}
	got, _ := l.Get("u-c")
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("rebuilt reservation (-want +got):\n%s", diff)
	}
	single := ledger.Reservation{UID: "u-s", Node: "n1", Zones: []ledger.ZoneUse{{NUMA: 0, NICs: []topology.NICID{nicA0}}}}
	if v, ok := single.Annotations(f)[ledger.AnnotationContainers]; ok {
		t.Errorf("a pod taking its zone as a whole is annotated with containers %q", v)
	}
}

func TestParseContainers(t *testing.T) {
	cases := map[string]struct {
		in      string
		want    []ledger.ContainerUse
		wantErr bool
	}{
		"empty":           {in: ""},
		"sorted NICs":     {in: `[{"containers":["a"],"numa":1,"nics":["0000:3B:00.0","0000:1a:00.0"]}]`, want: []ledger.ContainerUse{{Names: []string{"a"}, NUMA: 1, NICs: []topology.NICID{"0000:1a:00.0", "0000:3b:00.0"}}}},
		"no NICs":         {in: `[{"containers":["a","b"],"numa":0}]`, want: []ledger.ContainerUse{{Names: []string{"a", "b"}, NUMA: 0}}},
		"no NUMA":         {in: `[{"containers":["a"]}]`, wantErr: true},
		"negative NUMA":   {in: `[{"containers":["a"],"numa":-1}]`, wantErr: true},
		"no container":    {in: `[{"containers":[],"numa":0}]`, wantErr: true},
		"container twice": {in: `[{"containers":["a"],"numa":0},{"containers":["a"],"numa":1}]`, wantErr: true},
		"NIC twice":       {in: `[{"containers":["a"],"numa":0,"nics":["x"]},{"containers":["b"],"numa":0,"nics":["x"]}]`, wantErr: true},
		"unknown field":   {in: `[{"containers":["a"],"numa":0,"zone":1}]`, wantErr: true},
		"trailing text":   {in: `[] []`, wantErr: true},
		"comma in a NIC":  {in: `[{"containers":["a"],"numa":0,"nics":["x,y"]}]`, wantErr: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := ledger.ParseContainers(tc.in)
			if (err != nil) != tc.wantErr {
				t.Fatalf("err = %v, want error %v", err, tc.wantErr)
			}
			if err != nil && !errors.Is(err, ledger.ErrBadAnnotation) {
				t.Errorf("err = %v, want ErrBadAnnotation", err)
			}
			if diff := cmp.Diff(tc.want, got, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestReserveChecksContainerSplit(t *testing.T) {
	zones := []ledger.ZoneUse{{NUMA: 0, NICs: []topology.NICID{nicA0}}, {NUMA: 1, NICs: []topology.NICID{nicB0}}}
	cases := map[string][]ledger.ContainerUse{
		"a zone the pod does not use":      {{Names: []string{"a"}, NUMA: 2, NICs: []topology.NICID{nicA0}}, {Names: []string{"b"}, NUMA: 1, NICs: []topology.NICID{nicB0}}},
		"a NIC of another zone":            {{Names: []string{"a"}, NUMA: 0, NICs: []topology.NICID{nicB0}}, {Names: []string{"b"}, NUMA: 1, NICs: []topology.NICID{nicA0}}},
		"a NIC of the pod in no container": {{Names: []string{"a"}, NUMA: 0, NICs: []topology.NICID{nicA0}}},
		"a container twice":                {{Names: []string{"a"}, NUMA: 0, NICs: []topology.NICID{nicA0}}, {Names: []string{"a"}, NUMA: 1, NICs: []topology.NICID{nicB0}}},
		"a group without a name":           {{NUMA: 0, NICs: []topology.NICID{nicA0}}, {Names: []string{"b"}, NUMA: 1, NICs: []topology.NICID{nicB0}}},
	}
	for name, cs := range cases {
		t.Run(name, func(t *testing.T) {
			err := ledger.New().Reserve(ledger.Reservation{UID: "u", Node: "n1", Zones: zones, Containers: cs})
			if !errors.Is(err, ledger.ErrInvalidReservation) {
				t.Errorf("Reserve = %v, want ErrInvalidReservation", err)
			}
		})
	}
}
