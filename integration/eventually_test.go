package integration

import (
	"context"
	"fmt"
	"testing"
	"time"
)

// pollInterval is how often eventually re-checks its condition.
const pollInterval = 250 * time.Millisecond

// eventually calls cond until it returns true or timeout passes; then the
// test fails with the last message cond gave. It also fails at once when a
// component has died, since waiting longer cannot help.
func eventually(t *testing.T, timeout time.Duration, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		ok, msg := cond()
		if ok {
			return
		}
		if env != nil {
			if err := env.Alive(); err != nil {
				t.Fatalf("%v; waiting for: %s", err, msg)
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("not within %s: %s", timeout, msg)
		}
		time.Sleep(pollInterval)
	}
}

// waitSchedulerCycles waits until the scheduler has completed n more
// scheduling cycles, calling check after each poll so that a test can fail
// as soon as something happens that must not (a pod bound too early).
func waitSchedulerCycles(t *testing.T, e *Env, n int64, check func()) {
	t.Helper()
	ctx := context.Background()
	start, err := e.SchedulerCycles(ctx)
	if err != nil {
		t.Fatalf("read scheduler metrics: %v", err)
	}
	eventually(t, time.Duration(n)*10*time.Second+30*time.Second, func() (bool, string) {
		check()
		now, err := e.SchedulerCycles(ctx)
		if err != nil {
			return false, fmt.Sprintf("read scheduler metrics: %v", err)
		}
		return now >= start+n, fmt.Sprintf("%d of %d scheduling cycles done", now-start, n)
	})
}
