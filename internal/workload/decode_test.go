package workload

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/require"
)

// groupAnn is a pod annotation block naming PodGroup pg.
const groupAnn = "  annotations: {scheduling.k8s.io/group-name: pg}\n"

// pgDoc is a valid PodGroup "pg".
const pgDoc = "apiVersion: scheduling.volcano.sh/v1beta1\nkind: PodGroup\nmetadata: {name: pg}\nspec: {minMember: 1}\n"

// podDoc is a valid pending pod of PodGroup pg.
const podDoc = "apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\n" + groupAnn +
	"spec: {containers: [{name: c, resources: {limits: {nvidia.com/gpu: 4}}}]}\n"

// nodeDoc is a valid node "n1".
const nodeDoc = "apiVersion: v1\nkind: Node\nmetadata: {name: n1}\nstatus: {allocatable: {cpu: 8, pods: 10}}\n"

// wantErr describes the InputError a bad input must produce.
type wantErr struct {
	Doc   int
	Item  int
	Kind  string
	Name  string
	Field string
	// Msg must appear in the message.
	Msg string
}

// asWant extracts the comparable part of an error.
func asWant(t *testing.T, err error, msg string) wantErr {
	t.Helper()
	var ie *InputError
	require.True(t, errors.As(err, &ie), "want *InputError, got %T: %v", err, err)
	name := ie.Name
	if ie.Namespace != "" {
		name = ie.Namespace + "/" + ie.Name
	}
	got := wantErr{Doc: ie.Doc, Item: ie.Item, Kind: ie.Kind, Name: name, Field: ie.Field}
	if strings.Contains(ie.Msg, msg) {
		got.Msg = msg
	} else {
		got.Msg = ie.Msg
	}
	return got
}

