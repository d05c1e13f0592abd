package integration

import (
	"context"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	schedulingv1beta1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"

	"github.com/rdmatopo/rdmatopo/internal/testing/harness"
	"github.com/rdmatopo/rdmatopo/internal/testing/monitoring"
	"github.com/rdmatopo/rdmatopo/plugins/rdmatopology"
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

// startReplicaPair starts replicas vc-scheduler-a and vc-scheduler-b, as
// the overlay runs them. The environment's scheduler (no leader election)
// makes way for the pair, and comes back after the test.
func startReplicaPair(ctx context.Context, t *testing.T, e *Env) []*replica {
	t.Helper()
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
	return replicas
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
	replicas := startReplicaPair(ctx, t, e)

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

// leaderAmong waits until exactly one of the replicas reports
// rdmatopo_leader 1 and has completed at least cycles scheduling cycles as
// leader, and returns it.
func leaderAmong(ctx context.Context, t *testing.T, live []*replica, cycles float64) *replica {
	t.Helper()
	var leader *replica
	eventually(t, 60*time.Second, func() (bool, string) {
		leader = nil
		for _, r := range live {
			s, err := r.scrape(ctx)
			if err != nil {
				return false, err.Error()
			}
			if lead, _ := value(s, "rdmatopo_leader", map[string]string{}); lead != 1 {
				continue
			}
			if leader != nil {
				return false, "two leaders"
			}
			if n, _ := value(s, cyclesMetric, map[string]string{}); n < cycles {
				return false, fmt.Sprintf("%s leads, %v of %v cycles done", r.proc.Name, n, cycles)
			}
			leader = r
		}
		return leader != nil, "no leader yet"
	})
	return leader
}

// podGang is a gang of plain pods of one shape and its PodGroup, made by
// the test (no minResources: Volcano's enqueue lets it in at once).
type podGang struct {
	Name     string
	Size     int32
	Shape    podShape
	Contract contract
}

// Create submits the PodGroup, then the pods, and returns when they exist.
func (g podGang) Create(t *testing.T, e *Env, ns string) {
	t.Helper()
	ctx := context.Background()
	pg := &schedulingv1beta1.PodGroup{
		ObjectMeta: metav1.ObjectMeta{Name: g.Name, Namespace: ns, Annotations: g.Contract.annotations()},
		Spec:       schedulingv1beta1.PodGroupSpec{MinMember: g.Size, Queue: "default"},
	}
	if _, err := e.Volcano.SchedulingV1beta1().PodGroups(ns).Create(ctx, pg, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create PodGroup %s/%s: %v", ns, g.Name, err)
	}
	for i := int32(0); i < g.Size; i++ {
		p := rdmaPod(ns, fmt.Sprintf("%s-%d", g.Name, i), g.Shape, map[string]string{groupNameAnnotation: g.Name})
		p.Labels = map[string]string{"gang": g.Name}
		if _, err := e.Kube.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatalf("create pod %s/%s: %v", ns, p.Name, err)
		}
	}
}

// Selector selects the gang's pods.
func (g podGang) Selector() metav1.ListOptions {
	return metav1.ListOptions{LabelSelector: "gang=" + g.Name}
}

// boundPods returns the names of the pods sel selects that have a node.
func boundPods(t *testing.T, e *Env, ns string, sel metav1.ListOptions) []string {
	t.Helper()
	var out []string
	for _, p := range listPods(t, e, ns, sel) {
		if p.Spec.NodeName != "" {
			out = append(out, p.Name+" on "+p.Spec.NodeName)
		}
	}
	return out
}

// TestHAFailoverKeepsClaims: an older hard-s0 gang that no eviction places
// (a job of its priority holds one of the only leaf's four slots) claims
// the leaf, and a younger gang of its priority, which fits the three free
// slots, is kept out. The leader is killed; the standby takes over, reads
// the claims back, and its first sessions keep the younger gang out too.
// Once the blocking job is gone, the older gang takes the whole leaf.
func TestHAFailoverKeepsClaims(t *testing.T) {
	e := requireEnv(t)
	ctx := context.Background()
	f := newFabric(t, e)
	ns := newNamespace(t, e)
	// One leaf of two nodes, both NUMA zones' NICs under it: four slots of
	// the trainer shape.
	for i := 1; i <= 2; i++ {
		f.AddNode(ctx, nodeSpec{Index: i, Leaves: [2]int{0, 0}})
	}
	replicas := startReplicaPair(ctx, t, e)
	first := leaderAmong(ctx, t, replicas, 1)

	blocker := podGang{Name: "blocker", Size: 1, Shape: trainer}
	blocker.Create(t, e, ns)
	f.RecordAllocations(ctx, waitBound(t, e, ns, blocker.Selector(), int(blocker.Size), placeTimeout))

	old := podGang{Name: "old", Size: 4, Shape: trainer, Contract: hardS0}
	old.Create(t, e, ns)
	// The claim is kept where the next leader reads it.
	eventually(t, placeTimeout, func() (bool, string) {
		cm, err := e.Kube.CoreV1().ConfigMaps("volcano-system").Get(ctx, rdmatopology.ClaimsConfigMap, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		data := cm.Data[rdmatopology.ClaimsKey(schedulerName)]
		return strings.Contains(data, `"name":"`+ns+`/old"`), "claims: " + data
	})

	// Claims order gangs by creation time, which the API server records to
	// the second: the younger gang is created in a later second.
	oldPG, err := e.Volcano.SchedulingV1beta1().PodGroups(ns).Get(ctx, old.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, 5*time.Second, func() (bool, string) {
		return time.Since(oldPG.CreationTimestamp.Time) > time.Second, "still the second old was created in"
	})
	young := podGang{Name: "young", Size: 2, Shape: trainer, Contract: hardS0}
	young.Create(t, e, ns)
	keptOut := func(who string) {
		t.Helper()
		eventually(t, placeTimeout, func() (bool, string) {
			pg, err := e.Volcano.SchedulingV1beta1().PodGroups(ns).Get(ctx, young.Name, metav1.GetOptions{})
			if err != nil {
				return false, err.Error()
			}
			c := condition(pg, placedCondition)
			return c != nil && strings.Contains(c.Message, "kept for "+ns+"/old"), who + ": " + describePodGroup(pg)
		})
		if got := boundPods(t, e, ns, young.Selector()); len(got) > 0 {
			t.Fatalf("%s: young bound %v, in the leaf old claimed", who, got)
		}
	}
	keptOut(first.proc.Name)

	// The leader dies without giving the lease up; the standby takes over
	// once it expires and runs its sessions.
	first.proc.Kill()
	var rest []*replica
	for _, r := range replicas {
		if r != first {
			rest = append(rest, r)
		}
	}
	next := leaderAmong(ctx, t, rest, 5)
	keptOut(next.proc.Name)

	// The blocker finishes: the older gang takes the whole leaf, the
	// younger one still waits.
	deletePods(t, e, ns, blocker.Selector())
	f.RecordAllocations(ctx, nil) // the node agent forgets it
	pods := waitBound(t, e, ns, old.Selector(), int(old.Size), placeTimeout)
	checkGangUnderOneS0(t, f, pods, old.Shape)
	if got := boundPods(t, e, ns, young.Selector()); len(got) > 0 {
		t.Errorf("young bound %v; the leaf is old's", got)
	}
}
