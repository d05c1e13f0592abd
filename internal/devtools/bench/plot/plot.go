package plot

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"sort"
	"strings"

	"github.com/rdmatopo/rdmatopo/internal/devtools/bench"
	"github.com/rdmatopo/rdmatopo/internal/devtools/bench/replay"
)

// ReadReports decodes one or more concatenated JSON reports.
func ReadReports(r io.Reader) ([]*bench.Report, error) {
	dec := json.NewDecoder(r)
	var out []*bench.Report
	for {
		rep := &bench.Report{}
		err := dec.Decode(rep)
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("bench JSON: %w", err)
		}
		for _, name := range []string{replay.ConfRDMATopo, replay.ConfBaseline} {
			if rep.Runs[name] == nil {
				return nil, fmt.Errorf("bench JSON for %d nodes: runs.%s is missing", rep.Nodes, name)
			}
		}
		out = append(out, rep)
	}
}

// Plot geometry (SVG user units).
const (
	panelW, panelH = 420.0, 300.0
	marginL        = 70.0
	marginR        = 20.0
	marginT        = 40.0
	marginB        = 50.0
)

// seriesColors gives each conf a fixed colour.
var seriesColors = map[string]string{replay.ConfRDMATopo: "#1f77b4", replay.ConfBaseline: "#d62728"}

// panel is one chart: a metric of both confs against the node count.
type panel struct {
	title string
	yName string
	value func(*replay.RunResult) float64
	// yMax, when > 0, fixes the top of the y axis.
	yMax float64
}

// WriteSVG renders the reports (one per cluster size) as an SVG with two
// charts: session seconds against nodes, and atOptimumFrac against nodes,
// one line per conf.
func WriteSVG(w io.Writer, reports []*bench.Report) error {
	if len(reports) == 0 {
		return fmt.Errorf("no bench report to plot")
	}
	reps := append([]*bench.Report(nil), reports...)
	sort.Slice(reps, func(i, j int) bool { return reps[i].Nodes < reps[j].Nodes })
	panels := []panel{
		{title: "Scheduling time (session seconds)", yName: "seconds", value: func(r *replay.RunResult) float64 { return r.Seconds }},
		{title: "Gangs at the fewest possible S0s", yName: "atOptimumFrac", value: func(r *replay.RunResult) float64 { return r.AtOptimumFrac }, yMax: 1},
	}
	width := float64(len(panels)) * (panelW + marginL + marginR)
	height := panelH + marginT + marginB + 30
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%.0f" height="%.0f" viewBox="0 0 %.0f %.0f" font-family="sans-serif" font-size="12">`+"\n",
		width, height, width, height)
	fmt.Fprintf(&b, `<rect width="100%%" height="100%%" fill="white"/>`+"\n")
	for i, p := range panels {
		writePanel(&b, float64(i)*(panelW+marginL+marginR), p, reps)
	}
	// Legend.
	x := marginL
	for _, name := range []string{replay.ConfRDMATopo, replay.ConfBaseline} {
		y := height - 14
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="%s" stroke-width="2"/>`+"\n", x, y-4, x+24, y-4, seriesColors[name])
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f">%s</text>`+"\n", x+30, y, name)
		x += 120
	}
	b.WriteString("</svg>\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// writePanel draws one chart with its left edge at x0.
func writePanel(b *strings.Builder, x0 float64, p panel, reps []*bench.Report) {
	left, top := x0+marginL, marginT
	bottom := top + panelH
	right := left + panelW
	minN, maxN := float64(reps[0].Nodes), float64(reps[len(reps)-1].Nodes)
	yMax := p.yMax
	if yMax == 0 {
		for _, r := range reps {
			for _, name := range []string{replay.ConfRDMATopo, replay.ConfBaseline} {
				yMax = math.Max(yMax, p.value(r.Runs[name]))
			}
		}
		yMax = niceCeil(yMax)
	}
	xOf := func(n int) float64 {
		if maxN == minN {
			return (left + right) / 2
		}
		return left + (float64(n)-minN)/(maxN-minN)*panelW
	}
	yOf := func(v float64) float64 { return bottom - v/yMax*panelH }

	fmt.Fprintf(b, `<text x="%.1f" y="%.1f" font-size="14" text-anchor="middle">%s</text>`+"\n", (left+right)/2, top-16, p.title)
	fmt.Fprintf(b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="none" stroke="#888"/>`+"\n", left, top, panelW, panelH)
	for i := 0; i <= 4; i++ {
		v := yMax * float64(i) / 4
		y := yOf(v)
		fmt.Fprintf(b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#ddd"/>`+"\n", left, y, right, y)
		fmt.Fprintf(b, `<text x="%.1f" y="%.1f" text-anchor="end">%s</text>`+"\n", left-6, y+4, formatTick(v))
	}
	for _, r := range reps {
		x := xOf(r.Nodes)
		fmt.Fprintf(b, `<text x="%.1f" y="%.1f" text-anchor="middle">%d</text>`+"\n", x, bottom+16, r.Nodes)
	}
	fmt.Fprintf(b, `<text x="%.1f" y="%.1f" text-anchor="middle">nodes</text>`+"\n", (left+right)/2, bottom+36)
	fmt.Fprintf(b, `<text x="%.1f" y="%.1f" text-anchor="middle" transform="rotate(-90 %.1f %.1f)">%s</text>`+"\n",
		left-50, (top+bottom)/2, left-50, (top+bottom)/2, p.yName)
	for _, name := range []string{replay.ConfRDMATopo, replay.ConfBaseline} {
		var pts []string
		for _, r := range reps {
			pts = append(pts, fmt.Sprintf("%.1f,%.1f", xOf(r.Nodes), yOf(p.value(r.Runs[name]))))
		}
		fmt.Fprintf(b, `<polyline points="%s" fill="none" stroke="%s" stroke-width="2"/>`+"\n", strings.Join(pts, " "), seriesColors[name])
		for _, pt := range pts {
			xy := strings.SplitN(pt, ",", 2)
			fmt.Fprintf(b, `<circle cx="%s" cy="%s" r="3.5" fill="%s"/>`+"\n", xy[0], xy[1], seriesColors[name])
		}
	}
}

// niceCeil rounds v up to 1, 2, 3, 4, 5, 6 or 8 times a power of ten (1
// for v <= 0), so a panel uses most of its height.
func niceCeil(v float64) float64 {
	if v <= 0 {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 2, 3, 4, 5, 6, 8, 10} {
		if v <= m*p {
			return m * p
		}
	}
	return 10 * p
}

// formatTick prints an axis value without trailing zeros.
func formatTick(v float64) string {
	s := fmt.Sprintf("%.3f", v)
	s = strings.TrimRight(s, "0")
	return strings.TrimSuffix(s, ".")
}
