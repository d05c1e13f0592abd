package main

import (
	"errors"
	"fmt"
	"os"

	"github.com/rdmatopo/rdmatopo/config"
	"github.com/rdmatopo/rdmatopo/examples"
	"github.com/rdmatopo/rdmatopo/internal/sim"
	"github.com/rdmatopo/rdmatopo/internal/workload"
)

// builtinConfName names the compiled-in scheduler conf in messages.
const builtinConfName = "built-in config/" + config.SchedulerConfFile

// readInput reads a file named on the command line; failing to read it is
// unusable input.
func readInput(path string) ([]byte, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		var pe *os.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return nil, badInputf("%s: cannot read: %v", path, err)
	}
	return data, nil
}

// loadConf parses the scheduler conf at path, or the built-in one.
func loadConf(path string) (*sim.Conf, error) {
	name, text := builtinConfName, config.SchedulerConf
	if path != "" {
		data, err := readInput(path)
		if err != nil {
			return nil, err
		}
		name, text = path, string(data)
	}
	c, err := sim.ParseConf(text)
	if err != nil {
		return nil, badInputf("%s: %v", name, err)
	}
	return c, nil
}

// loadCluster reads a cluster file, or the embedded default.
func loadCluster(path string) (*workload.Cluster, error) {
	return loadInput(path, examples.ClusterFile, examples.Cluster, workload.LoadCluster)
}

// loadWorkload reads a workload file, or the embedded default.
func loadWorkload(path string) (*workload.Set, error) {
	return loadInput(path, examples.WorkloadFile, examples.Workload, workload.LoadWorkload)
}

// loadInput reads the file at path, or builtin (named builtinName) when
// path is empty, with load; what load refuses is bad input.
func loadInput[T any](path, builtinName string, builtin []byte, load func(name string, data []byte) (T, error)) (T, error) {
	name, data := builtinName+" (built in)", builtin
	if path != "" {
		var err error
		if data, err = readInput(path); err != nil {
			var zero T
			return zero, err
		}
		name = path
	}
	v, err := load(name, data)
	if err != nil {
		var zero T
		return zero, badInput(err)
	}
	return v, nil
}

// checkDisjoint verifies that the workload's pods do not reuse the names of
// pods already in the cluster.
func checkDisjoint(c *workload.Cluster, set *workload.Set, workloadName string) error {
	bound := make(map[string]bool, len(c.Pods))
	for _, p := range c.Pods {
		bound[p.Namespace+"/"+p.Name] = true
	}
	for _, p := range set.Pods {
		if bound[p.Namespace+"/"+p.Name] {
			return badInputf("%s: (Pod %s/%s): metadata.name: a pod of that name already runs in the cluster", workloadName, p.Namespace, p.Name)
		}
	}
	return nil
}

// nameOr returns path, or the built-in name when path is empty.
func nameOr(path, builtin string) string {
	if path == "" {
		return fmt.Sprintf("%s (built in)", builtin)
	}
	return path
}
