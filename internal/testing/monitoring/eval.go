package monitoring

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"sort"
	"strings"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
)

// Sample is one series' value: its metric name, labels (instance added
// by the evaluator, as Prometheus adds it when scraping) and value.
type Sample struct {
	Name   string
	Labels map[string]string
	Value  float64
}

// Scrape is what one target exported at one time.
type Scrape struct {
	Instance string
	Time     time.Time
	Samples  []Sample
}

// History is a set of scrapes of one or more targets, any order.
type History []Scrape

// Firing evaluates the expression at the time of the history's last
// scrape and returns the elements of its result: an alert fires with an
// element for each (ignoring its `for` duration). An instant selector
// reads each target's last scrape; a range selector reads each target's
// scrapes within the window before the last scrape.
func (e *Expr) Firing(h History) []Sample {
	var out []Sample
	for _, s := range e.root.eval(h) {
		if e.cmp == "" || compare(s.Value, e.cmp, e.threshold) {
			out = append(out, s)
		}
	}
	return out
}

func compare(v float64, op string, t float64) bool {
	switch op {
	case "==":
		return v == t
	case "!=":
		return v != t
	case ">":
		return v > t
	case "<":
		return v < t
	case ">=":
		return v >= t
	case "<=":
		return v <= t
	}
	return false
}

// now is the time of the last scrape.
func (h History) now() time.Time {
	var t time.Time
	for _, s := range h {
		if s.Time.After(t) {
			t = s.Time
		}
	}
	return t
}

// series returns, per series the selector matches, its samples in time
// order within window before now (window 0: the target's last scrape
// only), keyed by series identity.
func (h History) series(sel *selector) map[string][]Sample {
	sorted := slices.Clone(h)
	sort.SliceStable(sorted, func(i, j int) bool { return sorted[i].Time.Before(sorted[j].Time) })
	now := h.now()
	last := map[string]time.Time{}
	for _, s := range sorted {
		last[s.Instance] = s.Time
	}
	out := map[string][]Sample{}
	for _, sc := range sorted {
		if sel.window == 0 && !sc.Time.Equal(last[sc.Instance]) {
			continue
		}
		if sel.window > 0 && !sc.Time.After(now.Add(-sel.window)) {
			continue
		}
		for _, s := range sc.Samples {
			if s.Name != sel.name || !sel.matches(s.Labels) {
				continue
			}
			labels := maps.Clone(s.Labels)
			if labels == nil {
				labels = map[string]string{}
			}
			labels["instance"] = sc.Instance
			key := seriesKey(s.Name, labels)
			out[key] = append(out[key], Sample{Name: s.Name, Labels: labels, Value: s.Value})
		}
	}
	return out
}

func (sel *selector) matches(labels map[string]string) bool {
	for _, m := range sel.matchers {
		if (labels[m.label] == m.value) == m.negate {
			return false
		}
	}
	return true
}

func seriesKey(name string, labels map[string]string) string {
	var b strings.Builder
	b.WriteString(name)
	for _, k := range slices.Sorted(maps.Keys(labels)) {
		fmt.Fprintf(&b, "\x00%s=%s", k, labels[k])
	}
	return b.String()
}

// sorted returns the samples of a series map in key order.
func sorted(m map[string][]Sample, pick func([]Sample) Sample) []Sample {
	out := make([]Sample, 0, len(m))
	for _, k := range slices.Sorted(maps.Keys(m)) {
		out = append(out, pick(m[k]))
	}
	return out
}

func (sel *selector) eval(h History) []Sample {
	return sorted(h.series(sel), func(s []Sample) Sample { return s[len(s)-1] })
}

func (a *absent) eval(h History) []Sample {
	if len(h.series(a.sel)) > 0 {
		return nil
	}
	return []Sample{{Labels: map[string]string{}, Value: 1}}
}

func (o *overTime) eval(h History) []Sample {
	return sorted(h.series(o.sel), func(s []Sample) Sample {
		out := Sample{Labels: s[0].Labels, Value: s[0].Value}
		for i, x := range s[1:] {
			switch o.fn {
			case "min_over_time":
				out.Value = min(out.Value, x.Value)
			case "max_over_time":
				out.Value = max(out.Value, x.Value)
			case "increase":
				// A drop is a counter reset: the new value is all increase.
				if d := x.Value - s[i].Value; d >= 0 {
					out.Value += d
				} else {
					out.Value += x.Value
				}
			}
		}
		if o.fn == "increase" {
			out.Value -= s[0].Value
		}
		return out
	})
}

func (a *aggregate) eval(h History) []Sample {
	groups := map[string]*Sample{}
	for _, s := range a.arg.eval(h) {
		labels := map[string]string{}
		for _, l := range a.by {
			if v, ok := s.Labels[l]; ok {
				labels[l] = v
			}
		}
		key := seriesKey("", labels)
		g, ok := groups[key]
		if !ok {
			groups[key] = &Sample{Labels: labels, Value: s.Value}
			continue
		}
		switch a.op {
		case "min":
			g.Value = min(g.Value, s.Value)
		case "max":
			g.Value = max(g.Value, s.Value)
		case "sum":
			g.Value += s.Value
		}
	}
	out := make([]Sample, 0, len(groups))
	for _, k := range slices.Sorted(maps.Keys(groups)) {
		out = append(out, *groups[k])
	}
	return out
}

// ParseScrape reads a Prometheus text exposition into samples: gauges,
// counters and untyped metrics as themselves, histograms and summaries as
// their _count and _sum series (buckets and quantiles are left out: no
// alert reads them).
func ParseScrape(r io.Reader) ([]Sample, error) {
	var p expfmt.TextParser
	families, err := p.TextToMetricFamilies(r)
	if err != nil {
		return nil, fmt.Errorf("parse metrics: %w", err)
	}
	var out []Sample
	for _, name := range slices.Sorted(maps.Keys(families)) {
		for _, m := range families[name].GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			add := func(n string, v float64) { out = append(out, Sample{Name: n, Labels: labels, Value: v}) }
			switch families[name].GetType() {
			case dto.MetricType_GAUGE:
				add(name, m.GetGauge().GetValue())
			case dto.MetricType_COUNTER:
				add(name, m.GetCounter().GetValue())
			case dto.MetricType_UNTYPED:
				add(name, m.GetUntyped().GetValue())
			case dto.MetricType_HISTOGRAM:
				add(name+"_count", float64(m.GetHistogram().GetSampleCount()))
				add(name+"_sum", m.GetHistogram().GetSampleSum())
			case dto.MetricType_SUMMARY:
				add(name+"_count", float64(m.GetSummary().GetSampleCount()))
				add(name+"_sum", m.GetSummary().GetSampleSum())
			}
		}
	}
	return out, nil
}
