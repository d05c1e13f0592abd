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
	"volcano.sh/volcano/pkg/scheduler"
	_ "volcano.sh/volcano/pkg/scheduler/actions"
	"volcano.sh/volcano/pkg/scheduler/conf"
	"volcano.sh/volcano/pkg/scheduler/framework"
	_ "volcano.sh/volcano/pkg/scheduler/plugins"

	"github.com/rdmatopo/rdmatopo/config"
	"github.com/rdmatopo/rdmatopo/plugins/rdmatopology"
	"github.com/rdmatopo/rdmatopo/registry"
)

// TestSchedulerConfLoads loads the conf the way vc-scheduler does, with the
// same actions and plugins registered: every action must resolve (Volcano
// rejects the whole conf otherwise) and every plugin must have a builder
// (Volcano would only log a missing one when a session opens).
func TestSchedulerConfLoads(t *testing.T) {
	registry.Install(rdmatopology.NewClusterRuntime())
	actions, tiers, _, _, err := scheduler.UnmarshalSchedulerConf(config.SchedulerConf)
	if err != nil {
		t.Fatalf("%s: %v", config.SchedulerConfFile, err)
	}
	var names []string
	for _, a := range actions {
		names = append(names, a.Name())
	}
	if diff := cmp.Diff([]string{"enqueue", "topology-allocate", "topology-preempt", "topology-reclaim", "backfill"}, names); diff != "" {
		t.Errorf("actions (-want,+got):\n%s", diff)
	}
	for _, tier := range tiers {
		for _, p := range tier.Plugins {
			if _, ok := framework.GetPluginBuilder(p.Name); !ok {
				t.Errorf("plugin %q: no builder registered", p.Name)
			}
		}
	}
}

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
	if diff := cmp.Diff([]string{"enqueue", "topology-allocate", "topology-preempt", "topology-reclaim", "backfill"}, actions); diff != "" {
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
	// rdma-topology sits in the first tier, next to gang: Volcano lets the
	// first tier that votes decide whether a job may be pipelined, and the
	// plugin's veto on pipelining a partial RDMA gang must not be overruled.
	wantTiers := [][]string{
		{"priority", "gang", "conformance", "rdma-topology"},
		{"predicates", "proportion", "nodeorder", "binpack"},
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
				t.Errorf("%s differs from the embedded conf; run `go generate ./config` to copy config/%s over it (-want,+got):\n%s",
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
