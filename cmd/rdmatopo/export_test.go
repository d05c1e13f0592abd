package main

import (
	"bufio"
	"bytes"
	"io"
	"path/filepath"
	"strings"
	"testing"

	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	"github.com/rdmatopo/rdmatopo/core/topology"
	"github.com/rdmatopo/rdmatopo/internal/companion"
)

// TestExportHyperNodesOfTheSample: the sample's 16 nodes form four leaf
// groups (four nodes whose NICs share two leaves each) in two S1s; every
// HyperNode carries the companion's source label and decodes strictly.
func TestExportHyperNodesOfTheSample(t *testing.T) {
	code, out, errOut := runCLI(t, "export", "hypernodes")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	r := utilyaml.NewYAMLReader(bufio.NewReader(strings.NewReader(out)))
	tiers := map[int]int{}
	members := map[int]int{}
	for {
		doc, err := r.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if len(bytes.TrimSpace(doc)) == 0 {
			continue
		}
		hn := &topology.HyperNode{}
		if err := yaml.UnmarshalStrict(doc, hn); err != nil {
			t.Fatalf("decode %q: %v", doc, err)
		}
		if hn.Labels[companion.SourceLabel] != companion.SourceValue {
			t.Errorf("HyperNode %s: labels %v", hn.Name, hn.Labels)
		}
		tiers[hn.Spec.Tier]++
		members[hn.Spec.Tier] += len(hn.Spec.Members)
	}
	if tiers[1] != 4 || tiers[2] != 2 || members[1] != 16 || members[2] != 4 {
		t.Errorf("tiers %v, members %v; want 4 tier-1 HyperNodes of 16 nodes, 2 tier-2 of 4 groups", tiers, members)
	}
}

// TestExportTopologyLabels: one labelled Node fragment per RDMA node, and a
// table.
func TestExportTopologyLabels(t *testing.T) {
	code, out, errOut := runCLI(t, "export", "topology-labels")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if n := strings.Count(out, "kind: Node"); n != 16 {
		t.Errorf("%d Node fragments, want 16:\n%s", n, out)
	}
	if !strings.Contains(out, companion.LeafGroupLabel+": rdmatopo-lg-") || !strings.Contains(out, companion.S1GroupLabel+": rdmatopo-s1-minipod-a") {
		t.Errorf("labels missing:\n%s", out)
	}
	code, out, _ = runCLI(t, "export", "topology-labels", "-o", "table")
	if code != 0 || !strings.HasPrefix(out, "NODE") || strings.Count(out, "\n") != 17 {
		t.Errorf("table: exit %d:\n%s", code, out)
	}
}

// TestExportInputErrors: unusable input exits 2 with one line.
func TestExportInputErrors(t *testing.T) {
	root, _ := filepath.Abs("../..")
	tests := map[string]struct {
		args []string
		want string
	}{
		"nothing named":      {args: []string{"export"}, want: "hypernodes or topology-labels"},
		"unknown export":     {args: []string{"export", "racks"}, want: `unknown export "racks"`},
		"bad output":         {args: []string{"export", "hypernodes", "-o", "json"}, want: `-o "json"`},
		"file and live":      {args: []string{"export", "hypernodes", "--cluster", "x", "--kubeconfig", "y"}, want: "exclude each other"},
		"S1 from HyperNodes": {args: []string{"export", "hypernodes", "--scheduler-conf", filepath.Join(root, "examples", "volcano-scheduler-hypernodes.conf")}, want: "s1Source"},
		"missing cluster":    {args: []string{"export", "hypernodes", "--cluster", "/nonexistent.yaml"}, want: "cannot read"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			code, _, errOut := runCLI(t, tc.args...)
			if code != 2 || !strings.Contains(errOut, tc.want) || strings.Count(errOut, "\n") != 1 {
				t.Errorf("exit %d, stderr %q; want 2 and %q", code, errOut, tc.want)
			}
		})
	}
}

// TestCompanionOverlayConf: the conf the companion overlay ships is one the
// companion accepts.
func TestCompanionOverlayConf(t *testing.T) {
	conf := filepath.Join("..", "..", "config", "kustomize", "companion", "volcano-scheduler.conf")
	if code, _, errOut := runCLI(t, "export", "hypernodes", "-o", "table", "--scheduler-conf", conf); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
}
