// Package fabricmap draws an RDMA fabric as SVG: one box per S1 (miniPod),
// inside it one box per S0 leaf, inside that one row per NUMA zone cabled to
// the leaf (node and NUMA id) with a square per NIC, coloured by the job
// holding it (grey when free), and a legend of the jobs. It draws the
// fabric of a simulation (`rdmatopo simulate --map`) and of a live cluster
// (`kubectl rdmatopo map`, the dashboard).
package fabricmap

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/rdmatopo/rdmatopo/core/topology"
)

// Map colours for NIC states (jobs: ColorOf).
var (
	colorFree     = "#e5e7eb" // free NIC
	colorRunning  = "#4b5563" // held by a pod that ran before the simulation
	colorReported = "#9ca3af" // the KCNR reports it in use, no pod known
)

// Map geometry (pixels).
const (
	mapMargin    = 16
	leafWidth    = 250
	leafGap      = 12
	leavesPerRow = 4
	rowHeight    = 22
	nicSize      = 15
	leafHeader   = 24
	s1Header     = 30
	legendRow    = 20
	// legendChars is how many characters of a legend line fit the map's
	// width; longer labels wrap onto further lines.
	legendChars = 150
)

// nicHolder is who holds a NIC of a node.
type nicHolder struct {
	color string
	title string
}

// Job is one entry of the legend.
type Job struct {
	// Key is "namespace/name", as NICUse.Job names it.
	Key string
	// ID is the identity the job's colour derives from (its PodGroup's
	// UID); Key when empty.
	ID string
	// Created is when the job was created (zero when unknown): older jobs
	// keep their own hue first (AssignColors).
	Created time.Time
	// Colour is the colour its map gave it (AssignColors), distinct from
	// the map's other jobs; empty: ColorOf(ID).
	Colour string
	// Label is the legend's text, wrapped when long and given in full as
	// its tooltip.
	Label string
	// WaitingAt lists the leaves a waiting gang would go to (best first):
	// each gets a dashed outline and a line in the job's colour, with the
	// label as its tooltip. Empty for a placed job.
	WaitingAt []topology.S0ID
}

// Color is the job's colour: the one its map gave it (distinct from the
// map's other jobs), else its own.
func (j Job) Color() string {
	if j.Colour != "" {
		return j.Colour
	}
	if j.ID != "" {
		return ColorOf(j.ID)
	}
	return ColorOf(j.Key)
}

// waitMark is a waiting gang drawn on a leaf it would go to.
type waitMark struct {
	job, color, title string
}

// NICUse is who holds one NIC.
type NICUse struct {
	// Job is the holder's job key; a job not in Model.Jobs is drawn in the
	// colour of other holders.
	Job string
	// Pod is "namespace/name" of the holding pod.
	Pod string
}

// Model is what a map shows.
type Model struct {
	// Title heads the map.
	Title string
	// Jobs are the legend, in colour order.
	Jobs []Job
	// NICs maps "node/nic" to its holder.
	NICs map[string]NICUse
	// OtherLabel names, in the legend, the NICs of holders not in Jobs;
	// OtherTitle is appended to such a NIC's tooltip.
	OtherLabel string
	OtherTitle string
}

// Render draws the fabric f with the holders and jobs of m.
func Render(f *topology.Fabric, m Model) []byte {
	jobColor := Colors(m)
	waiting := map[topology.S0ID][]waitMark{}
	for _, j := range m.Jobs {
		for _, id := range j.WaitingAt {
			waiting[id] = append(waiting[id], waitMark{job: j.Key, color: jobColor[j.Key], title: j.Label})
		}
	}
	holders := map[string]nicHolder{} // node/nic -> holder
	for key, use := range m.NICs {
		h := nicHolder{color: colorRunning, title: fmt.Sprintf("%s (%s)", use.Pod, m.OtherTitle)}
		if c, ok := jobColor[use.Job]; ok {
			h = nicHolder{color: c, title: fmt.Sprintf("%s of %s", use.Pod, use.Job)}
		}
		holders[key] = h
	}

	var body bytes.Buffer
	y := mapMargin + 28
	width := 2*mapMargin + leavesPerRow*leafWidth + (leavesPerRow-1)*leafGap
	for _, g := range leafGroups(f) {
		y = drawGroup(&body, f, g, y, width, holders, waiting)
	}
	height := drawLegend(&body, m, jobColor, y+4) + mapMargin

	var out bytes.Buffer
	fmt.Fprintf(&out, `<?xml version="1.0" encoding="UTF-8"?>`+"\n")
	fmt.Fprintf(&out, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif">`+"\n",
		width, height, width, height)
	fmt.Fprintf(&out, `<rect width="%d" height="%d" fill="#ffffff"/>`+"\n", width, height)
	text(&out, mapMargin, mapMargin+12, "font-weight=\"bold\" font-size=\"16\"",
		m.Title)
	out.Write(body.Bytes())
	out.WriteString("</svg>\n")
	return out.Bytes()
}

