package monitoring

import (
	"path/filepath"
	"sort"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/rdmatopo/rdmatopo/internal/companion"
)

// TestCompanionAlerts: every companion alert names metrics the companion
// exports, carries a severity, summary and description, and fires on the
// situation it names, and only then.
func TestCompanionAlerts(t *testing.T) {
	alerts, err := LoadAlerts(filepath.Join(dir, "companion-prometheusrule.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	families, err := companion.NewMetrics().Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	have := map[string]bool{}
	for _, f := range families {
		have[f.GetName()] = true
	}
	// Counter vectors are exported once a label value is set; the
	// histogram under its base name.
	have["rdmatopo_companion_binds_total"] = true
	for _, a := range alerts {
		if a.Labels["severity"] == "" || a.Annotations["summary"] == "" || a.Annotations["description"] == "" {
			t.Errorf("alert %s: want a severity label, summary and description", a.Alert)
		}
		if checkNames(t.Errorf, "alert "+a.Alert, a.Expr, have) == 0 {
			t.Errorf("alert %s names no rdmatopo metric: %q", a.Alert, a.Expr)
		}
	}

	metrics := func(unassisted, errors, broken string) string {
		return "# TYPE rdmatopo_companion_unassisted_binds_total counter\nrdmatopo_companion_unassisted_binds_total " + unassisted + "\n" +
			"# TYPE rdmatopo_companion_binds_total counter\nrdmatopo_companion_binds_total{result=\"assisted\"} 40\n" +
			"rdmatopo_companion_binds_total{result=\"error\"} " + errors + "\n" +
			"# TYPE rdmatopo_companion_hard_tier_broken_total counter\nrdmatopo_companion_hard_tier_broken_total " + broken + "\n"
	}
	over := func(before, after string) History {
		return History{scrape(t, "c", 0, before), scrape(t, "c", 10*time.Minute, after)}
	}
	steady := metrics("3", "1", "2")
	for name, tc := range map[string]struct {
		history History
		want    []string
	}{
		"healthy, old counts steady": {history: over(steady, steady)},
		"nothing scraped":            {want: []string{"RdmatopoCompanionMetricsAbsent"}},
		"binds unassisted":           {history: over(steady, metrics("5", "1", "2")), want: []string{"RdmatopoCompanionUnassistedBinds"}},
		"bind errors":                {history: over(steady, metrics("3", "4", "2")), want: []string{"RdmatopoCompanionBindErrors"}},
		"hard tier broken":           {history: over(steady, metrics("3", "1", "3")), want: []string{"RdmatopoCompanionHardTierBroken"}},
	} {
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
