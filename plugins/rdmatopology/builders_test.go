package rdmatopology

import (
	"volcano.sh/volcano/pkg/scheduler/framework"

	"github.com/rdmatopo/rdmatopo/core/placement"
	"github.com/rdmatopo/rdmatopo/core/preemption"
	"github.com/rdmatopo/rdmatopo/core/topology"
)

// testSession returns the plugin's state in ssn (nil: an empty session)
// over the fabric f (nil: none), with the free view of rt's ledger as it
// stands and the ledger indexed, as a session opens without reconciling.
func testSession(rt *Runtime, ssn *framework.Session, f *topology.Fabric) *SessionState {
	if rt == nil {
		rt = NewRuntime(topology.Config{})
	}
	if ssn == nil {
		ssn = &framework.Session{}
	}
	s := newSession(rt, ssn, nil, f)
	rt.Ledger.Each(s.indexLocked)
	if f != nil {
		s.state = placement.NewState(f, rt.Ledger)
	}
	s.holds = preemption.NewView(s.state)
	return s
}
