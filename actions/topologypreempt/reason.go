package topologypreempt

import (
	"fmt"
	"strings"
)

// evictPrefix starts the reason of every eviction the action makes.
const evictPrefix = "preempted by gang "

// EvictReason is the reason the action gives each victim's eviction: it
// names the preempting gang ("namespace/podgroup") and its priority.
func EvictReason(preemptor string, priority int32) string {
	return fmt.Sprintf("%s%s (priority %d, %s)", evictPrefix, preemptor, priority, ActionName)
}

// PreemptorOf returns the preempting gang ("namespace/podgroup") an
// eviction reason of the action names; false for any other reason.
func PreemptorOf(reason string) (string, bool) {
	rest, ok := strings.CutPrefix(reason, evictPrefix)
	if !ok || !strings.HasSuffix(rest, ", "+ActionName+")") {
		return "", false
	}
	i := strings.LastIndex(rest, " (priority ")
	if i <= 0 {
		return "", false
	}
	return rest[:i], true
}
