package monitoring

import (
	"bytes"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/expfmt"

	"github.com/rdmatopo/rdmatopo/config"
	"github.com/rdmatopo/rdmatopo/examples"
	"github.com/rdmatopo/rdmatopo/internal/sim"
	"github.com/rdmatopo/rdmatopo/internal/sim/nodeagent"
	"github.com/rdmatopo/rdmatopo/internal/workload"
)

// gatherScrape renders the process's registry (what the scheduler's
// endpoint serves) as a scrape at the simulated time.
func gatherScrape(t *testing.T, at time.Time) Scrape {
	t.Helper()
	families, err := prometheus.DefaultGatherer.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	for _, f := range families {
		if _, err := expfmt.MetricFamilyToText(&buf, f); err != nil {
			t.Fatal(err)
		}
	}
	samples, err := ParseScrape(&buf)
	if err != nil {
		t.Fatal(err)
	}
	return Scrape{Instance: "leader", Time: at, Samples: samples}
}

// fillerGang is a soft gang of two 4 GPU + 2 RDMA pods.
func fillerGang(i int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "apiVersion: scheduling.volcano.sh/v1beta1\nkind: PodGroup\nmetadata: {name: filler-%d, namespace: default}\nspec: {minMember: 2}\n", i)
	for p := 0; p < 2; p++ {
		fmt.Fprintf(&b, "---\napiVersion: v1\nkind: Pod\nmetadata: {name: filler-%d-%d, namespace: default, annotations: {scheduling.k8s.io/group-name: filler-%d}}\n", i, p, i)
		b.WriteString("spec: {schedulerName: volcano, containers: [{name: c, resources: {limits: {cpu: \"8\", memory: 32Gi, nvidia.com/gpu: \"4\", vke.volcengine.com/rdma: \"2\"}}}]}\n")
	}
	return b.String()
}

// fillingRun runs the scheduler's sessions on the sample cluster and
// workload (its hard gang vision-hard waits for one S0), one cycle a
// minute for 40 minutes, while soft gangs arrive in the first 20 until no
// NIC is free, and scrapes the process's metrics after every cycle. agent
// plays katalyst's node agent (the KCNRs list each bound pod); "" leaves
// the KCNRs as they are, as a cluster without katalyst does.
func fillingRun(t *testing.T, agent nodeagent.Mode) (History, map[string]bool) {
	t.Helper()
	conf, err := sim.ParseConf(config.SchedulerConf)
	if err != nil {
		t.Fatal(err)
	}
	cluster, err := workload.LoadCluster("cluster.yaml", examples.Cluster)
	if err != nil {
		t.Fatal(err)
	}
	set, err := workload.LoadWorkload("workload.yaml", examples.Workload)
	if err != nil {
		t.Fatal(err)
	}
	s, err := sim.New(conf, cluster, sim.Options{Period: time.Minute, NodeAgent: agent})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Submit(set); err != nil {
		t.Fatal(err)
	}
	var h History
	reasons := map[string]bool{}
	for cycle := 0; cycle < 40; cycle++ {
		if cycle > 0 && cycle <= 20 {
			filler, err := workload.LoadWorkload(fmt.Sprintf("filler-%d.yaml", cycle), []byte(fillerGang(cycle)))
			if err != nil {
				t.Fatal(err)
			}
			if err := s.Submit(filler); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := s.RunCycle(); err != nil {
			t.Fatal(err)
		}
		sc := gatherScrape(t, s.Now())
		h = append(h, sc)
		for _, x := range sc.Samples {
			if x.Name == "rdmatopo_gangs_pending" && x.Value > 0 {
				reasons[x.Labels["reason"]] = true
			}
		}
	}
	for _, x := range h[len(h)-1].Samples {
		if x.Name == "rdmatopo_free_nics" && x.Value > 0 {
			t.Errorf("the cluster did not fill: %v free NICs in S1 %q", x.Value, x.Labels["s1"])
		}
	}
	return h, reasons
}

// TestShippedAlertsOnAFillingCluster evaluates the shipped alerts on the
// metrics of fillingRun. With the node agent, the hard gang's reason moves
// from TierLimit to NoCapacity as the cluster fills and
// RdmatopoHardGangsPending fires after 30 minutes all the same, while the
// alerts of a broken install do not. Without it (no katalyst), no bound
// pod is ever listed and RdmatopoUnconfirmedNICsStuck fires, as
// docs/metrics.md says.
func TestShippedAlertsOnAFillingCluster(t *testing.T) {
	alerts, err := LoadAlerts(filepath.Join(dir, "prometheusrule.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	firing := func(h History) []string {
		var got []string
		for _, a := range alerts {
			if len(a.Parsed.Firing(h)) > 0 {
				got = append(got, a.Alert)
			}
		}
		return got
	}

	h, reasons := fillingRun(t, nodeagent.Default)
	if !reasons["TierLimit"] || !reasons["NoCapacity"] {
		t.Errorf("pending reasons seen %v: want the hard gang's TierLimit, then NoCapacity once the cluster is full", reasons)
	}
	got := firing(h)
	if !slices.Contains(got, "RdmatopoHardGangsPending") {
		t.Errorf("alerts firing %v: want RdmatopoHardGangsPending for the hard gang waiting 40 minutes", got)
	}
	for _, broken := range []string{"RdmatopoConfInvalid", "RdmatopoUnconfirmedNICsStuck", "RdmatopoGangsInvalidAnnotation", "RdmatopoNICMismatchesRising"} {
		if slices.Contains(got, broken) {
			t.Errorf("alert %s fires on a healthy filling cluster (firing: %v)", broken, got)
		}
	}

	h, _ = fillingRun(t, "")
	if got := firing(h); !slices.Contains(got, "RdmatopoUnconfirmedNICsStuck") {
		t.Errorf("without a node agent, alerts firing %v: want RdmatopoUnconfirmedNICsStuck", got)
	}
}
