package kubectlcmd

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

func TestDashboardHandler(t *testing.T) {
	reads := 0
	h := NewDashboard(func(context.Context) (*State, error) {
		reads++
		return &State{Generated: "now", SVG: "<svg/>", Jobs: []StateJob{}}, nil
	}, time.Minute)
	cases := []struct {
		method, path string
		code         int
		contains     string
	}{
		{http.MethodGet, "/", http.StatusOK, "setTimeout(refresh, interval)"},
		{http.MethodGet, "/api/state.json", http.StatusOK, `"svg":"\u003csvg/\u003e"`},
		{http.MethodGet, "/api/map.svg", http.StatusOK, "<svg/>"},
		{http.MethodGet, "/healthz", http.StatusOK, "ok"},
		{http.MethodGet, "/nothing", http.StatusNotFound, ""},
		{http.MethodPost, "/api/state.json", http.StatusMethodNotAllowed, "read-only"},
		{http.MethodDelete, "/", http.StatusMethodNotAllowed, "read-only"},
	}
	for _, tc := range cases {
		t.Run(tc.method+" "+tc.path, func(t *testing.T) {
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, httptest.NewRequest(tc.method, tc.path, nil))
			if rec.Code != tc.code || !strings.Contains(rec.Body.String(), tc.contains) {
				t.Errorf("%d %q, want %d containing %q", rec.Code, rec.Body.String(), tc.code, tc.contains)
			}
		})
	}
	if reads != 1 {
		t.Errorf("the cluster was read %d times for requests within the refresh interval, want 1", reads)
	}
}

func TestCheckOutput(t *testing.T) {
	cases := []struct {
		got string
		ok  bool
	}{{"table", true}, {"json", true}, {"yaml", true}, {"wide", false}, {"", false}}
	for _, tc := range cases {
		if err := CheckOutput(tc.got, OutputTable, OutputJSON, OutputYAML); (err == nil) != tc.ok {
			t.Errorf("-o %q: error %v, want ok %v", tc.got, err, tc.ok)
		}
	}
}
