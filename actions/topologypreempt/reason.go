package topologypreempt

import (
	"fmt"
	"strings"
)

// EvictReason is the reason topology-preempt gives each victim's eviction:
// it names the preempting gang ("namespace/podgroup") and its priority.
func EvictReason(preemptor string, priority int32) string {
	return preemptPolicy.evictReason(preemptor, priority)
}

// evictReason is the policy's eviction reason: "<verb> by gang <gang>
// (priority <p>, <action>)".
func (p *policy) evictReason(preemptor string, priority int32) string {
	return fmt.Sprintf("%s by gang %s (priority %d, %s)", p.verb, preemptor, priority, p.action)
}

// PreemptorOf returns the gang ("namespace/podgroup") an eviction reason
// of topology-preempt or topology-reclaim names; false for any other
// reason.
func PreemptorOf(reason string) (string, bool) {
	for _, p := range []*policy{preemptPolicy, reclaimPolicy} {
		rest, ok := strings.CutPrefix(reason, p.verb+" by gang ")
		if !ok || !strings.HasSuffix(rest, ", "+p.action+")") {
			continue
		}
		if i := strings.LastIndex(rest, " (priority "); i > 0 {
			return rest[:i], true
		}
	}
	return "", false
}
