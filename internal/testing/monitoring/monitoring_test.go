package monitoring

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	// The scheduler's metrics: the plugin's and the actions'.

	"github.com/rdmatopo/rdmatopo/config"
	"github.com/rdmatopo/rdmatopo/examples"
	"github.com/rdmatopo/rdmatopo/internal/sim"
	"github.com/rdmatopo/rdmatopo/internal/testing/builders"
	"github.com/rdmatopo/rdmatopo/internal/workload"
)

// dir is config/monitoring.
var dir = filepath.Join("..", "..", "..", "config", "monitoring")

// metricName finds rdmatopo metric names in PromQL.
var metricName = regexp.MustCompile(`\brdmatopo_[a-z0-9_]+\b`)

// dashboard is the part of a Grafana dashboard the checks read.
type dashboard struct {
	Title  string `json:"title"`
	UID    string `json:"uid"`
	Panels []struct {
		Title   string `json:"title"`
		Targets []struct {
			Expr string `json:"expr"`
		} `json:"targets"`
	} `json:"panels"`
}

// exported returns the names of the metric families the scheduler's
// registry gathers after a simulation of the sample cluster (with one
// RDMA node without topology) has set every labelled metric.
func exported(t *testing.T) map[string]bool {
	t.Helper()
	conf, err := sim.ParseConf(config.SchedulerConf)
	if err != nil {
		t.Fatal(err)
	}
	cluster, err := workload.LoadCluster("cluster.yaml", examples.Cluster)
	if err != nil {
		t.Fatal(err)
	}
	cluster.Nodes = append(cluster.Nodes, builders.MakeNode("no-kcnr").Shared().GPU(8).RDMA(4).CPU("64").Obj())
	set, err := workload.LoadWorkload("workload.yaml", examples.Workload)
	if err != nil {
		t.Fatal(err)
	}
	s, err := sim.New(conf, cluster, sim.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Submit(set); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Run(100); err != nil {
		t.Fatal(err)
	}
	families, err := prometheus.DefaultGatherer.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	// Only a live scheduler exports these: the simulation starts no
	// informer, and rdmatopo_build_info is set by the vc-scheduler binary
	// (rdmatopology.SetBuildInfo). TestHAReplicasAlerts and
	// TestBuildInfoStamped (integration) read them from a running scheduler.
	for _, name := range []string{"rdmatopo_informer_synced", "rdmatopo_build_info"} {
		out[name] = true
	}
	for _, f := range families {
		name := f.GetName()
		out[name] = true
		if f.GetType().String() == "HISTOGRAM" {
			for _, suffix := range []string{"_bucket", "_sum", "_count"} {
				out[name+suffix] = true
			}
		}
	}
	return out
}

// checkNames fails for every rdmatopo metric an expression names that the
// scheduler does not export.
func checkNames(errorf func(string, ...any), where, expr string, have map[string]bool) int {
	names := metricName.FindAllString(expr, -1)
	for _, n := range names {
		if !have[n] {
			errorf("%s: metric %s is not exported by the scheduler (expr %q)", where, n, expr)
		}
	}
	return len(names)
}

func TestMonitoringFiles(t *testing.T) {
	have := exported(t)
	var known []string
	for n := range have {
		if strings.HasPrefix(n, "rdmatopo_") {
			known = append(known, n)
		}
	}
	sort.Strings(known)
	t.Logf("rdmatopo metrics exported: %s", strings.Join(known, ", "))

	cases := []struct {
		file  string
		check func(t *testing.T, data []byte)
	}{
		{"prometheusrule.yaml", func(t *testing.T, data []byte) {
			rules, err := LoadAlerts(filepath.Join(dir, "prometheusrule.yaml"))
			if err != nil {
				t.Fatal(err)
			}
			alerts := map[string]bool{}
			for _, r := range rules {
				if r.Alert == "" || r.Expr == "" || r.Labels["severity"] == "" || r.Annotations["summary"] == "" || r.Annotations["description"] == "" {
					t.Errorf("rule %+v: want alert, expr, a severity label, summary and description", r.Rule)
				}
				if alerts[r.Alert] {
					t.Errorf("alert %s defined twice", r.Alert)
				}
				alerts[r.Alert] = true
				if checkNames(t.Errorf, "alert "+r.Alert, r.Expr, have) == 0 {
					t.Errorf("alert %s names no rdmatopo metric: %q", r.Alert, r.Expr)
				}
			}
			for _, want := range []string{"RdmatopoConfInvalid", "RdmatopoInformerNotSynced", "RdmatopoHardGangsPending",
				"RdmatopoUnconfirmedNICsStuck", "RdmatopoNICMismatchesRising"} {
				if !alerts[want] {
					t.Errorf("alert %s is missing", want)
				}
			}
		}},
		{"grafana-dashboard.json", func(t *testing.T, data []byte) {
			var d dashboard
			if err := json.Unmarshal(data, &d); err != nil {
				t.Fatalf("parse: %v", err)
			}
			if d.Title == "" || d.UID == "" || len(d.Panels) == 0 {
				t.Fatalf("dashboard %q (uid %q) with %d panels", d.Title, d.UID, len(d.Panels))
			}
			for _, p := range d.Panels {
				if len(p.Targets) == 0 {
					t.Errorf("panel %q has no query", p.Title)
				}
				for _, q := range p.Targets {
					if checkNames(t.Errorf, "panel "+p.Title, q.Expr, have) == 0 {
						t.Errorf("panel %q: query names no rdmatopo metric: %q", p.Title, q.Expr)
					}
				}
			}
		}},
	}
	for _, tc := range cases {
		t.Run(tc.file, func(t *testing.T) {
			data, err := os.ReadFile(filepath.Join(dir, tc.file))
			if err != nil {
				t.Fatal(err)
			}
			tc.check(t, data)
		})
	}
}

// TestCheckNamesFails: a metric the scheduler does not export is reported.
func TestCheckNamesFails(t *testing.T) {
	cases := []struct {
		expr    string
		missing bool
	}{
		{"rdmatopo_conf_valid == 0", false},
		{"rdmatopo_no_such_metric > 0", true},
	}
	have := map[string]bool{"rdmatopo_conf_valid": true}
	for _, tc := range cases {
		var reported []string
		checkNames(func(f string, args ...any) { reported = append(reported, f) }, "case", tc.expr, have)
		if (len(reported) > 0) != tc.missing {
			t.Errorf("%q: reported missing = %v, want %v", tc.expr, len(reported) > 0, tc.missing)
		}
	}
}
