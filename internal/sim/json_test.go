package sim

import (
	"encoding/json"
	"testing"
)

// TestJSONReport: every key of the documented shape is present, lists and
// objects are never null, an evicted pod reads evicted, and segments
// appear only for a gang that has them.
func TestJSONReport(t *testing.T) {
	for _, tc := range []struct {
		name string
		rep  *Report
		want string
	}{
		{name: "empty", rep: &Report{}, want: `{"pods":[],"jobs":[],"evictions":[]}`},
		{
			name: "pending pod, waiting job, eviction",
			rep: &Report{
				Pods:      []PodPlacement{{Namespace: "ns", Name: "p-0", Job: "ns/p", NUMA: -1, Rank: 0}},
				Jobs:      []JobPlacement{{Namespace: "ns", Name: "p", MinMember: 2, Reason: "no room", WaitedSeconds: 3}},
				Evictions: []Eviction{{Namespace: "ns", Name: "low-0", Job: "ns/low", Preemptor: "ns/p"}},
			},
			want: `{"pods":[{"namespace":"ns","name":"p-0","job":"ns/p","node":"","numa":-1,"nics":[],"s0":[],"s1":[],"annotations":{},"evicted":false,"rank":0}],` +
				`"jobs":[{"namespace":"ns","name":"p","minMember":2,"placed":false,"boundPods":0,"tier":"","s0":[],"s1":[],"reason":"no room","waitedSeconds":3,"ringCrossings":0}],` +
				`"evictions":[{"namespace":"ns","name":"low-0","job":"ns/low","preemptor":"ns/p"}]}`,
		},
		{
			name: "placed with segments, evicted pod",
			rep: &Report{
				Pods: []PodPlacement{{Namespace: "ns", Name: "q-0", Job: "ns/q", NUMA: 0, Evicted: "ns/r", Rank: 1}},
				Jobs: []JobPlacement{{Namespace: "ns", Name: "q", MinMember: 1, Placed: true, BoundPods: 1, Tier: "s0",
					S0: []string{"a"}, Segments: []SegmentPlacement{{Ranks: []int{0, 1}, S0: []string{"a"}}}}},
			},
			want: `{"pods":[{"namespace":"ns","name":"q-0","job":"ns/q","node":"","numa":0,"nics":[],"s0":[],"s1":[],"annotations":{},"evicted":true,"rank":1}],` +
				`"jobs":[{"namespace":"ns","name":"q","minMember":1,"placed":true,"boundPods":1,"tier":"s0","s0":["a"],"s1":[],"reason":"","waitedSeconds":0,"ringCrossings":0,"segments":[{"ranks":[0,1],"s0":["a"]}]}],` +
				`"evictions":[]}`,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := json.Marshal(JSONReport(tc.rep))
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tc.want {
				t.Errorf("JSONReport =\n%s\nwant\n%s", got, tc.want)
			}
		})
	}
}
