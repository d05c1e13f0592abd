package integration

import (
	"context"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rdmatopo/rdmatopo/integration/internal/harness"
	"github.com/rdmatopo/rdmatopo/internal/monitoring"
)

// replica is one vc-scheduler process of a leader-elected pair.
type replica struct {
	proc    *harness.Process
	metrics string
}

// startReplica starts rdmatopo's vc-scheduler with leader election on
// (short lease, so that a takeover fits in a test) and waits for its
// health endpoint, which a standby serves too.
func startReplica(ctx context.Context, t *testing.T, e *Env, name string) *replica {
	t.Helper()
	p, metrics, err := e.procs.StartVCScheduler(ctx, harness.VCScheduler{
		Name:       name,
		Binary:     e.binary("vc-scheduler"),
		Kubeconfig: e.schedulerKubeconfig,
		Conf:       e.SchedulerConf(),
		LeaderElection: []string{
			"--leader-elect=true",
			"--leader-elect-resource-namespace=volcano-system",
			"--leader-elect-lease-duration=4s",
			"--leader-elect-renew-deadline=3s",
			"--leader-elect-retry-period=1s",
		},
		Verbosity: 3,
		Timeout:   componentReadyTimeout,
	})
	if err != nil {
		t.Fatal(err)
	}
	return &replica{proc: p, metrics: "http://" + metrics + "/metrics"}
}

// scrape reads the replica's metrics.
func (r *replica) scrape(ctx context.Context) (monitoring.Scrape, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, r.metrics, nil)
	if err != nil {
		return monitoring.Scrape{}, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return monitoring.Scrape{}, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return monitoring.Scrape{}, fmt.Errorf("%s: %s", r.metrics, resp.Status)
	}
	samples, err := monitoring.ParseScrape(resp.Body)
	if err != nil {
		return monitoring.Scrape{}, fmt.Errorf("%s: %w", r.metrics, err)
	}
	return monitoring.Scrape{Instance: r.proc.Name, Time: time.Now(), Samples: samples}, nil
}

// value is the value of the series name{labels} in a scrape.
func value(s monitoring.Scrape, name string, labels map[string]string) (float64, bool) {
	for _, x := range s.Samples {
		if x.Name != name || len(x.Labels) != len(labels) {
			continue
		}
		match := true
		for k, v := range labels {
			match = match && x.Labels[k] == v
		}
		if match {
			return x.Value, true
		}
	}
	return 0, false
}

// TestHAReplicasAlerts runs two replicas with leader election, as the
// overlay does, and evaluates every shipped alert (config/monitoring) on
// both replicas' metrics: none may fire, while one replica leads and the
// other waits, and again after the leader dies and the standby takes over.
// The standby exports rdmatopo_leader 0 and none of the gauges a session
// sets.
func TestHAReplicasAlerts(t *testing.T) {
	e := requireEnv(t)
	ctx := context.Background()
	alerts, err := monitoring.LoadAlerts(filepath.Join(e.RepoRoot, "config", "monitoring", "prometheusrule.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	// The environment's scheduler (no leader election) makes way for the
	// pair, and comes back after the test.
	e.StopScheduler()
	e.scheduler = nil
	t.Cleanup(func() {
		if err := e.StartScheduler(context.Background()); err != nil {
			t.Errorf("restart the environment's scheduler: %v", err)
		}
	})
	replicas := []*replica{startReplica(ctx, t, e, "vc-scheduler-a"), startReplica(ctx, t, e, "vc-scheduler-b")}
	t.Cleanup(func() {
		for _, r := range replicas {
			r.proc.Stop()
		}
	})

	// checkRoles waits until exactly one live replica leads, with its
	// informer synced and conf valid, and the others stand by exporting
	// none of a session's gauges; then it evaluates the alerts on scrapes
	// of every live replica.
	checkRoles := func(live []*replica) *replica {
		t.Helper()
		var leader *replica
		var history monitoring.History
		eventually(t, 60*time.Second, func() (bool, string) {
			leader, history = nil, nil
			var roles []string
			for _, r := range live {
				s, err := r.scrape(ctx)
				if err != nil {
					return false, err.Error()
				}
				history = append(history, s)
				lead, ok := value(s, "rdmatopo_leader", map[string]string{})
				if !ok {
					return false, r.proc.Name + ": no rdmatopo_leader"
				}
				if lead == 1 {
					if leader != nil {
						return false, "two leaders"
					}
					leader = r
					synced, _ := value(s, "rdmatopo_informer_synced", map[string]string{"resource": "customnoderesources"})
					conf, _ := value(s, "rdmatopo_conf_valid", map[string]string{})
					if synced != 1 || conf != 1 {
						return false, fmt.Sprintf("%s leads, informer_synced %v conf_valid %v", r.proc.Name, synced, conf)
					}
				} else {
					for _, name := range []string{"rdmatopo_informer_synced", "rdmatopo_conf_valid", "rdmatopo_free_nics", "rdmatopo_topology_unknown_nics"} {
						for _, x := range s.Samples {
							if x.Name == name {
								return false, fmt.Sprintf("standby %s exports %s %v", r.proc.Name, name, x.Labels)
							}
						}
					}
				}
				roles = append(roles, fmt.Sprintf("%s leader=%v", r.proc.Name, lead))
			}
			if leader == nil {
				return false, "no leader yet: " + strings.Join(roles, ", ")
			}
			return true, ""
		})
		// A second round of scrapes, so that range expressions see more
		// than one sample per series.
		for _, r := range live {
			s, err := r.scrape(ctx)
			if err != nil {
				t.Fatal(err)
			}
			history = append(history, s)
		}
		for _, a := range alerts {
			if got := a.Parsed.Firing(history); len(got) > 0 {
				t.Errorf("alert %s (%s) fires on the replicas' metrics: %+v", a.Alert, a.Expr, got)
			}
		}
		return leader
	}

	leader := checkRoles(replicas)
	// The leader dies; the standby takes the lease once it expires.
	leader.proc.Stop()
	var rest []*replica
	for _, r := range replicas {
		if r != leader {
			rest = append(rest, r)
		}
	}
	if next := checkRoles(rest); next == leader {
		t.Fatalf("the stopped replica still leads")
	}
}
