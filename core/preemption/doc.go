// Package preemption is the state preemption keeps between scheduling
// sessions, in plain Go (no scheduler framework): the holds of gangs that
// wait for resources (a preempting gang while its victims terminate, a
// partial gang's failed binds), the rooms claimed for waiting hard gangs,
// and the data the victim search orders evictions by.
//
// A Store lives as long as the scheduler's runtime. Each session applies the
// holds that still stand to its planner state through a View: a hold is a
// typed usage of the planner state (placement.State.AddHold), added when
// the View applies it and removed when the View hands it back for the gang
// to be allocated (Take), and nowhere else.
package preemption
