package workload

import (
	"errors"
	"os"
	"strings"
	"testing"
)

// seedFuzz adds the example inputs and small documents to a corpus.
func seedFuzz(f *testing.F, files ...string) {
	for _, name := range files {
		data, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	for _, s := range []string{pgDoc, podDoc, nodeDoc, pgDoc + "---\n" + podDoc, "kind: List\nitems: [1, {}]\n", "---\n---\n", "{}", "[]", "null"} {
		f.Add([]byte(s))
	}
}

// checkLoadError requires a failed load to be a one-line InputError naming
// the file.
func checkLoadError(t *testing.T, err error) {
	if err == nil {
		return
	}
	var ie *InputError
	if !errors.As(err, &ie) {
		t.Fatalf("error is %T, not *InputError: %v", err, err)
	}
	if msg := err.Error(); !strings.HasPrefix(msg, "f.yaml: ") || strings.Contains(msg, "\n") {
		t.Fatalf("error must be one line naming the file: %q", msg)
	}
}

func FuzzLoadWorkload(f *testing.F) {
	seedFuzz(f, "../../examples/workload.yaml", "../../examples/volcanojob.yaml", "../../examples/pytorchjob.yaml", "../../examples/trainjob.yaml")
	f.Fuzz(func(t *testing.T, data []byte) {
		_, err := LoadWorkload("f.yaml", data)
		checkLoadError(t, err)
	})
}

func FuzzLoadCluster(f *testing.F) {
	seedFuzz(f, "../../examples/cluster.yaml", "../../examples/hypernodes.yaml")
	f.Fuzz(func(t *testing.T, data []byte) {
		_, err := LoadCluster("f.yaml", data)
		checkLoadError(t, err)
	})
}
