package soak

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/rdmatopo/rdmatopo/internal/sim/nodeagent"
)

// TestSoakSmall is the `make test` soak: 300 gangs on 16 nodes with 5% bind
// failures, a 3-cycle KCNR lag, a restart every 100 jobs and a node drained
// every 25 cycles. It must find no violation, and must actually have
// exercised every fault. The node agent follows the plan (exact): the
// test covers the scheduler's faults, not a node that decides otherwise.
func TestSoakSmall(t *testing.T) {
	res, err := Run(Config{Jobs: 300, BindFailureRate: 0.05, KCNRLag: 3, RestartEvery: 100, DrainEvery: 25, Seed: 1,
		NodeAgent: nodeagent.Exact})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	t.Logf("%+v", *res)
	for _, v := range res.Found {
		t.Errorf("violation: %s", v)
	}
	if res.PlanRefused != 0 {
		t.Errorf("%d planned nodes refused by the predicates, want 0", res.PlanRefused)
	}
	if res.Restarts != 3 {
		t.Errorf("restarts = %d, want 3", res.Restarts)
	}
	if res.BindFailures == 0 || res.Drains == 0 {
		t.Errorf("faults not exercised: bindFailures=%d drains=%d", res.BindFailures, res.Drains)
	}
	if got := res.JobsCompleted + res.JobsKilled; got != 300 {
		t.Errorf("jobs completed + killed = %d, want 300", got)
	}
}

// TestSoakBlindAgent: 200 gangs with the same faults on nodes whose agent
// ignores the scheduler's hints (blind). The scheduler adopts what the
// KCNRs list: no violation, every listed pod's reservation equal to its
// KCNR entry, and the node's choices actually differ from the plan.
func TestSoakBlindAgent(t *testing.T) {
	res, err := Run(Config{Jobs: 200, BindFailureRate: 0.05, KCNRLag: 3, RestartEvery: 100, DrainEvery: 25, Seed: 1,
		NodeAgent: nodeagent.Blind})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	t.Logf("%+v", *res)
	for _, v := range res.Found {
		t.Errorf("violation: %s", v)
	}
	if res.NICMismatches == 0 {
		t.Errorf("nicMismatches = 0: the blind agent never chose otherwise than planned")
	}
	if res.BindFailures == 0 || res.Restarts == 0 {
		t.Errorf("faults not exercised: bindFailures=%d restarts=%d", res.BindFailures, res.Restarts)
	}
}

func TestBindHookRate(t *testing.T) {
	for _, rate := range []float64{0, 0.05, 0.3} {
		t.Run(fmt.Sprint(rate), func(t *testing.T) {
			r := &runner{cfg: Config{BindFailureRate: rate, Seed: 7}, attempts: map[types.UID]int{}}
			const pods, attempts = 400, 5
			failed := 0
			for i := 0; i < pods; i++ {
				p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: Namespace, Name: fmt.Sprint("p", i), UID: types.UID(fmt.Sprint("uid-", i))}}
				for a := 0; a < attempts; a++ {
					if r.bindHook(p, "n1") != nil {
						failed++
					}
				}
			}
			got := float64(failed) / (pods * attempts)
			if got < rate*0.7 || got > rate*1.3 {
				t.Errorf("failure fraction %.3f, want about %.2f", got, rate)
			}
		})
	}
}

func TestMainFlags(t *testing.T) {
	cases := map[string]struct {
		args     []string
		wantCode int
		wantErr  string
	}{
		"unknown flag":      {args: []string{"--nope"}, wantCode: ExitUsage, wantErr: "flag provided but not defined"},
		"bad output":        {args: []string{"-o", "yaml"}, wantCode: ExitUsage, wantErr: "must be table or json"},
		"rate out of range": {args: []string{"--bind-failure-rate", "1"}, wantCode: ExitUsage, wantErr: "bind-failure-rate"},
		"negative lag":      {args: []string{"--kcnr-lag", "-1"}, wantCode: ExitUsage, wantErr: "kcnr-lag"},
		"zero jobs":         {args: []string{"--jobs", "0"}, wantCode: ExitUsage, wantErr: "jobs"},
		"stray argument":    {args: []string{"extra"}, wantCode: ExitUsage, wantErr: "unexpected argument"},
		"not a number":      {args: []string{"--seed", "x"}, wantCode: ExitUsage, wantErr: "invalid value"},
		"negative partial":  {args: []string{"--partial-grace", "-1"}, wantCode: ExitUsage, wantErr: "partial-grace"},
		"negative restart":  {args: []string{"--restart-every", "-3"}, wantCode: ExitUsage, wantErr: "restart-every"},
		"negative drains":   {args: []string{"--drain-every", "-3"}, wantCode: ExitUsage, wantErr: "drain-every"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			if code := Main(tc.args, &stdout, &stderr); code != tc.wantCode {
				t.Errorf("exit %d, want %d; stderr %q", code, tc.wantCode, stderr.String())
			}
			if !strings.Contains(stderr.String(), tc.wantErr) {
				t.Errorf("stderr %q does not mention %q", stderr.String(), tc.wantErr)
			}
		})
	}
}

func TestMainJSON(t *testing.T) {
	var stdout, stderr bytes.Buffer
	code := Main([]string{"--jobs", "20", "--bind-failure-rate", "0", "--restart-every", "10", "--seed", "3", "-o", "json"}, &stdout, &stderr)
	if code != ExitOK {
		t.Fatalf("exit %d; stderr %q", code, stderr.String())
	}
	var got map[string]interface{}
	if err := json.Unmarshal(stdout.Bytes(), &got); err != nil {
		t.Fatalf("stdout is not one JSON object: %v\n%s", err, stdout.String())
	}
	for _, key := range []string{"jobs", "cycles", "restarts", "bindFailures", "violations", "doubleBookedNICs", "partialGangs", "hardLimitBreaches",
		"kcnrDivergences", "nicMismatches", "realizedWider"} {
		if _, ok := got[key]; !ok {
			t.Errorf("JSON lacks %q: %s", key, stdout.String())
		}
	}
	want := map[string]interface{}{"jobs": 20.0, "restarts": 2.0, "bindFailures": 0.0, "violations": 0.0}
	sub := map[string]interface{}{}
	for k := range want {
		sub[k] = got[k]
	}
	if diff := cmp.Diff(want, sub); diff != "" {
		t.Errorf("result (-want +got):\n%s", diff)
	}
}

// TestSoakPriorities: 300 gangs of three priority classes with the same
// faults, bursts of high-priority hard gangs and max-wait on some hard
// gangs, on nodes whose agent picks NICs in the hinted zone (numa). The
// scheduler preempts: no violation (no pod of equal or higher priority
// evicted, no victim gang left partial), and preemption, resubmission and
// relaxation all happened.
func TestSoakPriorities(t *testing.T) {
	res, err := Run(Config{Jobs: 300, BindFailureRate: 0.05, KCNRLag: 3, RestartEvery: 100, DrainEvery: 25, Seed: 1,
		Priorities: true})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	t.Logf("%+v", *res)
	for _, v := range res.Found {
		t.Errorf("violation: %s", v)
	}
	if res.EvictedPods == 0 || res.Resubmitted == 0 || res.Relaxed == 0 {
		t.Errorf("not exercised: evictedPods=%d resubmitted=%d relaxed=%d", res.EvictedPods, res.Resubmitted, res.Relaxed)
	}
	if res.Restarts != 3 || res.BindFailures == 0 || res.Drains == 0 {
		t.Errorf("faults not exercised: restarts=%d bindFailures=%d drains=%d", res.Restarts, res.BindFailures, res.Drains)
	}
}