func TestLoadWorkloadErrors(t *testing.T) {
	cases := map[string]struct {
		in   string
		want wantErr
	}{
		"unparsable YAML names the file line": {
			in:   pgDoc + "---\napiVersion: v1\nkind: Pod\nmetadata: {name: p\n",
			want: wantErr{Doc: 2, Msg: "line 8"},
		},
		"contract: upper-case mode on a PodGroup": {
			in:   "apiVersion: scheduling.volcano.sh/v1beta1\nkind: PodGroup\nmetadata: {name: pg, annotations: {rdmatopo.io/mode: HARD}}\n",
			want: wantErr{Doc: 1, Kind: "PodGroup", Name: "default/pg", Field: `metadata.annotations["rdmatopo.io/mode"]`, Msg: `"HARD" is not a mode (want hard or soft)`},
		},
		"contract: misspelt key on a PodGroup": {
			in:   "apiVersion: scheduling.volcano.sh/v1beta1\nkind: PodGroup\nmetadata: {name: pg, annotations: {rdmatopo.io/Mode: hard}}\n",
			want: wantErr{Doc: 1, Kind: "PodGroup", Name: "default/pg", Field: `metadata.annotations["rdmatopo.io/Mode"]`, Msg: "unknown key"},
		},
		"contract: unknown tier on a Volcano Job": {
			in:   "apiVersion: batch.volcano.sh/v1alpha1\nkind: Job\nmetadata: {name: j, annotations: {rdmatopo.io/highest-tier: spine}}\n",
			want: wantErr{Doc: 1, Kind: "Job", Name: "default/j", Field: `metadata.annotations["rdmatopo.io/highest-tier"]`, Msg: `"spine" is not a tier`},
		},
		"contract: bad max-wait on a PyTorchJob": {
			in:   "apiVersion: kubeflow.org/v1\nkind: PyTorchJob\nmetadata: {name: pt, annotations: {rdmatopo.io/mode: hard, rdmatopo.io/max-wait: soon}}\n",
			want: wantErr{Doc: 1, Kind: "PyTorchJob", Name: "default/pt", Field: `metadata.annotations["rdmatopo.io/max-wait"]`, Msg: `"soon" is not a duration`},
		},
		"contract on pods: they disagree": {
			in: pgDoc + "---\napiVersion: v1\nkind: Pod\nmetadata:\n  name: p\n  annotations: {scheduling.k8s.io/group-name: pg, rdmatopo.io/mode: hard}\nspec: {containers: [{name: c}]}\n" +
				"---\napiVersion: v1\nkind: Pod\nmetadata:\n  name: q\n  annotations: {scheduling.k8s.io/group-name: pg, rdmatopo.io/mode: soft}\nspec: {containers: [{name: c}]}\n",
			want: wantErr{Doc: 2, Kind: "Pod", Name: "default/p", Field: `metadata.annotations["rdmatopo.io/mode"]`,
				Msg: `the gang's pods disagree: "hard" on p; "soft" on q (PodGroup default/pg states no contract; it is read from its pods)`},
		},
		"contract on pods: a bad value": {
			in:   pgDoc + "---\napiVersion: v1\nkind: Pod\nmetadata:\n  name: p\n  annotations: {scheduling.k8s.io/group-name: pg, rdmatopo.io/highest-tier: rack}\nspec: {containers: [{name: c}]}\n",
			want: wantErr{Doc: 2, Kind: "Pod", Name: "default/p", Field: `metadata.annotations["rdmatopo.io/highest-tier"]`, Msg: `"rack" is not a tier`},
		},
		"contract on pods: a Volcano Job's tasks disagree": {
			in: "apiVersion: batch.volcano.sh/v1alpha1\nkind: Job\nmetadata: {name: j}\nspec:\n  tasks:\n" +
				"  - {name: a, replicas: 1, template: {metadata: {annotations: {rdmatopo.io/highest-tier: s0}}, spec: {containers: [{name: c}]}}}\n" +
				"  - {name: b, replicas: 1, template: {spec: {containers: [{name: c}]}}}\n",
			want: wantErr{Doc: 1, Kind: "Job", Name: "default/j", Field: `spec.tasks[].template.metadata.annotations["rdmatopo.io/highest-tier"]`,
				Msg: `the gang's pods disagree: "s0" on j-a-0; unset on j-b-0`},
		},
		"segment size that does not divide a Volcano Job's pods": {
			in:   "apiVersion: batch.volcano.sh/v1alpha1\nkind: Job\nmetadata: {name: j, annotations: {rdmatopo.io/segment-size: \"4\", rdmatopo.io/segment-tier: s0}}\nspec:\n  minAvailable: 6\n  tasks:\n  - name: w\n    replicas: 6\n    template:\n      spec: {containers: [{name: c, image: x}]}\n",
			want: wantErr{Doc: 1, Kind: "Job", Name: "default/j", Field: `metadata.annotations["rdmatopo.io/segment-size"]`, Msg: "4 does not divide the gang's 6 pods"},
		},
		"segment tier without a size on a PodGroup": {
			in:   "apiVersion: scheduling.volcano.sh/v1beta1\nkind: PodGroup\nmetadata: {name: pg, annotations: {rdmatopo.io/segment-tier: s0}}\n",
			want: wantErr{Doc: 1, Kind: "PodGroup", Name: "default/pg", Field: `metadata.annotations["rdmatopo.io/segment-tier"]`, Msg: "needs rdmatopo.io/segment-size"},
		},
		"rank: not a number on a Pod": {
			in:   pgDoc + "---\napiVersion: v1\nkind: Pod\nmetadata:\n  name: p\n  annotations: {scheduling.k8s.io/group-name: pg, rdmatopo.io/rank: first}\nspec: {containers: [{name: c}]}\n",
			want: wantErr{Doc: 2, Kind: "Pod", Name: "default/p", Field: `metadata.annotations["rdmatopo.io/rank"]`, Msg: `"first" is not a rank (want a non-negative integer)`},
		},
		"rank: two pods of one gang share one": {
			in: pgDoc + "---\napiVersion: v1\nkind: Pod\nmetadata:\n  name: a\n  annotations: {scheduling.k8s.io/group-name: pg, rdmatopo.io/rank: \"0\"}\nspec: {containers: [{name: c}]}\n" +
				"---\napiVersion: v1\nkind: Pod\nmetadata:\n  name: b\n  annotations: {scheduling.k8s.io/group-name: pg, rdmatopo.io/rank: \"0\"}\nspec: {containers: [{name: c}]}\n",
			want: wantErr{Doc: 3, Kind: "Pod", Name: "default/b", Field: `metadata.annotations["rdmatopo.io/rank"]`, Msg: `rank 0 is also given to pod default/a`},
		},
		"rank: negative in a Volcano Job's template": {
			in:   "apiVersion: batch.volcano.sh/v1alpha1\nkind: Job\nmetadata: {name: j}\nspec:\n  minAvailable: 1\n  tasks:\n  - name: w\n    replicas: 1\n    template:\n      metadata: {annotations: {rdmatopo.io/rank: \"-1\"}}\n      spec: {containers: [{name: c, image: x}]}\n",
			want: wantErr{Doc: 1, Kind: "Job", Name: "default/j", Field: `spec.tasks[].template.metadata.annotations["rdmatopo.io/rank"]`, Msg: `"-1" is not a rank`},
		},
		"unknown kind": {
			in:   "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: d}\n",
			want: wantErr{Doc: 1, Kind: "Deployment", Name: "d", Field: "kind", Msg: `unknown kind "Deployment"`},
		},
		"missing kind": {
			in:   "apiVersion: v1\nmetadata: {name: d}\n",
			want: wantErr{Doc: 1, Name: "d", Field: "kind", Msg: "missing"},
		},
		"known kind, wrong apiVersion": {
			in:   "apiVersion: batch/v1\nkind: Job\nmetadata: {name: j}\n",
			want: wantErr{Doc: 1, Kind: "Job", Name: "j", Field: "apiVersion", Msg: "must be batch.volcano.sh/v1alpha1"},
		},
		"unknown field": {
			in:   "apiVersion: scheduling.volcano.sh/v1beta1\nkind: PodGroup\nmetadata: {name: pg}\nspec: {minMembers: 1}\n",
			want: wantErr{Doc: 1, Kind: "PodGroup", Name: "pg", Field: "spec.minMembers", Msg: "unknown field"},
		},
		"wrong type": {
			in:   "apiVersion: scheduling.volcano.sh/v1beta1\nkind: PodGroup\nmetadata: {name: pg}\nspec: {minMember: four}\n",
			want: wantErr{Doc: 1, Kind: "PodGroup", Name: "pg", Field: "spec.minMember", Msg: "must be an integer"},
		},
		"YAML 1.1 boolean where a string is expected": {
			in:   pgDoc + "---\napiVersion: v1\nkind: Pod\nmetadata:\n  name: p\n  annotations: {scheduling.k8s.io/group-name: pg, note: yes}\nspec: {containers: [{name: c}]}\n",
			want: wantErr{Doc: 2, Kind: "Pod", Name: "p", Field: "metadata.annotations", Msg: "got bool"},
		},
		"bad quantity": {
			in:   pgDoc + "---\napiVersion: v1\nkind: Pod\nmetadata:\n  name: p\n" + groupAnn + "spec: {containers: [{name: c, resources: {limits: {nvidia.com/gpu: four}}}]}\n",
			want: wantErr{Doc: 2, Kind: "Pod", Name: "p", Field: `spec.containers[0].resources.limits["nvidia.com/gpu"]`, Msg: "not a valid quantity"},
		},
		"duplicate key": {
			in:   "apiVersion: scheduling.volcano.sh/v1beta1\nkind: PodGroup\nmetadata: {name: pg, name: pg2}\n",
			want: wantErr{Doc: 1, Msg: `key "name" already set`},
		},
		"pod without group": {
			in:   "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: {containers: [{name: c}]}\n",
			want: wantErr{Doc: 1, Kind: "Pod", Name: "default/p", Field: groupAnnotationField, Msg: "required"},
		},
		"pod naming an undefined PodGroup": {
			in:   podDoc,
			want: wantErr{Doc: 1, Kind: "Pod", Name: "default/p", Field: groupAnnotationField, Msg: "PodGroup default/pg is not defined"},
		},
		"running pod that finished": {
			in:   pgDoc + "---\napiVersion: v1\nkind: Pod\nmetadata:\n  name: p\n" + groupAnn + "spec: {nodeName: n1, containers: [{name: c}]}\nstatus: {phase: Succeeded}\n",
			want: wantErr{Doc: 2, Kind: "Pod", Name: "default/p", Field: "status.phase", Msg: "running pod (phase Running)"},
		},
		"running pod with an unreadable numa annotation": {
			in: pgDoc + "---\napiVersion: v1\nkind: Pod\nmetadata:\n  name: p\n" +
				"  annotations: {scheduling.k8s.io/group-name: pg, rdmatopo.io/nics: mlx5_0, rdmatopo.io/numa: one}\n" +
				"spec: {nodeName: n1, containers: [{name: c}]}\n",
			want: wantErr{Doc: 2, Kind: "Pod", Name: "default/p", Field: `metadata.annotations["rdmatopo.io/numa"]`, Msg: `(value "one")`},
		},
		"running pod with NICs but no numa annotation": {
			in: pgDoc + "---\napiVersion: v1\nkind: Pod\nmetadata:\n  name: p\n" +
				"  annotations: {scheduling.k8s.io/group-name: pg, rdmatopo.io/nics: mlx5_0}\n" +
				"spec: {nodeName: n1, containers: [{name: c}]}\n",
			want: wantErr{Doc: 2, Kind: "Pod", Name: "default/p", Field: `metadata.annotations["rdmatopo.io/numa"]`, Msg: "must be readable"},
		},
		"job template with a node name": {
			in: "apiVersion: batch.volcano.sh/v1alpha1\nkind: Job\nmetadata: {name: j}\n" +
				"spec: {tasks: [{name: w, replicas: 1, template: {spec: {nodeName: n1, containers: [{name: c}]}}}]}\n",
			want: wantErr{Doc: 1, Kind: "Job", Name: "default/j", Field: "spec.tasks[].template.spec.nodeName", Msg: "created pending"},
		},
		"pod for another scheduler": {
			in:   pgDoc + "---\napiVersion: v1\nkind: Pod\nmetadata:\n  name: p\n" + groupAnn + "spec: {schedulerName: default-scheduler, containers: [{name: c}]}\n",
			want: wantErr{Doc: 2, Kind: "Pod", Name: "default/p", Field: "spec.schedulerName", Msg: "only pods for"},
		},
		"pod without containers": {
			in:   pgDoc + "---\napiVersion: v1\nkind: Pod\nmetadata:\n  name: p\n" + groupAnn + "spec: {}\n",
			want: wantErr{Doc: 2, Kind: "Pod", Name: "default/p", Field: "spec.containers", Msg: "required"},
		},
		"PodGroup naming an undefined queue": {
			in: "apiVersion: scheduling.volcano.sh/v1beta1\nkind: Queue\nmetadata: {name: research}\n---\n" +
				"apiVersion: scheduling.volcano.sh/v1beta1\nkind: PodGroup\nmetadata: {name: pg}\nspec: {minMember: 1, queue: default}\n",
			want: wantErr{Doc: 2, Kind: "PodGroup", Name: "default/pg", Field: "spec.queue", Msg: `queue "default" is not defined`},
		},
		"duplicate PodGroup": {
			in:   pgDoc + "---\n" + pgDoc,
			want: wantErr{Doc: 2, Kind: "PodGroup", Name: "default/pg", Field: "metadata.name", Msg: "defined twice"},
		},
		"negative minMember": {
			in:   "apiVersion: scheduling.volcano.sh/v1beta1\nkind: PodGroup\nmetadata: {name: pg}\nspec: {minMember: -1}\n",
			want: wantErr{Doc: 1, Kind: "PodGroup", Name: "default/pg", Field: "spec.minMember", Msg: "must be >= 0"},
		},
		"undefined priority class": {
			in:   pgDoc + "---\napiVersion: v1\nkind: Pod\nmetadata:\n  name: p\n" + groupAnn + "spec: {priorityClassName: urgent, containers: [{name: c}]}\n",
			want: wantErr{Doc: 2, Kind: "Pod", Name: "default/p", Field: "spec.priorityClassName", Msg: `no PriorityClass named "urgent"`},
		},
		"node in a workload file": {
			in:   nodeDoc,
			want: wantErr{Doc: 1, Kind: "Node", Name: "n1", Field: "kind", Msg: "unknown kind"},
		},
		"error inside a List names the item": {
			in:   "apiVersion: v1\nkind: List\nitems:\n- " + strings.ReplaceAll(strings.TrimSpace(pgDoc), "\n", "\n  ") + "\n- apiVersion: v1\n  kind: Secret\n  metadata: {name: s}\n",
			want: wantErr{Doc: 1, Item: 2, Kind: "Secret", Name: "s", Field: "kind", Msg: "unknown kind"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := LoadWorkload("w.yaml", []byte(tc.in))
			require.Error(t, err)
			require.True(t, strings.HasPrefix(err.Error(), "w.yaml: "), "error must name the file: %v", err)
			require.NotContains(t, err.Error(), "\n", "one line")
			if diff := cmp.Diff(tc.want, asWant(t, err, tc.want.Msg)); diff != "" {
				t.Errorf("error mismatch (-want +got):\n%s\nfull error: %v", diff, err)
			}
		})
	}
}

