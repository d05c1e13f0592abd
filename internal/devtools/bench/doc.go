// Package bench measures placement quality and scheduling cost of
// rdmatopo's scheduler conf against stock Volcano v1.10, side by side in one
// process, on one generated trace: a cluster of provider, rail or mixed
// cabling, or provider cabling with NICs of several RDMA units
// (trace.NewFabricCluster) with part of its capacity already taken, and
// gangs arriving over time and finishing after a random number of cycles.
//
// Both confs run in the same session loop (internal/sim, on Volcano's mock
// scheduler cache). For every placed multi-pod RDMA gang the package counts
// the S0 leaf switches its NICs span and compares that with the fewest S0s
// the gang could have used at the moment it was placed, computed by an
// exact search written apart from the placement planner (oracle.MinLeaves,
// package oracle) on the benchmark's own record of the fabric state.
//
// The packages below it: trace generates the cluster and the gangs;
// replay runs them under each conf; grade keeps the benchmark's own record
// of the fabric and grades each placed gang against oracle's optimum; plot
// draws the reports. This package is the CLI (rdmatopo-dev bench) and the
// report.
package bench
