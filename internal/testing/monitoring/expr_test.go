package monitoring

import (
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// t0 is the time of the first scrape in these tests.
var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// scrape parses a text exposition into a scrape of instance at t0+at.
func scrape(t *testing.T, instance string, at time.Duration, text string) Scrape {
	t.Helper()
	samples, err := ParseScrape(strings.NewReader(text))
	if err != nil {
		t.Fatal(err)
	}
	return Scrape{Instance: instance, Time: t0.Add(at), Samples: samples}
}

// firing renders what an expression returns as "{labels}=value", sorted.
func firing(t *testing.T, e *Expr, h History) []string {
	t.Helper()
	var out []string
	for _, s := range e.Firing(h) {
		var kv []string
		for k, v := range s.Labels {
			kv = append(kv, k+"="+v)
		}
		sort.Strings(kv)
		out = append(out, "{"+strings.Join(kv, ",")+"}="+strconv.FormatFloat(s.Value, 'g', -1, 64))
	}
	sort.Strings(out)
	return out
}

func TestParseExprRejects(t *testing.T) {
	for _, expr := range []string{
		`rate(rdmatopo_x[5m]) > 0`,
		`rdmatopo_x > 0 and on() rdmatopo_leader == 1`,
		`rdmatopo_x{a=~"b.*"} > 0`,
		`sum(rdmatopo_x) by (a) > 0`,
		`rdmatopo_x / rdmatopo_y > 0`,
		`min_over_time(rdmatopo_x) > 0`,
		`absent(rdmatopo_x[5m])`,
		`rdmatopo_x[5m] > 0`,
		`min(rdmatopo_x) == `,
		`min(rdmatopo_x`,
	} {
		if _, err := ParseExpr(expr); err == nil {
			t.Errorf("ParseExpr(%q) = nil error, want an error", expr)
		}
	}
}

func TestExprFiring(t *testing.T) {
	a0 := `# TYPE g gauge
g{r="x"} 0
g{r="y"} 3
# TYPE c counter
c 10
# TYPE leader gauge
leader 1
`
	a1 := `# TYPE g gauge
g{r="x"} 2
g{r="y"} 3
# TYPE c counter
c 4
# TYPE leader gauge
leader 1
`
	b1 := `# TYPE g gauge
g{r="x"} 1
# TYPE leader gauge
leader 0
`
	h := History{
		scrape(t, "a", 0, a0),
		scrape(t, "a", time.Minute, a1),
		scrape(t, "b", time.Minute, b1),
	}
	cases := []struct {
		expr string
		want []string
	}{
		{`leader == 1`, []string{"{instance=a}=1"}},
		{`leader`, []string{"{instance=a}=1", "{instance=b}=0"}},
		{`g{r="x"} > 0`, []string{"{instance=a,r=x}=2", "{instance=b,r=x}=1"}},
		{`g{r!="x"}`, []string{"{instance=a,r=y}=3"}},
		{`min(g) == 1`, []string{"{}=1"}},
		{`max(g)`, []string{"{}=3"}},
		{`sum(g)`, []string{"{}=6"}},
		{`min by (r) (g) <= 1`, []string{"{r=x}=1"}},
		{`min by (instance) (g)`, []string{"{instance=a}=2", "{instance=b}=1"}},
		{`min_over_time(g{r="x"}[5m]) > 0`, []string{"{instance=b,r=x}=1"}},
		{`max_over_time(g{r="x"}[5m]) > 1`, []string{"{instance=a,r=x}=2"}},
		// The first scrape is outside a 30 s window.
		{`min_over_time(g{r="x"}[30s]) > 0`, []string{"{instance=a,r=x}=2", "{instance=b,r=x}=1"}},
		// 10 -> 4 is a reset: 4 more.
		{`increase(c[5m]) > 3`, []string{"{instance=a}=4"}},
		{`increase(c[5m]) > 5`, nil},
		{`absent(g)`, nil},
		{`absent(nothing)`, []string{"{}=1"}},
		{`absent(g{r="z"})`, []string{"{}=1"}},
	}
	for _, tc := range cases {
		t.Run(tc.expr, func(t *testing.T) {
			e, err := ParseExpr(tc.expr)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, firing(t, e, h)); diff != "" {
				t.Errorf("(-want,+got):\n%s", diff)
			}
		})
	}
}