func TestLoadClusterErrors(t *testing.T) {
	boundPod := func(node string) string {
		return "apiVersion: v1\nkind: Pod\nmetadata: {name: p, namespace: ns}\nspec: {nodeName: " + node + ", containers: [{name: c}]}\n"
	}
	// annotatedPod is ns/p bound to n1 with the given annotations (YAML flow map entries).
	annotatedPod := func(annotations string) string {
		return "apiVersion: v1\nkind: Pod\nmetadata: {name: p, namespace: ns, annotations: {" + annotations + "}}\n" +
			"spec: {nodeName: n1, containers: [{name: c}]}\n"
	}
	cases := map[string]struct {
		in   string
		want wantErr
	}{
		"pending pod": {
			in:   nodeDoc + "---\napiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: {containers: [{name: c}]}\n",
			want: wantErr{Doc: 2, Kind: "Pod", Name: "default/p", Field: "spec.nodeName", Msg: "required"},
		},
		"pod on an unknown node": {
			in:   nodeDoc + "---\n" + boundPod("n2"),
			want: wantErr{Doc: 2, Kind: "Pod", Name: "ns/p", Field: "spec.nodeName", Msg: `node "n2" is not defined`},
		},
		"node without resources": {
			in:   "apiVersion: v1\nkind: Node\nmetadata: {name: n1}\n",
			want: wantErr{Doc: 1, Kind: "Node", Name: "n1", Field: "status.allocatable", Msg: "required"},
		},
		"HyperNode with a bad pattern": {
			in:   "apiVersion: topology.volcano.sh/v1alpha1\nkind: HyperNode\nmetadata: {name: s1}\nspec: {tier: 2, members: [{type: Node, selector: {regexMatch: {pattern: '('}}}]}\n",
			want: wantErr{Doc: 1, Kind: "HyperNode", Name: "s1", Field: "spec.members[0]", Msg: `selector.regexMatch.pattern "("`},
		},
		"HyperNode without a tier": {
			in:   "apiVersion: topology.volcano.sh/v1alpha1\nkind: HyperNode\nmetadata: {name: s1}\nspec: {members: [{type: Node, selector: {exactMatch: {name: n1}}}]}\n",
			want: wantErr{Doc: 1, Kind: "HyperNode", Name: "s1", Field: "spec.tier", Msg: "must be >= 1, got 0"},
		},
		"HyperNode member of two selectors": {
			in:   "apiVersion: topology.volcano.sh/v1alpha1\nkind: HyperNode\nmetadata: {name: s1}\nspec: {tier: 1, members: [{type: Node, selector: {exactMatch: {name: n1}, regexMatch: {pattern: '^n'}}}]}\n",
			want: wantErr{Doc: 1, Kind: "HyperNode", Name: "s1", Field: "spec.members[0]", Msg: "exactly one of exactMatch, regexMatch and labelMatch, got 2"},
		},
		"duplicate node": {
			in:   nodeDoc + "---\n" + nodeDoc,
			want: wantErr{Doc: 2, Kind: "Node", Name: "n1", Field: "metadata.name", Msg: "already defined in document 1"},
		},
		"node overcommitted by its pods": {
			in: nodeDoc + "---\n" + boundPod("n1") + "---\n" +
				"apiVersion: v1\nkind: Pod\nmetadata: {name: q, namespace: ns}\nspec: {nodeName: n1, containers: [{name: c, resources: {requests: {cpu: 9}}}]}\n",
			want: wantErr{Doc: 3, Kind: "Pod", Name: "ns/q", Field: "spec.nodeName", Msg: "requests 9 cpu, 8 of the node"},
		},
		"KCNR unknown field": {
			in:   "apiVersion: node.katalyst.kubewharf.io/v1alpha1\nkind: CustomNodeResource\nmetadata: {name: n1}\nstatus: {topologyPolcy: None}\n",
			want: wantErr{Doc: 1, Kind: "CustomNodeResource", Name: "n1", Field: "status.topologyPolcy", Msg: "unknown field"},
		},
		"bound pod with missing numa": {
			in:   nodeDoc + "---\n" + annotatedPod(`rdmatopo.io/nics: mlx5_0`),
			want: wantErr{Doc: 2, Kind: "Pod", Name: "ns/p", Field: `metadata.annotations["rdmatopo.io/numa"]`, Msg: "missing while rdmatopo.io/nics is set"},
		},
		"bound pod with non-numeric numa": {
			in:   nodeDoc + "---\n" + annotatedPod(`rdmatopo.io/nics: "1a:00.0", rdmatopo.io/numa: zero`),
			want: wantErr{Doc: 2, Kind: "Pod", Name: "ns/p", Field: `metadata.annotations["rdmatopo.io/numa"]`, Msg: `"zero" is not a NUMA id`},
		},
		"bound pod naming a NIC twice": {
			in:   nodeDoc + "---\n" + annotatedPod(`rdmatopo.io/nics: "0000:1a:00.0,0000:1A:00.0", rdmatopo.io/numa: "0"`),
			want: wantErr{Doc: 2, Kind: "Pod", Name: "ns/p", Field: `metadata.annotations["rdmatopo.io/nics"]`, Msg: "NIC 0000:1a:00.0 is listed twice"},
		},
		"bound pod with a stray space in its NICs": {
			in:   nodeDoc + "---\n" + annotatedPod(`rdmatopo.io/nics: "mlx5_0, mlx5_1", rdmatopo.io/numa: "0"`),
			want: wantErr{Doc: 2, Kind: "Pod", Name: "ns/p", Field: `metadata.annotations["rdmatopo.io/nics"]`, Msg: "holds whitespace"},
		},
		"bound pod with an unreadable s0": {
			in:   nodeDoc + "---\n" + annotatedPod(`rdmatopo.io/nics: mlx5_0, rdmatopo.io/numa: "0", rdmatopo.io/s0: "a,,b"`),
			want: wantErr{Doc: 2, Kind: "Pod", Name: "ns/p", Field: `metadata.annotations["rdmatopo.io/s0"]`, Msg: "empty item"},
		},
		"PodGroup in a cluster file": {
			in:   pgDoc,
			want: wantErr{Doc: 1, Kind: "PodGroup", Name: "pg", Field: "kind", Msg: "a cluster file holds"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := LoadCluster("c.yaml", []byte(tc.in))
			require.Error(t, err)
			if diff := cmp.Diff(tc.want, asWant(t, err, tc.want.Msg)); diff != "" {
				t.Errorf("error mismatch (-want +got):\n%s\nfull error: %v", diff, err)
			}
		})
	}
}

