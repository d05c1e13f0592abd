// Package plot reads the bench's JSON reports (`rdmatopo-dev bench -o json`,
// one per cluster size) and draws them as an SVG chart of session seconds
// and atOptimumFrac against the node count, one line per conf. The
// bench-plot command (hack/bench-plot) and `make bench-plot` use it.
package plot
