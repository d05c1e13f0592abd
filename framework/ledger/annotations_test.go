package ledger_test

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/rdmatopo/rdmatopo/framework/ledger"
	"github.com/rdmatopo/rdmatopo/framework/topology"
)

func TestParseNICs(t *testing.T) {
	cases := map[string]struct {
		in      string
		want    []topology.NICID
		wantErr bool
	}{
		"empty":           {in: ""},
		"spaces only":     {in: "  "},
		"one":             {in: "0000:1a:00.0", want: []topology.NICID{"0000:1a:00.0"}},
		"upper case":      {in: "0000:1A:00.0, 0000:3F:00.1", want: []topology.NICID{"0000:1a:00.0", "0000:3f:00.1"}},
		"order kept":      {in: "0000:e7:00.0,0000:1a:00.0", want: []topology.NICID{"0000:e7:00.0", "0000:1a:00.0"}},
		"duplicate":       {in: "0000:1a:00.0,0000:1A:00.0", wantErr: true},
		"empty item":      {in: "0000:1a:00.0,,0000:3f:00.0", wantErr: true},
		"trailing comma":  {in: "0000:1a:00.0,", wantErr: true},
		"not hex":         {in: "0000:1g:00.0", wantErr: true},
		"short":           {in: "000:1a:00.0", wantErr: true},
		"wrong separator": {in: "0000-1a:00.0", wantErr: true},
		"interface name":  {in: "eth0", wantErr: true},
		"synthetic ids of a node without NIC topology": {in: "rdma-0,rdma-11", want: []topology.NICID{"rdma-0", "rdma-11"}},
		"synthetic id with a sign":                     {in: "rdma--1", wantErr: true},
		"synthetic id with a leading zero":             {in: "rdma-01", wantErr: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := ledger.ParseNICs(tc.in)
			if tc.wantErr {
				if !errors.Is(err, ledger.ErrBadAnnotation) {
					t.Fatalf("ParseNICs(%q) error = %v, want ErrBadAnnotation", tc.in, err)
				}
				return
			}
			if err != nil {
				t.Fatalf("ParseNICs(%q): %v", tc.in, err)
			}
			if diff := cmp.Diff(tc.want, got, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("ParseNICs(%q) (-want +got):\n%s", tc.in, diff)
			}
		})
	}
}

func TestParseNUMA(t *testing.T) {
	cases := map[string]struct {
		in      string
		want    []int
		wantErr bool
	}{
		"empty":     {in: ""},
		"one":       {in: "0", want: []int{0}},
		"two":       {in: "1, 0", want: []int{1, 0}},
		"negative":  {in: "-1", wantErr: true},
		"plus":      {in: "+1", wantErr: true},
		"word":      {in: "zero", wantErr: true},
		"too large": {in: "9999999", wantErr: true},
		"duplicate": {in: "1,1", wantErr: true},
		"empty one": {in: "1,", wantErr: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := ledger.ParseNUMA(tc.in)
			if tc.wantErr {
				if !errors.Is(err, ledger.ErrBadAnnotation) {
					t.Fatalf("ParseNUMA(%q) error = %v, want ErrBadAnnotation", tc.in, err)
				}
				return
			}
			if err != nil {
				t.Fatalf("ParseNUMA(%q): %v", tc.in, err)
			}
			if diff := cmp.Diff(tc.want, got, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("ParseNUMA(%q) (-want +got):\n%s", tc.in, diff)
			}
		})
	}
}

func TestParseS0(t *testing.T) {
	got, err := ledger.ParseS0("b6f7, b6f7,unknown:n1/0000:1a:00.0")
	if err != nil {
		t.Fatal(err)
	}
	want := []topology.S0ID{"b6f7", "b6f7", "unknown:n1/0000:1a:00.0"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("ParseS0 (-want +got):\n%s", diff)
	}
	if _, err := ledger.ParseS0("a,,b"); !errors.Is(err, ledger.ErrBadAnnotation) {
		t.Errorf("ParseS0 with an empty item: error = %v", err)
	}
	if ledger.FormatS0(want) != "b6f7,b6f7,unknown:n1/0000:1a:00.0" {
		t.Errorf("FormatS0 = %q", ledger.FormatS0(want))
	}
}

// FuzzAnnotations checks that the parsers never panic and that every value a
// parser accepts survives Format then Parse unchanged.
func FuzzAnnotations(f *testing.F) {
	for _, seed := range []string{
		"", "0000:1a:00.0", "0000:1A:00.0,0000:3f:00.0", "0,1", " 1 , 0 ", "a,,b", "0000:1a:00.0,0000:1a:00.0",
		"b6f73fb8fb523a512a30edf3c73b7ab********,985abf31e6b7bd2aef8dfe551406912********", "\xff,\x00", "-1",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if nics, err := ledger.ParseNICs(s); err == nil {
			back, err := ledger.ParseNICs(ledger.FormatNICs(nics))
			if err != nil {
				t.Fatalf("ParseNICs(FormatNICs(%q)): %v", nics, err)
			}
			if diff := cmp.Diff(nics, back, cmpopts.EquateEmpty()); diff != "" {
				t.Fatalf("NIC round trip (-first +second):\n%s", diff)
			}
		}
		if numa, err := ledger.ParseNUMA(s); err == nil {
			back, err := ledger.ParseNUMA(ledger.FormatNUMA(numa))
			if err != nil {
				t.Fatalf("ParseNUMA(FormatNUMA(%v)): %v", numa, err)
			}
			if diff := cmp.Diff(numa, back, cmpopts.EquateEmpty()); diff != "" {
				t.Fatalf("NUMA round trip (-first +second):\n%s", diff)
			}
		}
		if s0, err := ledger.ParseS0(s); err == nil {
			back, err := ledger.ParseS0(ledger.FormatS0(s0))
			if err != nil {
				t.Fatalf("ParseS0(FormatS0(%q)): %v", s0, err)
			}
			if diff := cmp.Diff(s0, back, cmpopts.EquateEmpty()); diff != "" {
				t.Fatalf("S0 round trip (-first +second):\n%s", diff)
			}
		}
	})
}
