package placement

import (
	"errors"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// rs builds a RankSource from a name and key=value pairs set as labels
// (keys prefixed with "@" are set as annotations).
func rs(name string, kv ...string) RankSource {
	p := RankSource{Name: name, Labels: map[string]string{}, Annotations: map[string]string{}}
	for i := 0; i+1 < len(kv); i += 2 {
		if k := kv[i]; k[0] == '@' {
			p.Annotations[k[1:]] = kv[i+1]
		} else {
			p.Labels[k] = kv[i+1]
		}
	}
	return p
}

// pytorch is a PyTorchJob pod as training-operator v1.8 labels it.
func pytorch(typ string, i int) RankSource {
	return rs(fmt.Sprintf("pt-%s-%d", typ, i), LabelReplicaType, typ, LabelReplicaIndex, fmt.Sprint(i))
}

// vcPod is a Volcano Job pod as the v1.10 job controller writes it.
func vcPod(task string, i int) RankSource {
	return rs(fmt.Sprintf("vj-%s-%d", task, i), KeyTaskSpec, task, KeyTaskIndex, fmt.Sprint(i),
		"@"+KeyTaskSpec, task, "@"+KeyTaskIndex, fmt.Sprint(i))
}

func TestRanks(t *testing.T) {
	specOrder := func(tasks ...string) func(string) (int, bool) {
		return func(task string) (int, bool) {
			for i, t := range tasks {
				if t == task {
					return i, true
				}
			}
			return 0, false
		}
	}
	cases := map[string]struct {
		pods      []RankSource
		taskOrder func(string) (int, bool)
		want      []int
	}{
		"name ordinals, numerically": {
			pods: []RankSource{rs("g-10"), rs("g-2"), rs("g-0"), rs("g-1")},
			want: []int{3, 2, 0, 1},
		},
		"no ordinal: after the ordinals, by name": {
			pods: []RankSource{rs("b"), rs("g-1"), rs("a"), rs("g-0"), rs("g-x")},
			want: []int{3, 1, 2, 0, 4},
		},
		"equal ordinals keep name order": {
			pods: []RankSource{rs("b-0"), rs("a-0"), rs("a-1")},
			want: []int{1, 0, 2},
		},
		"pytorch master is rank 0, workers by index": {
			pods: []RankSource{pytorch("worker", 1), pytorch("worker", 0), pytorch("master", 0), pytorch("worker", 10), pytorch("worker", 2)},
			want: []int{2, 1, 0, 4, 3},
		},
		"pytorch workers without a master": {
			pods: []RankSource{pytorch("worker", 2), pytorch("worker", 0), pytorch("worker", 1)},
			want: []int{2, 0, 1},
		},
		"volcano tasks in spec order, then index": {
			pods:      []RankSource{vcPod("worker", 1), vcPod("ps", 0), vcPod("worker", 0), vcPod("ps", 1)},
			taskOrder: specOrder("ps", "worker"),
			want:      []int{3, 0, 2, 1},
		},
		"volcano spec order beats task names": {
			pods:      []RankSource{vcPod("a", 0), vcPod("b", 0), vcPod("b", 1)},
			taskOrder: specOrder("b", "a"),
			want:      []int{2, 0, 1},
		},
		"volcano tasks the job does not list come last, by name": {
			pods:      []RankSource{vcPod("z", 0), vcPod("y", 0), vcPod("b", 0)},
			taskOrder: specOrder("b"),
			want:      []int{2, 1, 0},
		},
		"volcano job not known: tasks by name": {
			pods: []RankSource{vcPod("worker", 0), vcPod("master", 0), vcPod("worker", 1)},
			want: []int{1, 0, 2},
		},
		"volcano annotations only (labels removed)": {
			pods: []RankSource{rs("x", "@"+KeyTaskSpec, "t", "@"+KeyTaskIndex, "1"), rs("y", "@"+KeyTaskSpec, "t", "@"+KeyTaskIndex, "0")},
			want: []int{1, 0},
		},
		"jobset job index then completion index": {
			pods: []RankSource{
				rs("js-w-1-0", KeyJobSetJobIndex, "1", "@"+KeyCompletionIndex, "0"),
				rs("js-w-0-1", KeyJobSetJobIndex, "0", "@"+KeyCompletionIndex, "1"),
				rs("js-w-0-0", KeyJobSetJobIndex, "0", "@"+KeyCompletionIndex, "0"),
			},
			want: []int{2, 1, 0},
		},
		"jobset global index across replicated jobs": {
			pods: []RankSource{
				rs("js-worker-0-0", KeyJobSetJobIndex, "0", KeyJobSetGlobalIndex, "1", "@"+KeyCompletionIndex, "0"),
				rs("js-driver-0-0", KeyJobSetJobIndex, "0", KeyJobSetGlobalIndex, "0", "@"+KeyCompletionIndex, "0"),
			},
			want: []int{1, 0},
		},
		"indexed job completion index": {
			pods: []RankSource{rs("j-abcde", KeyCompletionIndex, "1"), rs("j-fghij", KeyCompletionIndex, "0")},
			want: []int{1, 0},
		},
		"rank annotation overrides the controller": {
			pods: []RankSource{
				rs("pt-master-0", LabelReplicaType, "master", LabelReplicaIndex, "0", "@"+AnnotationRank, "2"),
				rs("pt-worker-0", LabelReplicaType, "worker", LabelReplicaIndex, "0", "@"+AnnotationRank, "0"),
				rs("pt-worker-1", LabelReplicaType, "worker", LabelReplicaIndex, "1", "@"+AnnotationRank, "1"),
			},
			want: []int{2, 0, 1},
		},
		"annotated pods come before the others": {
			pods: []RankSource{rs("g-0"), rs("g-1", "@"+AnnotationRank, "7")},
			want: []int{1, 0},
		},
		"bad controller index: the name decides": {
			pods: []RankSource{rs("pt-worker-1", LabelReplicaType, "worker", LabelReplicaIndex, "x"), pytorch("worker", 0)},
			want: []int{1, 0},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := Ranks(tc.pods, tc.taskOrder)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("ranks (-want,+got):\n%s", diff)
			}
		})
	}
}