// leafGroup is one box of the map: an S1's leaves, or those of unknown
// topology.
type leafGroup struct {
	title  string
	leaves []topology.S0ID
}

// leafGroups groups the leaves by S1; leaves of unknown topology go last.
func leafGroups(f *topology.Fabric) []leafGroup {
	var groups []leafGroup
	var unknown []topology.S0ID
	for _, s1 := range f.S1IDs() {
		var known []topology.S0ID
		for _, id := range f.LeavesOf(s1) {
			if id.IsUnknown() {
				unknown = append(unknown, id)
			} else {
				known = append(known, id)
			}
		}
		if len(known) == 0 {
			continue
		}
		title := "S1 " + string(s1)
		if s1 == "" {
			title = "S1 unknown (no s1NodeLabel configured, or nodes without the label): one miniPod"
		}
		sortLeaves(f, known)
		groups = append(groups, leafGroup{title: title, leaves: known})
	}
	if len(unknown) > 0 {
		sort.Slice(unknown, func(i, j int) bool { return unknown[i] < unknown[j] })
		groups = append(groups, leafGroup{title: "Topology unknown: each NIC is a leaf of its own", leaves: unknown})
	}
	return groups
}

// drawGroup draws a group's box at y, its leaves in rows, and returns the
// y below it.
func drawGroup(body *bytes.Buffer, f *topology.Fabric, g leafGroup, y, width int, holders map[string]nicHolder, waiting map[topology.S0ID][]waitMark) int {
	rows := (len(g.leaves) + leavesPerRow - 1) / leavesPerRow
	heights := make([]int, rows)
	for i, id := range g.leaves {
		if h := leafHeight(f, id, waiting); h > heights[i/leavesPerRow] {
			heights[i/leavesPerRow] = h
		}
	}
	total := s1Header
	for _, h := range heights {
		total += h + leafGap
	}
	fmt.Fprintf(body, `<rect x="%d" y="%d" width="%d" height="%d" rx="6" fill="#f9fafb" stroke="#9ca3af"/>`+"\n",
		mapMargin/2, y, width-mapMargin, total)
	text(body, mapMargin, y+20, "font-weight=\"bold\" font-size=\"14\"", g.title)
	rowY := y + s1Header
	for i, id := range g.leaves {
		col := i % leavesPerRow
		if col == 0 && i > 0 {
			rowY += heights[i/leavesPerRow-1] + leafGap
		}
		l, _ := f.Leaf(id)
		drawLeaf(body, l, mapMargin+col*(leafWidth+leafGap), rowY, holders, waiting[id])
	}
	return y + total + leafGap
}

// drawLegend draws the jobs' colours and the fixed ones from y and returns
// the y below them.
func drawLegend(body *bytes.Buffer, m Model, jobColor map[string]string, y int) int {
	text(body, mapMargin, y+12, "font-weight=\"bold\" font-size=\"13\"", "Jobs")
	y += legendRow
	for _, j := range m.Jobs {
		fmt.Fprintf(body, `<g data-job="%s"><title>%s</title>`+"\n", escape(j.Key), escape(j.Label))
		fmt.Fprintf(body, `<rect x="%d" y="%d" width="%d" height="%d" fill="%s"/>`+"\n", mapMargin, y, nicSize, nicSize, jobColor[j.Key])
		for i, line := range wrap(j.Label, legendChars) {
			if i > 0 {
				y += legendRow - 4
			}
			text(body, mapMargin+nicSize+8, y+12, "font-size=\"12\"", line)
		}
		body.WriteString("</g>\n")
		y += legendRow
	}
	for _, fixed := range []struct{ color, label string }{
		{colorFree, "free NIC"}, {colorRunning, m.OtherLabel},
		{colorReported, "NIC in use per its KCNR, holder unknown"},
	} {
		fmt.Fprintf(body, `<rect x="%d" y="%d" width="%d" height="%d" fill="%s" stroke="#6b7280"/>`+"\n", mapMargin, y, nicSize, nicSize, fixed.color)
		text(body, mapMargin+nicSize+8, y+12, "font-size=\"12\"", fixed.label)
		y += legendRow
	}
	return y
}

// sortLeaves orders leaves by their first node and NUMA zone, so leaves
// of neighbouring nodes sit next to each other.
func sortLeaves(f *topology.Fabric, ids []topology.S0ID) {
	first := func(id topology.S0ID) (string, int) {
		l, ok := f.Leaf(id)
		if !ok || len(l.Slots) == 0 {
			return string(id), 0
		}
		s := l.Slots[0]
		return s.Node.Name, s.Node.Zones[s.Zone].ID
	}
	sort.SliceStable(ids, func(i, j int) bool {
		ni, zi := first(ids[i])
		nj, zj := first(ids[j])
		if ni != nj {
			return ni < nj
		}
		if zi != zj {
			return zi < zj
		}
		return ids[i] < ids[j]
	})
}

