package config_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	yamlv2 "gopkg.in/yaml.v2"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"
	"volcano.sh/volcano/pkg/scheduler/conf"

	"github.com/rdmatopo/rdmatopo/config"
)

// TestSchedulerConfShape pins the actions and plugin tiers of the shipped
// conf: the topology action replaces allocate, and rdma-topology runs next
// to the stock plugins it cooperates with.
func TestSchedulerConfShape(t *testing.T) {
	// Volcano reads its conf with gopkg.in/yaml.v2 (yaml struct tags).
	var got conf.SchedulerConfiguration
	if err := yamlv2.UnmarshalStrict([]byte(config.SchedulerConf), &got); err != nil {
		t.Fatalf("%s: %v", config.SchedulerConfFile, err)
	}

	var actions []string
	for _, a := range strings.Split(got.Actions, ",") {
		actions = append(actions, strings.TrimSpace(a))
	}
	if diff := cmp.Diff([]string{"enqueue", "topology-allocate", "backfill"}, actions); diff != "" {
		t.Errorf("actions (-want,+got):\n%s", diff)
	}

	var tiers [][]string
	for _, tier := range got.Tiers {
		var names []string
		for _, p := range tier.Plugins {
			names = append(names, p.Name)
		}
		tiers = append(tiers, names)
	}
	wantTiers := [][]string{
		{"priority", "gang", "conformance"},
		{"predicates", "proportion", "nodeorder", "binpack", "rdma-topology"},
	}
	if diff := cmp.Diff(wantTiers, tiers); diff != "" {
		t.Errorf("plugin tiers (-want,+got):\n%s", diff)
	}

	// Gang must not let other jobs preempt a placed gang's pods one by one.
	for _, p := range got.Tiers[0].Plugins {
		if p.Name != "gang" {
			continue
		}
		if p.EnabledPreemptable == nil || *p.EnabledPreemptable {
			t.Errorf("gang: enablePreemptable = %v, want false", p.EnabledPreemptable)
		}
	}
}

// TestManifestsCarryTheSameConf checks that every manifest that ships the
// conf ships exactly config/volcano-scheduler.conf.
func TestManifestsCarryTheSameConf(t *testing.T) {
	cases := map[string]func(t *testing.T) string{
		"scheduler-configmap.yaml": func(t *testing.T) string {
			var cm corev1.ConfigMap
			if err := yaml.UnmarshalStrict(readFile(t, "scheduler-configmap.yaml"), &cm); err != nil {
				t.Fatalf("scheduler-configmap.yaml: %v", err)
			}
			if cm.Name != "volcano-scheduler-configmap" || cm.Namespace != "volcano-system" {
				t.Errorf("scheduler-configmap.yaml: ConfigMap %s/%s, want volcano-system/volcano-scheduler-configmap",
					cm.Namespace, cm.Name)
			}
			return cm.Data[config.SchedulerConfFile]
		},
		"kustomize/volcano-scheduler.conf": func(t *testing.T) string {
			return string(readFile(t, filepath.Join("kustomize", config.SchedulerConfFile)))
		},
		"volcano-scheduler.conf": func(t *testing.T) string {
			return string(readFile(t, config.SchedulerConfFile))
		},
	}
	for name, read := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(config.SchedulerConf, read(t)); diff != "" {
				t.Errorf("%s differs from the embedded conf; copy config/%s over it (-want,+got):\n%s",
					name, config.SchedulerConfFile, diff)
			}
		})
	}
}

func readFile(t *testing.T, name string) []byte {
	t.Helper()
	data, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	return data
}
