package rdmatopology

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/kubewharf/katalyst-api/pkg/apis/node/v1alpha1"
	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/record"
	"volcano.sh/volcano/pkg/scheduler/api"
	"volcano.sh/volcano/pkg/scheduler/framework"

	"github.com/rdmatopo/rdmatopo/core/topology"
	"github.com/rdmatopo/rdmatopo/internal/testing/builders"
)

// objectEvent is an Event with the whole reference of its object.
type objectEvent struct {
	APIVersion, Kind, Namespace, Name string
	Type, Reason                      string
	// Has lists substrings of the message the test requires.
	Has []string
}

// refRecorder keeps every Event with its object reference and message.
type refRecorder struct {
	record.FakeRecorder
	events []objectEvent
	msgs   []string
}

func (r *refRecorder) Event(obj runtime.Object, eventtype, reason, message string) {
	ref, _ := obj.(*corev1.ObjectReference)
	if ref == nil {
		ref = &corev1.ObjectReference{}
	}
	r.events = append(r.events, objectEvent{APIVersion: ref.APIVersion, Kind: ref.Kind, Namespace: ref.Namespace, Name: ref.Name, Type: eventtype, Reason: reason})
	r.msgs = append(r.msgs, message)
}

const (
	eventNIC0 = "0000:1a:00.0"
	eventNIC1 = "0000:d1:00.0"
)

// eventKCNR is a clean two-zone KCNR with one NIC per zone.
func eventKCNR(name string) *builders.CNRWrapper {
	return builders.MakeCNR(name).Policy(v1alpha1.TopologyPolicySingleNUMANodeContainerLevel).
		Zone(0, 4, 32000).Zone(1, 4, 32000).NIC(eventNIC0, 0, "leafA").NIC(eventNIC1, 1, "leafB")
}

func eventNode(name string) *corev1.Node {
	return builders.MakeNode(name).Shared().GPU(8).RDMA(2).CPU("64").Obj()
}

func kcnrWarning(node, reason string, has ...string) objectEvent {
	return objectEvent{APIVersion: "node.katalyst.kubewharf.io/v1alpha1", Kind: "CustomNodeResource", Name: node,
		Type: corev1.EventTypeWarning, Reason: reason, Has: has}
}

func TestTopologyEvents(t *testing.T) {
	misspelt := eventKCNR("n1").Policy("SingleNUMANodeContainerLvl")
	dupNIC := eventKCNR("n1").NIC(eventNIC0, 1, "")
	dupBoth := eventKCNR("n1").NIC(eventNIC0, 1, "").NIC(eventNIC1, 0, "")
	// round is one fabric sync: the cluster's KCNRs (Nodes n1, n2 always).
	type round struct {
		cnrs []*v1alpha1.CustomNodeResource
		// same re-reports the previous round's fabric snapshot.
		same bool
		want []objectEvent
	}
	cases := map[string][]round{
		"one event per KCNR and kind, none while they persist": {
			{cnrs: []*v1alpha1.CustomNodeResource{dupBoth.Policy("Bogus").Obj()}, want: []objectEvent{
				kcnrWarning("n1", "DuplicateNIC", "NIC "+eventNIC0+": status.topologyZone[1].children[0].children[1] lists the NIC again",
					"NIC "+eventNIC1+": status.topologyZone[1].children[0].children[0] lists the NIC again"),
				kcnrWarning("n1", "UnknownPolicy", `status.topologyPolicy="Bogus"`),
				{APIVersion: "v1", Kind: "Node", Name: "n2", Type: corev1.EventTypeWarning, Reason: "NoKCNR", Has: []string{"no CustomNodeResource"}},
			}},
			{same: true},
			{cnrs: []*v1alpha1.CustomNodeResource{dupBoth.Policy("Bogus").Obj()}},
		},
		"a changed set of problems is reported again, an unchanged kind is not": {
			{cnrs: []*v1alpha1.CustomNodeResource{dupNIC.Policy("Bogus").Obj(), eventKCNR("n2").Obj()}, want: []objectEvent{
				kcnrWarning("n1", "DuplicateNIC", eventNIC0), kcnrWarning("n1", "UnknownPolicy", "Bogus"),
			}},
			{cnrs: []*v1alpha1.CustomNodeResource{dupBoth.Policy("Bogus").Obj(), eventKCNR("n2").Obj()}, want: []objectEvent{
				kcnrWarning("n1", "DuplicateNIC", eventNIC0, eventNIC1),
			}},
		},
		"a problem that went away and came back is reported again": {
			{cnrs: []*v1alpha1.CustomNodeResource{misspelt.Obj(), eventKCNR("n2").Obj()}, want: []objectEvent{
				kcnrWarning("n1", "UnknownPolicy", "SingleNUMANodeContainerLvl", "read as SingleNUMANodePodLevel"),
			}},
			{cnrs: []*v1alpha1.CustomNodeResource{eventKCNR("n1").Obj(), eventKCNR("n2").Obj()}},
			{cnrs: []*v1alpha1.CustomNodeResource{misspelt.Obj(), eventKCNR("n2").Obj()}, want: []objectEvent{
				kcnrWarning("n1", "UnknownPolicy", "SingleNUMANodeContainerLvl"),
			}},
		},
		"a NIC name the annotation cannot carry": {
			{cnrs: []*v1alpha1.CustomNodeResource{eventKCNR("n1").NIC("mlx5_0,mlx5_1", 0, "leafA").Obj(), eventKCNR("n2").Obj()}, want: []objectEvent{
				kcnrWarning("n1", "BadNICName", `NIC mlx5_0,mlx5_1: status.topologyZone[0].children[0].children[1].name="mlx5_0,mlx5_1"`),
			}},
		},
	}
	for name, rounds := range cases {
		t.Run(name, func(t *testing.T) {
			rec := &refRecorder{}
			var r topologyReporter
			var f *topology.Fabric
			for i, rd := range rounds {
				if !rd.same {
					f = topology.Build(topology.Config{}, []*corev1.Node{eventNode("n1"), eventNode("n2")}, rd.cnrs)
				}
				before := len(rec.events)
				r.report(rec, f)
				got := rec.events[before:]
				for j := range got {
					got[j].Has = nil
					for _, want := range rd.want {
						if want.Reason == got[j].Reason && want.Name == got[j].Name {
							for _, s := range want.Has {
								if !strings.Contains(rec.msgs[before+j], s) {
									t.Errorf("round %d: %s event message %q does not contain %q", i, got[j].Reason, rec.msgs[before+j], s)
								}
							}
						}
					}
				}
				if diff := cmp.Diff(rd.want, got, cmpopts.EquateEmpty(), cmpopts.IgnoreFields(objectEvent{}, "Has")); diff != "" {
					t.Errorf("round %d: events (-want +got):\n%s", i, diff)
				}
			}
		})
	}
}

