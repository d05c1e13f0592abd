package main

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"volcano.sh/volcano/pkg/scheduler/api"
)

func TestBindConcurrency(t *testing.T) {
	for in, want := range map[string]int{"": DefaultBindConcurrency, "0": 0, "5": 5} {
		if got, err := bindConcurrency(in); err != nil || got != want {
			t.Errorf("bindConcurrency(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, bad := range []string{"-1", "x", "1.5"} {
		if _, err := bindConcurrency(bad); err == nil {
			t.Errorf("bindConcurrency(%q): no error", bad)
		}
	}
}

// TestBoundedBinderLimitsInFlight: 40 concurrent bind goroutines (as
// Volcano starts them, one task each) never have more than the bound in
// flight at the API server, every pod is bound with its annotations, and
// failures are reported per task.
func TestBoundedBinderLimitsInFlight(t *testing.T) {
	var inFlight, peak atomic.Int32
	var mu sync.Mutex
	got := map[string]*v1.Binding{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := inFlight.Add(1)
		defer inFlight.Add(-1)
		for {
			p := peak.Load()
			if n <= p || peak.CompareAndSwap(p, n) {
				break
			}
		}
		time.Sleep(10 * time.Millisecond)
		var b v1.Binding
		if err := json.NewDecoder(r.Body).Decode(&b); err != nil || !strings.HasSuffix(r.URL.Path, "/binding") {
			http.Error(w, "bad request", http.StatusBadRequest)
			return
		}
		mu.Lock()
		got[b.Name] = &b
		mu.Unlock()
		if b.Name == "p-13" {
			http.Error(w, "injected", http.StatusConflict)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		_ = json.NewEncoder(w).Encode(&b)
	}))
	defer srv.Close()
	client, err := kubernetes.NewForConfig(&rest.Config{Host: srv.URL, QPS: -1})
	if err != nil {
		t.Fatal(err)
	}
	b := newBoundedBinder(4)
	var wg sync.WaitGroup
	failed := map[api.TaskID]string{}
	var fmu sync.Mutex
	for i := range 40 {
		name := "p-" + strconv.Itoa(i)
		task := &api.TaskInfo{UID: api.TaskID(name), Pod: &v1.Pod{ObjectMeta: metav1.ObjectMeta{
			Namespace: "ns", Name: name, UID: types.UID("uid-" + name), Annotations: map[string]string{"rdmatopo.io/nics": "0000:1a:00.0"}}}}
		task.NodeName = "n1"
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs := b.Bind(client, []*api.TaskInfo{task})
			fmu.Lock()
			for k, v := range errs {
				failed[k] = v
			}
			fmu.Unlock()
		}()
	}
	wg.Wait()
	if p := peak.Load(); p > 4 || p < 2 {
		t.Errorf("peak binds in flight = %d; want 2..4", p)
	}
	if len(got) != 40 {
		t.Fatalf("%d Bindings; want 40", len(got))
	}
	if b := got["p-7"]; b.Target.Name != "n1" || b.UID != "uid-p-7" || b.Annotations["rdmatopo.io/nics"] != "0000:1a:00.0" {
		t.Errorf("Binding p-7 = %+v", b)
	}
	if len(failed) != 1 || failed["p-13"] == "" {
		t.Errorf("failed = %v; want only p-13", failed)
	}
}
