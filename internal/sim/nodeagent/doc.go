// Package nodeagent plays katalyst's node agent for the simulator, the soak
// test, the benchmark and the end-to-end driver: it chooses the NUMA zones
// and NICs a bound pod gets (Allot, in one of the Modes) and lists them in
// the node's KCNR (Record), or drops them once the pod is gone (Release),
// in the form the scheduler reads back. It is the only code of the
// project that writes KCNR allocations; every other caller decides only
// when the agent acts (at once, after a lag, or as its own process).
package nodeagent