// TestRanksDuplicateAnnotation: two pods of a gang annotated with one rank
// are an invalid contract naming both.
func TestRanksDuplicateAnnotation(t *testing.T) {
	_, err := Ranks([]RankSource{rs("ns/g-1", "@"+AnnotationRank, "0"), rs("ns/g-2"), rs("ns/g-0", "@"+AnnotationRank, "0")}, nil)
	var re *RankError
	if !errors.As(err, &re) || !errors.Is(err, ErrInvalidContract) {
		t.Fatalf("err = %v, want a RankError wrapping ErrInvalidContract", err)
	}
	want := `pod ns/g-0: metadata.annotations["rdmatopo.io/rank"]: rank 0 is also given to pod ns/g-1 (each pod of a gang needs its own rank)`
	if err.Error() != want {
		t.Errorf("err = %q, want %q", err, want)
	}
}

func TestRanksInvalidAnnotation(t *testing.T) {
	for _, v := range []string{"", "-1", "01", "1.0", "one", "+1", " 1"} {
		t.Run(v, func(t *testing.T) {
			_, err := Ranks([]RankSource{rs("ns/g-0"), rs("ns/g-1", "@"+AnnotationRank, v)}, nil)
			var re *RankError
			if !errors.As(err, &re) || !errors.Is(err, ErrInvalidContract) {
				t.Fatalf("err = %v, want a RankError wrapping ErrInvalidContract", err)
			}
			want := fmt.Sprintf(`pod ns/g-1: metadata.annotations["rdmatopo.io/rank"]: %q is not a rank (want a non-negative integer)`, v)
			if err.Error() != want {
				t.Errorf("err = %q, want %q", err, want)
			}
		})
	}
}

func TestNameOrdinal(t *testing.T) {
	cases := map[string]struct {
		n  int
		ok bool
	}{
		"g-0": {0, true}, "job-worker-12": {12, true}, "g": {0, false}, "g-": {0, false},
		"g-+1": {0, false}, "g-1a": {0, false}, "ns/g-3": {3, true}, "g-007": {7, true},
	}
	for name, tc := range cases {
		n, ok := nameOrdinal(name)
		if n != tc.n || ok != tc.ok {
			t.Errorf("nameOrdinal(%q) = %d, %v; want %d, %v", name, n, ok, tc.n, tc.ok)
		}
	}
}
