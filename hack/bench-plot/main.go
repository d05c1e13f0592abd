// Command plot renders bench JSON reports (the output of
// `rdmatopo-dev bench -o json`, one file per cluster size) as an SVG chart of
// session seconds and atOptimumFrac against the node count:
//
//	go run ./hack/bench-plot -o docs/bench-plot.svg docs/bench-1000.json docs/bench-4000.json
package main

import (
	"bytes"
	"flag"
	"fmt"
	"os"

	"github.com/rdmatopo/rdmatopo/internal/devtools/bench"
	"github.com/rdmatopo/rdmatopo/internal/devtools/bench/plot"
)

func main() {
	out := flag.String("o", "", "SVG file to write (default: stdout)")
	flag.Usage = func() {
		fmt.Fprintln(os.Stderr, "usage: plot [-o out.svg] bench.json...")
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() == 0 {
		flag.Usage()
		os.Exit(2)
	}
	var reports []*bench.Report
	for _, path := range flag.Args() {
		data, err := os.ReadFile(path)
		if err != nil {
			fmt.Fprintln(os.Stderr, "plot:", err)
			os.Exit(1)
		}
		reps, err := plot.ReadReports(bytes.NewReader(data))
		if err != nil {
			fmt.Fprintf(os.Stderr, "plot: %s: %v\n", path, err)
			os.Exit(1)
		}
		reports = append(reports, reps...)
	}
	var buf bytes.Buffer
	if err := plot.WriteSVG(&buf, reports); err != nil {
		fmt.Fprintln(os.Stderr, "plot:", err)
		os.Exit(1)
	}
	if *out == "" {
		_, _ = os.Stdout.Write(buf.Bytes())
		return
	}
	if err := os.WriteFile(*out, buf.Bytes(), 0o644); err != nil {
		fmt.Fprintln(os.Stderr, "plot:", err)
		os.Exit(1)
	}
}
