package placement

import (
	"slices"
	"testing"
)

// TestDedupe checks both forms keep each name's first place, and that the
// planner's scratch set carries nothing from one call to the next.
func TestDedupe(t *testing.T) {
	cases := []struct {
		name string
		in   []string
		want []string
	}{
		{name: "empty", in: nil, want: []string{}},
		{name: "no repeats", in: []string{"b", "a", "c"}, want: []string{"b", "a", "c"}},
		{name: "repeats keep the first place", in: []string{"n2", "n1", "n2", "n3", "n1"}, want: []string{"n2", "n1", "n3"}},
		{name: "all the same", in: []string{"x", "x", "x"}, want: []string{"x"}},
		// The names of the case before: a set not emptied would drop them.
		{name: "names seen in an earlier call", in: []string{"n1", "n3", "n2"}, want: []string{"n1", "n3", "n2"}},
	}
	p := &planner{}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := dedupe(slices.Clone(tc.in)); !slices.Equal(got, tc.want) {
				t.Errorf("dedupe(%q) = %q, want %q", tc.in, got, tc.want)
			}
			if got := p.dedupe(slices.Clone(tc.in)); !slices.Equal(got, tc.want) {
				t.Errorf("planner.dedupe(%q) = %q, want %q", tc.in, got, tc.want)
			}
			if len(p.seen) != 0 {
				t.Errorf("planner.dedupe left %d names in its scratch set", len(p.seen))
			}
		})
	}
}
