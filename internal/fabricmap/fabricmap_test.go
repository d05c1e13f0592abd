package fabricmap

import (
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/rdmatopo/rdmatopo/core/topology"
	"github.com/rdmatopo/rdmatopo/internal/testing/builders"
)

// TestColorsStable: a job's colour depends on its identity only, not on
// the jobs listed before it.
func TestColorsStable(t *testing.T) {
	a := Job{Key: "ns/a", ID: "uid-a"}
	b := Job{Key: "ns/b", ID: "uid-b"}
	before := Colors(Model{Jobs: []Job{b}})
	after := Colors(Model{Jobs: []Job{a, b}})
	if before["ns/b"] != after["ns/b"] {
		t.Errorf("ns/b changed colour from %s to %s when ns/a was added", before["ns/b"], after["ns/b"])
	}
	if after["ns/a"] == after["ns/b"] {
		t.Errorf("ns/a and ns/b share colour %s", after["ns/a"])
	}
	// A job recreated under the same name is another job.
	if ColorOf("uid-a") == ColorOf("uid-a2") {
		t.Errorf("two identities share a colour")
	}
	if c := (Job{Key: "ns/a"}).Color(); c != ColorOf("ns/a") {
		t.Errorf("a job without ID: colour %s, want that of its key %s", c, ColorOf("ns/a"))
	}
	if !regexp.MustCompile(`^#[0-9a-f]{6}$`).MatchString(ColorOf("x")) {
		t.Errorf("ColorOf = %q, want #rrggbb", ColorOf("x"))
	}
}

func TestWrap(t *testing.T) {
	cases := []struct {
		in    string
		width int
		want  []string
	}{
		{"short", 10, []string{"short"}},
		{"one two three four", 9, []string{"one two", "three", "four"}},
		{"abcdefghijkl", 5, []string{"abcde", "fghij", "kl"}},
	}
	for _, tc := range cases {
		if diff := cmp.Diff(tc.want, wrap(tc.in, tc.width)); diff != "" {
			t.Errorf("wrap(%q, %d) (-want,+got):\n%s", tc.in, tc.width, diff)
		}
	}
}

// TestRenderWaiting: a waiting gang is drawn on the leaves it would go to,
// and its long legend line is wrapped with the whole label as tooltip.
func TestRenderWaiting(t *testing.T) {
	nodes, cnrs := builders.TwoLeavesFourNodes()
	f := topology.Build(topology.Config{}.WithDefaults(), nodes, cnrs)
	reason := strings.Repeat("no S0 can hold 5 pods of 4 GPU + 2 RDMA; the largest holds 4 ", 4)
	m := Model{Jobs: []Job{{Key: "ns/big", ID: "uid-big", Label: "ns/big: waiting - " + reason, WaitingAt: []topology.S0ID{"leafA"}}},
		NICs: map[string]NICUse{}}
	svg := string(Render(f, m))
	if n := strings.Count(svg, `<g data-waiting="ns/big">`); n != 1 {
		t.Errorf("the waiting gang is drawn on %d leaves, want 1", n)
	}
	if !strings.Contains(svg, "<title>ns/big: waiting - "+strings.TrimSpace(reason)) {
		t.Errorf("the full reason is not a tooltip:\n%s", svg)
	}
	for _, line := range regexp.MustCompile(`<text [^>]*>([^<]*)</text>`).FindAllStringSubmatch(svg, -1) {
		if len(line[1]) > legendChars {
			t.Errorf("text line of %d characters: %q", len(line[1]), line[1])
		}
	}
	if !strings.Contains(svg, ColorOf("uid-big")) {
		t.Errorf("the job's colour %s is not on the map", ColorOf("uid-big"))
	}
}