// TestShippedAlertsOnReplicas evaluates the shipped alerts on the metrics
// of scheduler replicas in known states: a healthy leader with a standby
// fires nothing; each broken state fires its alert.
func TestShippedAlertsOnReplicas(t *testing.T) {
	alerts, err := LoadAlerts(filepath.Join(dir, "prometheusrule.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	const build = "# TYPE rdmatopo_build_info gauge\nrdmatopo_build_info{git_sha=\"abc\",version=\"v1\",volcano_version=\"v1.10.0\"} 1\n"
	// A standby runs no session: it exports none of the session gauges.
	standby := build + "# TYPE rdmatopo_leader gauge\nrdmatopo_leader 0\n"
	leader := func(conf, synced, unconfirmed string) string {
		return build + "# TYPE rdmatopo_leader gauge\nrdmatopo_leader 1\n" +
			"# TYPE rdmatopo_conf_valid gauge\nrdmatopo_conf_valid " + conf + "\n" +
			"# TYPE rdmatopo_informer_synced gauge\nrdmatopo_informer_synced{resource=\"customnoderesources\"} " + synced + "\n" +
			"# TYPE rdmatopo_nics_reserved_unconfirmed gauge\nrdmatopo_nics_reserved_unconfirmed " + unconfirmed + "\n" +
			"# TYPE rdmatopo_gangs_pending gauge\nrdmatopo_gangs_pending{reason=\"NoCapacity\"} 2\n" +
			"# TYPE rdmatopo_hard_gangs_pending gauge\nrdmatopo_hard_gangs_pending 0\n" +
			"# TYPE rdmatopo_nic_mismatch_total counter\nrdmatopo_nic_mismatch_total 1\n"
	}
	twice := func(instance, text string) History {
		return History{scrape(t, instance, 0, text), scrape(t, instance, time.Minute, text)}
	}
	cases := map[string]struct {
		history History
		want    []string
	}{
		"leader and standby": {
			history: append(twice("a", leader("1", "1", "0")), twice("b", standby)...),
		},
		"standby alone":   {history: twice("b", standby)},
		"nothing scraped": {want: []string{"RdmatopoSchedulerMetricsAbsent"}},
		"leader with a broken conf": {
			history: append(twice("a", leader("0", "1", "0")), twice("b", standby)...),
			want:    []string{"RdmatopoConfInvalid"},
		},
		"hard gangs waiting 30 minutes, for their tier then for capacity": {
			history: func() History {
				var h History
				for m := 0; m <= 30; m += 5 {
					reason := "TierLimit"
					if m >= 15 {
						reason = "NoCapacity"
					}
					text := strings.NewReplacer(`{reason="NoCapacity"} 2`, `{reason="`+reason+`"} 1`,
						"rdmatopo_hard_gangs_pending 0", "rdmatopo_hard_gangs_pending 1").Replace(leader("1", "1", "0"))
					h = append(h, scrape(t, "a", time.Duration(m)*time.Minute, text))
				}
				return h
			}(),
			want: []string{"RdmatopoHardGangsPending"},
		},
		"leader not synced, NICs unconfirmed": {
			history: append(twice("a", leader("1", "0", "4")), twice("b", standby)...),
			want:    []string{"RdmatopoInformerNotSynced", "RdmatopoUnconfirmedNICsStuck"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var got []string
			for _, a := range alerts {
				if len(a.Parsed.Firing(tc.history)) > 0 {
					got = append(got, a.Alert)
				}
			}
			sort.Strings(got)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("alerts firing (-want,+got):\n%s", diff)
			}
		})
	}
}
