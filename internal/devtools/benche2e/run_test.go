package main

import (
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rdmatopo/rdmatopo/internal/devtools/bench/trace"
	"github.com/rdmatopo/rdmatopo/internal/workload"
)

func TestPerPod(t *testing.T) {
	for _, tc := range []struct {
		v    float64
		pods int
		want float64
	}{
		{v: 15.1, pods: 0, want: 0},
		{v: 0, pods: 1224, want: 0},
		{v: 12.24, pods: 1224, want: 0.01},
		{v: 3759, pods: 1224, want: 3759.0 / 1224},
	} {
		if got := perPod(tc.v, tc.pods); got != tc.want {
			t.Errorf("perPod(%v, %d) = %v, want %v", tc.v, tc.pods, got, tc.want)
		}
	}
}

func TestQuantile(t *testing.T) {
	sorted := []float64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}
	for _, tc := range []struct {
		in   []float64
		q    float64
		want float64
	}{
		{in: nil, q: 0.5, want: 0},
		{in: []float64{7}, q: 0.99, want: 7},
		{in: sorted, q: 0.5, want: 5},
		{in: sorted, q: 0.99, want: 10},
		{in: sorted, q: 0.1, want: 1},
	} {
		if got := quantile(tc.in, tc.q); got != tc.want {
			t.Errorf("quantile(%v, %v) = %v, want %v", tc.in, tc.q, got, tc.want)
		}
	}
}

func TestGangFloors(t *testing.T) {
	cluster := trace.NewCluster(200, 1)
	tc := trace.NewTrace(40, 1)
	floors, err := gangFloors(cluster, tc)
	if err != nil {
		t.Fatal(err)
	}
	counted := 0
	for _, g := range tc.Gangs {
		n, ok := floors[g.Name]
		rdma := g.Kind.Shape().NICs > 0 && g.Pods >= 2
		if ok != rdma {
			t.Errorf("gang %s (%d pods, %d NICs each): has a floor %v, want %v", g.Name, g.Pods, g.Kind.Shape().NICs, ok, rdma)
			continue
		}
		if !ok {
			continue
		}
		counted++
		// At least one leaf; at most one per NIC of the gang.
		if most := g.Pods * int(g.Kind.Shape().NICs); n < 1 || n > most {
			t.Errorf("gang %s: floor %d, want 1..%d", g.Name, n, most)
		}
	}
	if counted == 0 {
		t.Fatal("no RDMA gang of two pods or more in the trace")
	}

	// No node: a gang has no floor, and the error names it.
	none := &workload.Cluster{}
	if _, err := gangFloors(none, tc); err == nil || !strings.Contains(err.Error(), "floor of gang ") {
		t.Errorf("gangFloors on no nodes: err %v, want one naming the gang", err)
	}
}

func TestSaveURL(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/debug/pprof/heap" {
			http.NotFound(w, r)
			return
		}
		_, _ = io.WriteString(w, "heap profile bytes")
	}))
	defer srv.Close()
	dir := t.TempDir()

	path := filepath.Join(dir, "rdmatopo.heap-0005s.pprof")
	if err := saveURL(srv.Client(), srv.URL+"/debug/pprof/heap", path); err != nil {
		t.Fatal(err)
	}
	if got, err := os.ReadFile(path); err != nil || string(got) != "heap profile bytes" {
		t.Errorf("saved %q, %v; want the body", got, err)
	}

	// An answer other than 200 is an error naming the URL, and no file.
	missing := filepath.Join(dir, "missing.pprof")
	err := saveURL(srv.Client(), srv.URL+"/nowhere", missing)
	if err == nil || !strings.Contains(err.Error(), "/nowhere") || !strings.Contains(err.Error(), "404") {
		t.Errorf("saveURL of a missing page: %v, want an error naming the URL and the status", err)
	}
	if _, err := os.Stat(missing); !os.IsNotExist(err) {
		t.Errorf("saveURL of a missing page left a file: %v", err)
	}
}
