package sim

import (
	"fmt"
	"strings"

	"github.com/rdmatopo/rdmatopo/plugins/rdmatopology"
)

// Reinstall simulates rdmatopo being installed on a cluster where the named
// pods ("namespace/name", bound) already run: their rdmatopo.io/* and
// katalyst numa_bind_result annotations are removed, as if another
// scheduler had bound them, and the scheduler restarts (Restart), so the
// next session knows them only from what their nodes' KCNRs list. Their
// KCNR allocations stay.
func (s *Simulator) Reinstall(pods []string) error {
	for _, key := range pods {
		e, ok := s.pods[key]
		if !ok || e.deleted {
			return fmt.Errorf("pod %s does not exist", key)
		}
		if e.pod.Spec.NodeName == "" {
			return fmt.Errorf("pod %s is not bound", key)
		}
		p := s.podLists.copyPod(e.pod)
		for k := range p.Annotations {
			if strings.HasPrefix(k, "rdmatopo.io/") || k == rdmatopology.AnnotationNUMABindResult {
				delete(p.Annotations, k)
			}
		}
		p.ResourceVersion = s.nextRV()
		e.pod = p
	}
	s.Restart()
	return nil
}
