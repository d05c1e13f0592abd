package plot

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"io"
	"math"
	"strings"
	"testing"
)

// report is the JSON of a bench report with made-up figures, as
// `rdmatopo-dev bench -o json` writes it.
func report(nodes int, seconds float64) string {
	return fmt.Sprintf(`{"nodes": %d, "gangs": %d, "seed": 1, "runs": {
  "rdmatopo": {"placed": 10, "pods": 40, "meanS0": 1.25, "atOptimumFrac": 0.9, "seconds": %g},
  "baseline": {"placed": 11, "pods": 44, "meanS0": 2.5, "atOptimumFrac": 0.4, "seconds": %g}}}
`, nodes, nodes/5, seconds, 2*seconds)
}

func TestWriteSVG(t *testing.T) {
	reps, err := ReadReports(strings.NewReader(report(4000, 8) + report(1000, 2)))
	if err != nil {
		t.Fatal(err)
	}
	var svg bytes.Buffer
	if err := WriteSVG(&svg, reps); err != nil {
		t.Fatal(err)
	}
	// Well-formed XML with one line per conf per panel.
	var doc struct {
		XMLName   xml.Name `xml:"svg"`
		Polylines []struct {
			Points string `xml:"points,attr"`
			Stroke string `xml:"stroke,attr"`
		} `xml:"polyline"`
	}
	if err := xml.Unmarshal(svg.Bytes(), &doc); err != nil {
		t.Fatalf("SVG is not well-formed: %v", err)
	}
	if len(doc.Polylines) != 4 {
		t.Fatalf("SVG has %d lines, want 4 (2 panels x 2 confs)", len(doc.Polylines))
	}
	for _, pl := range doc.Polylines {
		if n := len(strings.Fields(pl.Points)); n != 2 {
			t.Errorf("line %s has %d points, want 2", pl.Stroke, n)
		}
	}
	for _, label := range []string{">1000<", ">4000<", ">rdmatopo<", ">baseline<"} {
		if !strings.Contains(svg.String(), label) {
			t.Errorf("SVG lacks %s", label)
		}
	}
}

func TestReadReportsErrors(t *testing.T) {
	tests := []struct {
		name, in, wantErr string
	}{
		{name: "not JSON", in: "nope", wantErr: "bench JSON"},
		{name: "missing run", in: `{"nodes": 5, "runs": {"rdmatopo": {}}}`, wantErr: "runs.baseline is missing"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ReadReports(strings.NewReader(tc.in))
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("ReadReports() error = %v, want it to contain %q", err, tc.wantErr)
			}
		})
	}
	if err := WriteSVG(io.Discard, nil); err == nil {
		t.Error("WriteSVG(nil) succeeded, want an error")
	}
}

func TestNiceCeil(t *testing.T) {
	for _, tc := range []struct{ in, want float64 }{
		{-1, 1}, {0, 1}, {0.7, 0.8}, {1, 1}, {1.2, 2}, {222, 300}, {499, 500}, {510, 600}, {9000, 10000},
	} {
		if got := niceCeil(tc.in); math.Abs(got-tc.want) > 1e-9 {
			t.Errorf("niceCeil(%v) = %v, want %v", tc.in, got, tc.want)
		}
	}
}
