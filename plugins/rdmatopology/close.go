package rdmatopology

// Session close (Volcano's OnSessionClose): each RDMA gang's outcome written
// on its PodGroup.

import (
	"encoding/json"
	"fmt"
	"strings"

	v1 "k8s.io/api/core/v1"

	"github.com/rdmatopo/rdmatopo/core/ledger"
)

// close writes each RDMA gang's outcome on its PodGroup: the placement
// annotation and a True condition once placed, a False condition with the
// reason while it waits. User-set placement annotations are replaced. The
// runtime is handed the pods of RDMA gangs the session sent to bind
// (rebind.go).
func (s *SessionState) close() {
	defer s.observeSession()
	s.reportReplacements()
	s.noteSent()
	for _, job := range s.ssn.Jobs {
		if job.PodGroup == nil {
			continue
		}
		if !s.isRDMAJob(job) {
			if _, forged := job.PodGroup.Annotations[ledger.AnnotationPlacement]; forged {
				s.setPlacement(job, "")
			}
			s.closeConfined(job)
			continue
		}
		h := s.realized(job.UID)
		if h.Empty() {
			s.setPlacement(job, "")
		} else {
			sum := summarize(h)
			ann := PlacementAnnotation{GangPlacement: sum, RingCrossings: s.ringCrossings(job)}
			ann.Planned = s.plannedFor(job, ann)
			data, _ := json.Marshal(ann)
			s.setPlacement(job, string(data))
			if _, err := s.contract(job); err == nil && int32(h.Pods) > 0 && job.ReadyTaskNum() >= job.MinAvailable {
				s.setCondition(job, v1.ConditionTrue, ReasonPlaced,
					fmt.Sprintf("placed at tier %s on %d node(s) under S0 %s", ann.Tier, len(h.Nodes), strings.Join(ann.S0, ","))+s.overrideNote(job))
			}
		}
		_, cerr := s.contract(job)
		s.mu.Lock()
		f := s.failures[job.UID]
		s.mu.Unlock()
		waiting := f != nil && job.ReadyTaskNum() < job.MinAvailable
		note := s.waitNote(job, waiting && cerr == nil, boundTasks(job) >= int(job.MinAvailable))
		switch {
		case cerr != nil:
			// Never placed under a contract it does not have: one stable
			// False condition (one Event), whether or not pods run.
			s.setCondition(job, v1.ConditionFalse, ReasonInvalid, cerr.Error())
		case waiting:
			s.setCondition(job, v1.ConditionFalse, string(f.Code), f.Message+note+s.overrideNote(job))
		}
	}
}
