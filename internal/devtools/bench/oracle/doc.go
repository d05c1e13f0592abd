// Package oracle is the benchmark's optimum: the fewest distinct S0 leaves
// all NICs of a gang can use on a given fabric state, for gangs of one pod
// shape (MinLeaves) and for gangs of several shapes with node constraints
// (MinLeavesGang), and among the placements on that many leaves the fewest
// S1s (OracleResult.S1s, s1.go). It imports nothing of the project, so the
// benchmark does not grade the placement planner with the planner's own
// answer; callers describe the state in the package's own types
// (OracleNode, OracleZone).
package oracle
