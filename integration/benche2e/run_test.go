package main

import "testing"

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
