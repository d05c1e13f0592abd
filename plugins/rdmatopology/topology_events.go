package rdmatopology

import (
	"errors"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	nodev1alpha1 "github.com/kubewharf/katalyst-api/pkg/apis/node/v1alpha1"
	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"

	"github.com/rdmatopo/rdmatopo/core/topology"
)

// maxTopologyEventMessage bounds an Event message; the problems beyond it
// are counted, not listed.
const maxTopologyEventMessage = 1024

// topologyReporter turns the problems of a fabric into Warning Events, one
// per node and reason code, on the node's KCNR (on the Node for
// topology.ReasonNoKCNR, which has no KCNR to carry it). An Event is emitted
// again only when the problems of that node and code change; problems that
// went away are forgotten, so they are reported again if they come back.
// Not safe for concurrent use (the Runtime calls it under runtimeMu).
type topologyReporter struct {
	// last is the fabric last reported (nil before the first).
	last *topology.Fabric
	// sent maps "node\x00code" to the message last emitted for it.
	sent map[string]string
}

// topologyProblemGroup is the problems of one node and one reason code.
type topologyProblemGroup struct {
	node string
	code topology.ReasonCode
	msgs []string
}

// report emits the Events of f's problems that were not emitted yet and
// refreshes the gauge rdmatopo_topology_unknown_nics. A fabric already
// reported (the same snapshot) is skipped. recorder may be nil (the
// problems are then only logged).
func (r *topologyReporter) report(recorder record.EventRecorder, f *topology.Fabric) {
	if f == nil || f == r.last {
		return
	}
	r.last = f
	observeUnknownNICs(f.UnknownNICs())

	groups := groupProblems(f.Reasons())
	next := make(map[string]string, len(groups))
	for _, g := range groups {
		key := g.node + "\x00" + string(g.code)
		msg := topologyEventMessage(g.msgs)
		next[key] = msg
		if r.sent[key] == msg {
			continue
		}
		what := "Unusable topology data; the NICs at fault are topology-unknown or not handed out"
		if g.code == topology.ReasonNoS1HyperNode || g.code == topology.ReasonTwoS1HyperNodes {
			what = "No single S1 HyperNode holds the node; it shares the default S1"
		}
		klog.ErrorS(errors.New(msg), what, "node", klog.KRef("", g.node), "reason", g.code)
		if recorder != nil {
			recorder.Event(topologyEventObject(g), v1.EventTypeWarning, string(g.code), msg)
		}
	}
	r.sent = next
}

// groupProblems groups reasons by node and code, in the reasons' order
// (sorted by node, code, NIC and message). Reasons naming no node are only
// logged: there is no object to put them on.
func groupProblems(reasons []topology.Reason) []topologyProblemGroup {
	var out []topologyProblemGroup
	for _, rs := range reasons {
		if rs.Node == "" {
			klog.InfoS("Topology problem on no node", "reason", rs.Code, "message", rs.Message)
			continue
		}
		msg := rs.Message
		if rs.NIC != "" {
			msg = "NIC " + string(rs.NIC) + ": " + msg
		}
		if n := len(out); n > 0 && out[n-1].node == rs.Node && out[n-1].code == rs.Code {
			out[n-1].msgs = append(out[n-1].msgs, msg)
			continue
		}
		out = append(out, topologyProblemGroup{node: rs.Node, code: rs.Code, msgs: []string{msg}})
	}
	for i := range out {
		slices.Sort(out[i].msgs)
		out[i].msgs = slices.Compact(out[i].msgs)
	}
	return out
}

// topologyEventMessage joins the problems of one group, up to
// maxTopologyEventMessage bytes, then "(N more)".
func topologyEventMessage(msgs []string) string {
	var sb strings.Builder
	for i, m := range msgs {
		sep := ""
		if i > 0 {
			sep = "; "
		}
		if sb.Len()+len(sep)+len(m) > maxTopologyEventMessage {
			if i == 0 {
				sb.WriteString(truncateUTF8(m, maxTopologyEventMessage) + "...")
				continue
			}
			sb.WriteString("; (" + strconv.Itoa(len(msgs)-i) + " more)")
			break
		}
		sb.WriteString(sep + m)
	}
	return sb.String()
}

// truncateUTF8 cuts s to at most n bytes, on a rune boundary.
func truncateUTF8(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// topologyEventObject is the object an Event of the group is recorded on:
// the node's CustomNodeResource (cluster-scoped, named like the node), or
// the Node itself when the node has no CustomNodeResource.
func topologyEventObject(g topologyProblemGroup) *v1.ObjectReference {
	if g.code == topology.ReasonNoKCNR {
		return &v1.ObjectReference{APIVersion: "v1", Kind: "Node", Name: g.node}
	}
	return &v1.ObjectReference{
		APIVersion: nodev1alpha1.SchemeGroupVersion.String(),
		Kind:       "CustomNodeResource",
		Name:       g.node,
	}
}