func TestInputErrorString(t *testing.T) {
	cases := map[string]struct {
		err  InputError
		want string
	}{
		"object and field": {
			err:  InputError{File: "w.yaml", Doc: 3, Kind: "PodGroup", Namespace: "ns", Name: "pg", Field: "spec.minMember", Msg: "must be >= 0"},
			want: "w.yaml: document 3 (PodGroup ns/pg): spec.minMember: must be >= 0",
		},
		"list item": {
			err:  InputError{File: "c.yaml", Doc: 1, Item: 2, Kind: "Node", Name: "n1", Field: "kind", Msg: "bad"},
			want: "c.yaml: document 1 item 2 (Node n1): kind: bad",
		},
		"document only": {
			err:  InputError{File: "w.yaml", Doc: 2, Msg: "invalid YAML: line 7: oops"},
			want: "w.yaml: document 2: invalid YAML: line 7: oops",
		},
		"multi-line message is folded": {
			err:  InputError{File: "w.yaml", Msg: "a\nb"},
			want: "w.yaml: a b",
		},
		"line break in a kind or name from bad input is quoted": {
			err:  InputError{File: "w.yaml", Doc: 1, Kind: "0000\n0", Namespace: "a b", Name: "n\t1", Field: "kind", Msg: "unknown kind"},
			want: `w.yaml: document 1 ("0000\n0" "a b"/"n\t1"): kind: unknown kind`,
		},
		"odd file name and field are quoted": {
			err:  InputError{File: "my\nfile.yaml", Field: "metadata.labels[a\nb]", Msg: "bad"},
			want: `"my\nfile.yaml": "metadata.labels[a\nb]": bad`,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, tc.err.Error()); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestLoadAcceptsListsAndDefaults(t *testing.T) {
	in := "# a comment-only document first\n---\n" +
		"apiVersion: v1\nkind: List\nitems:\n- " + strings.ReplaceAll(strings.TrimSpace(pgDoc), "\n", "\n  ") +
		"\n- " + strings.ReplaceAll(strings.TrimSpace(podDoc), "\n", "\n  ") + "\n---\n"
	set, err := LoadWorkload("w.yaml", []byte(in))
	require.NoError(t, err)
	require.Len(t, set.PodGroups, 1)
	require.Len(t, set.Pods, 1)
	require.Len(t, set.Queues, 1, "the default queue is added")

	pg, p := set.PodGroups[0], set.Pods[0]
	require.Equal(t, DefaultNamespace, pg.Namespace)
	require.Equal(t, DefaultQueue, pg.Spec.Queue)
	require.Equal(t, "Pending", string(pg.Status.Phase))
	require.Equal(t, StableUID(KindPod, "default", "p"), p.UID)
	require.Equal(t, DefaultSchedulerName, p.Spec.SchedulerName)
	gpu := p.Spec.Containers[0].Resources.Requests["nvidia.com/gpu"]
	require.Equal(t, "4", gpu.String(), "requests default to limits")
	require.True(t, pg.CreationTimestamp.Before(&p.CreationTimestamp), "creation times follow input order")
}