func TestTopologyEventMessageIsBounded(t *testing.T) {
	long := strings.Repeat("x", 400)
	msg := topologyEventMessage([]string{long, long, long, long})
	if len(msg) > maxTopologyEventMessage+20 || !strings.HasSuffix(msg, "(2 more)") {
		t.Errorf("message of %d bytes ends %q; want at most about %d bytes ending with (2 more)", len(msg), msg[len(msg)-12:], maxTopologyEventMessage)
	}
	if one := topologyEventMessage([]string{strings.Repeat("é", 1000)}); len(one) > maxTopologyEventMessage+3 || !strings.HasSuffix(one, "é...") {
		t.Errorf("one long problem: %d bytes, want it cut on a rune boundary", len(one))
	}
}

// TestSyncNodesReportsTopology runs the runtime's fabric sync: Events go to
// the runtime's recorder and the gauge follows every sync.
func TestSyncNodesReportsTopology(t *testing.T) {
	rec := &refRecorder{}
	rt := NewRuntime(topology.Config{}, WithRecorder(rec))
	ssn := &framework.Session{Nodes: map[string]*api.NodeInfo{}}
	for _, n := range []*corev1.Node{eventNode("n1"), eventNode("n2"), builders.MakeNode("n3").GPU(8).RDMA(2).Obj()} {
		ssn.Nodes[n.Name] = &api.NodeInfo{Name: n.Name, Node: n}
	}
	rt.Fabric.UpsertCNR(eventKCNR("n1").NIC("0000:aa:00.0", 1, "").Obj())
	rt.Fabric.UpsertCNR(eventKCNR("n3").Obj())

	gauge := func(want string) {
		t.Helper()
		const head = "# HELP rdmatopo_topology_unknown_nics RDMA NICs whose S0 leaf is unknown (each counted as a leaf of its own), by reason code of the topology problem.\n" +
			"# TYPE rdmatopo_topology_unknown_nics gauge\n"
		if err := testutil.CollectAndCompare(topologyUnknownNICs, strings.NewReader(head+want), "rdmatopo_topology_unknown_nics"); err != nil {
			t.Error(err)
		}
	}

	rt.syncNodes(ssn)
	gauge(`rdmatopo_topology_unknown_nics{reason="BadProperty"} 0
rdmatopo_topology_unknown_nics{reason="EmptyProperty"} 0
rdmatopo_topology_unknown_nics{reason="NICWithoutLeaf"} 1
rdmatopo_topology_unknown_nics{reason="NoKCNR"} 2
rdmatopo_topology_unknown_nics{reason="NoTopology"} 0
rdmatopo_topology_unknown_nics{reason="RDMANotShared"} 2
`)
	wantReasons := []string{"CustomNodeResource/n1 NICWithoutLeaf", "Node/n2 NoKCNR", "CustomNodeResource/n3 RDMANotShared"}
	var got []string
	for _, e := range rec.events {
		got = append(got, e.Kind+"/"+e.Name+" "+e.Reason)
	}
	if diff := cmp.Diff(wantReasons, got); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}

	// Another session without changes: no new Event.
	rt.syncNodes(ssn)
	if len(rec.events) != len(wantReasons) {
		t.Errorf("a sync without changes emitted %d more events", len(rec.events)-len(wantReasons))
	}

	// n2's KCNR arrives and n1's is fixed: the gauge drops those reasons.
	rt.Fabric.UpsertCNR(eventKCNR("n1").Obj())
	rt.Fabric.UpsertCNR(eventKCNR("n2").Obj())
	rt.syncNodes(ssn)
	gauge(`rdmatopo_topology_unknown_nics{reason="BadProperty"} 0
rdmatopo_topology_unknown_nics{reason="EmptyProperty"} 0
rdmatopo_topology_unknown_nics{reason="NICWithoutLeaf"} 0
rdmatopo_topology_unknown_nics{reason="NoKCNR"} 0
rdmatopo_topology_unknown_nics{reason="NoTopology"} 0
rdmatopo_topology_unknown_nics{reason="RDMANotShared"} 2
`)
	if len(rec.events) != len(wantReasons) {
		t.Errorf("fixing problems emitted %d events", len(rec.events)-len(wantReasons))
	}
}
