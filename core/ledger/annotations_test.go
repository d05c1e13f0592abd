package ledger_test

import (
	"errors"
	"strings"
	"testing"
	"unicode"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/rdmatopo/rdmatopo/core/ledger"
	"github.com/rdmatopo/rdmatopo/core/topology"
)

func TestParseNICs(t *testing.T) {
	cases := map[string]struct {
		in      string
		want    []topology.NICID
		wantErr bool
	}{
		"empty":                      {in: ""},
		"one":                        {in: "0000:1a:00.0", want: []topology.NICID{"0000:1a:00.0"}},
		"upper case":                 {in: "0000:1A:00.0,0000:3F:00.1", want: []topology.NICID{"0000:1a:00.0", "0000:3f:00.1"}},
		"order kept":                 {in: "0000:e7:00.0,0000:1a:00.0", want: []topology.NICID{"0000:e7:00.0", "0000:1a:00.0"}},
		"device names kept as named": {in: "mlx5_0,MLX5_1", want: []topology.NICID{"mlx5_0", "MLX5_1"}},
		"short address":              {in: "1a:00.0,3F:00.0", want: []topology.NICID{"1a:00.0", "3f:00.0"}},
		"interface name":             {in: "eth0", want: []topology.NICID{"eth0"}},
		"synthetic ids of a node without NIC topology": {in: "rdma-0,rdma-11", want: []topology.NICID{"rdma-0", "rdma-11"}},
		"odd names are names":                          {in: "rdma-01,0000-1a:00.0", want: []topology.NICID{"rdma-01", "0000-1a:00.0"}},
		"duplicate":                                    {in: "0000:1a:00.0,0000:1A:00.0", wantErr: true},
		"duplicate device name":                        {in: "mlx5_0,mlx5_0", wantErr: true},
		"empty item":                                   {in: "0000:1a:00.0,,0000:3f:00.0", wantErr: true},
		"trailing comma":                               {in: "0000:1a:00.0,", wantErr: true},
		"spaces only":                                  {in: "  ", wantErr: true},
		"stray space after the separator":              {in: "mlx5_0, mlx5_1", wantErr: true},
		"space inside a name":                          {in: "mlx5 0", wantErr: true},
		"tab":                                          {in: "mlx5_0\t", wantErr: true},
		"not UTF-8":                                    {in: "mlx5_\xff", wantErr: true},
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

// FuzzAnnotations checks that the parsers never panic, that every value a
// parser accepts survives Format then Parse unchanged, and that any list of
// NIC names without the separator or whitespace round-trips through
// FormatNICs and ParseNICs (lower case, as the fabric names NICs).
func FuzzAnnotations(f *testing.F) {
	for _, seed := range []string{
		"", "0000:1a:00.0", "0000:1A:00.0,0000:3f:00.0", "0,1", " 1 , 0 ", "a,,b", "0000:1a:00.0,0000:1a:00.0",
		"b6f73fb8fb523a512a30edf3c73b7ab********,985abf31e6b7bd2aef8dfe551406912********", "\xff,\x00", "-1",
		"mlx5_0", "mlx5_0,mlx5_1", "MLX5_0,mlx5_0", "1a:00.0", "1A:00.0,3f:00.0", "rdma-0,rdma-1", "rdma-01",
		"mlx5_0, mlx5_1", "mlx5 0", "eth0\t", "ib0:1,ib1:1", "İ,i̇", "ǅ,ǆ", "ß", "\u2028", "\u00a0mlx5_0",
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
		roundTripNames(t, s)
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

// roundTripNames cuts s into NIC names at whitespace and separators, keeps
// each (valid UTF-8) name once in the form the fabric gives it, and checks
// that FormatNICs then ParseNICs returns exactly those names.
func roundTripNames(t *testing.T, s string) {
	t.Helper()
	var names []topology.NICID
	seen := map[topology.NICID]bool{}
	for _, field := range strings.FieldsFunc(s, func(r rune) bool { return r == ',' || unicode.IsSpace(r) }) {
		id := ledger.NormalizeNIC(strings.ToValidUTF8(field, ""))
		if id == "" || seen[id] || strings.IndexFunc(string(id), func(r rune) bool { return r == ',' || unicode.IsSpace(r) }) >= 0 {
			continue
		}
		seen[id] = true
		names = append(names, id)
	}
	got, err := ledger.ParseNICs(ledger.FormatNICs(names))
	if err != nil {
		t.Fatalf("ParseNICs(FormatNICs(%q)): %v", names, err)
	}
	if diff := cmp.Diff(names, got, cmpopts.EquateEmpty()); diff != "" {
		t.Fatalf("names %q do not round-trip (-want +got):\n%s", names, diff)
	}
}