// leafHeight is the height of a leaf's box: its header, a row per slot
// and a line per waiting gang that would go there.
func leafHeight(f *topology.Fabric, id topology.S0ID, waiting map[topology.S0ID][]waitMark) int {
	l, _ := f.Leaf(id)
	return leafHeader + rowHeight*(len(l.Slots)+len(waiting[id])) + 6
}

// drawLeaf draws one leaf box with a row per slot, then a line per
// waiting gang that would go there (marks), its box outlined dashed in
// the gang's colour.
func drawLeaf(w *bytes.Buffer, l *topology.Leaf, x, y int, holders map[string]nicHolder, marks []waitMark) {
	h := leafHeader + rowHeight*(len(l.Slots)+len(marks)) + 6
	fmt.Fprintf(w, `<rect x="%d" y="%d" width="%d" height="%d" rx="4" fill="#ffffff" stroke="#6b7280"/>`+"\n", x, y, leafWidth, h)
	for i, mk := range marks {
		inset := 2 + 3*i
		fmt.Fprintf(w, `<g data-waiting="%s"><title>%s</title>`+"\n", escape(mk.job), escape(mk.title))
		fmt.Fprintf(w, `<rect x="%d" y="%d" width="%d" height="%d" rx="4" fill="none" stroke="%s" stroke-width="2" stroke-dasharray="6 3"/>`+"\n",
			x+inset, y+inset, leafWidth-2*inset, h-2*inset, mk.color)
		text(w, x+8, y+leafHeader+(len(l.Slots)+i)*rowHeight+12, fmt.Sprintf("font-size=\"11\" fill=\"%s\"", mk.color), "waiting here: "+mk.job)
		w.WriteString("</g>\n")
	}
	free, total := 0, 0
	for _, s := range l.Slots {
		for _, nic := range s.NICs {
			total++
			if _, held := holders[s.Node.Name+"/"+string(nic)]; !held && nicFree(s, nic) {
				free++
			}
		}
	}
	label := "S0 " + ShortID(string(l.ID))
	if l.ID.IsUnknown() {
		label = "unknown leaf"
	}
	fmt.Fprintf(w, "<g><title>%s</title>\n", escape(string(l.ID)))
	text(w, x+8, y+16, "font-size=\"12\" font-weight=\"bold\"", fmt.Sprintf("%s  (%d/%d NICs free)", label, free, total))
	w.WriteString("</g>\n")
	for i, s := range l.Slots {
		ry := y + leafHeader + i*rowHeight
		z := s.Node.Zones[s.Zone]
		text(w, x+8, ry+12, "font-size=\"11\"", fmt.Sprintf("%s NUMA %d", s.Node.Name, z.ID))
		for k, nic := range s.NICs {
			key := s.Node.Name + "/" + string(nic)
			color, title := colorFree, fmt.Sprintf("%s %s: free", s.Node.Name, nic)
			if hd, ok := holders[key]; ok {
				color, title = hd.color, fmt.Sprintf("%s %s: %s", s.Node.Name, nic, hd.title)
			} else if !nicFree(s, nic) {
				color, title = colorReported, fmt.Sprintf("%s %s: in use (KCNR)", s.Node.Name, nic)
			}
			fmt.Fprintf(w, `<rect x="%d" y="%d" width="%d" height="%d" fill="%s" stroke="#6b7280"><title>%s</title></rect>`+"\n",
				x+leafWidth-12-(len(s.NICs)-k)*(nicSize+4), ry, nicSize, nicSize, color, escape(title))
		}
	}
}

// nicFree reports whether the fabric (the KCNR) shows the NIC free.
func nicFree(s topology.Slot, id topology.NICID) bool {
	for _, n := range s.Node.Zones[s.Zone].NICs {
		if n.ID == id {
			return n.Free
		}
	}
	return true
}

// wrap splits s into lines of at most width characters, at spaces where
// it can.
func wrap(s string, width int) []string {
	var lines []string
	for len(s) > width {
		cut := strings.LastIndex(s[:width], " ")
		if cut <= 0 {
			cut = width
		}
		lines = append(lines, s[:cut])
		s = strings.TrimLeft(s[cut:], " ")
	}
	return append(lines, s)
}

// text writes an SVG text element with escaped content.
func text(w *bytes.Buffer, x, y int, attrs, s string) {
	fmt.Fprintf(w, `<text x="%d" y="%d" %s>%s</text>`+"\n", x, y, attrs, escape(s))
}

// escape makes s safe as XML character data or attribute value.
func escape(s string) string {
	var b strings.Builder
	_ = xml.EscapeText(&b, []byte(s)) // writes to a strings.Builder never fail
	return b.String()
}

// ShortID abbreviates an S0 hash to 8 characters ("?" and the rest for
// the synthetic leaf of a topology-unknown NIC).
func ShortID(id string) string {
	if strings.HasPrefix(id, "unknown:") {
		return "?" + strings.TrimPrefix(id, "unknown:")
	}
	if len(id) > 8 {
		return id[:8]
	}
	return id
}
