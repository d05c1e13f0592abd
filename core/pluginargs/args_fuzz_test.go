package pluginargs

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// fuzzKeys are the keys the fuzzer picks from (the known ones, a near miss
// and an empty key); a selector past the list takes a raw fuzzed key.
var fuzzKeys = []string{ArgRDMAResource, ArgGPUResource, ArgS1NodeLabel, ArgWeight, "Weight", ""}

// fuzzArguments builds plugin arguments from fuzz input. spec is read two
// bytes per entry: a key selector and a value type; strs supplies the
// string values and raw keys ('|'-separated, used in turn), n and x the
// numbers. Values take every type a YAML or JSON decoder can produce, and
// some it cannot.
func fuzzArguments(spec []byte, strs string, n int64, x float64) map[string]any {
	parts := strings.Split(strs, "|")
	next := 0
	str := func() string {
		s := parts[next%len(parts)]
		next++
		return s
	}
	args := map[string]any{}
	for i := 0; i+1 < len(spec) && len(args) < 8; i += 2 {
		var key string
		if sel := int(spec[i]); sel < len(fuzzKeys) {
			key = fuzzKeys[sel]
		} else {
			key = str()
		}
		var v interface{}
		switch spec[i+1] % 12 {
		case 0:
			v = str()
		case 1:
			v = int(n)
		case 2:
			v = int32(n)
		case 3:
			v = n
		case 4:
			v = uint64(n)
		case 5:
			v = x
		case 6:
			v = n%2 == 0
		case 7:
			v = nil
		case 8:
			v = []interface{}{str(), n}
		case 9:
			v = map[string]interface{}{str(): x}
		case 10:
			v = float32(x)
		case 11:
			v = map[interface{}]interface{}{n: str()}
		}
		args[key] = v
	}
	return args
}

// FuzzParseArgs checks that Parse never panics, is deterministic, and
// that whatever it accepts is valid, has every field set and came only from
// known keys.
func FuzzParseArgs(f *testing.F) {
	f.Add([]byte{}, "", int64(0), 0.0)
	f.Add([]byte{0, 0, 1, 0, 2, 0, 3, 1}, "example.com/rdma|example.com/gpu|example.com/minipod", int64(3), 0.0)
	f.Add([]byte{3, 5}, "", int64(0), 2.0)
	f.Add([]byte{3, 5}, "", int64(0), 1.5)
	f.Add([]byte{3, 3}, "", int64(1)<<40, 0.0)
	f.Add([]byte{3, 4}, "", int64(-1), 0.0)
	f.Add([]byte{0, 0, 1, 0}, "same/name|same/name", int64(0), 0.0)
	f.Add([]byte{4, 1, 5, 0, 9, 0}, "x|y|z", int64(7), 0.0)
	f.Add([]byte{2, 0, 0, 7, 1, 8}, " | spaced |", int64(0), -0.0)
	f.Fuzz(func(t *testing.T, spec []byte, strs string, n int64, x float64) {
		in := fuzzArguments(spec, strs, n, x)
		a, err := Parse(in)
		b, err2 := Parse(in)
		if (err == nil) != (err2 == nil) || cmp.Diff(a, b) != "" {
			t.Fatalf("Parse is not deterministic on %#v: %v / %v", in, err, err2)
		}
		if err != nil {
			if a != nil {
				t.Fatalf("Parse(%#v) returned %+v with error %v", in, a, err)
			}
			return
		}
		if errs := a.Validate(field.NewPath("args")); len(errs) > 0 {
			t.Fatalf("Parse(%#v) accepted invalid args %+v: %v", in, a, errs.ToAggregate())
		}
		if a.RDMAResource == "" || a.GPUResource == "" || a.Weight < 1 || a.Weight > 100 {
			t.Fatalf("Parse(%#v) left a field unset: %+v", in, a)
		}
		for k := range in {
			switch k {
			case ArgRDMAResource, ArgGPUResource, ArgS1NodeLabel, ArgWeight:
			default:
				t.Fatalf("Parse(%#v) accepted unknown key %q", in, k)
			}
		}
	})
}
