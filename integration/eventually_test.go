package integration

import (
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
