// Command syncconf copies config/volcano-scheduler.conf into the manifests
// that carry it (the ConfigMap manifest and the kustomize overlay's copy).
// Run it from config/ through `go generate`; the config package's tests fail
// while a copy is stale.
package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// confFile is the source of truth, relative to config/.
const confFile = "volcano-scheduler.conf"

// configMapHeader precedes the indented conf in scheduler-configmap.yaml.
const configMapHeader = `# The volcano-scheduler ConfigMap with the rdmatopo scheduler conf, for
# installs without kustomize (kubectl apply -f replaces the stock one). The
# data below must equal config/volcano-scheduler.conf byte for byte: edit
# that file and run "go generate ./config"; the config package's tests check
# it.
apiVersion: v1
kind: ConfigMap
metadata:
  name: volcano-scheduler-configmap
  namespace: volcano-system
data:
  volcano-scheduler.conf: |
`

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "syncconf:", err)
		os.Exit(1)
	}
}

func run() error {
	conf, err := os.ReadFile(confFile)
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join("kustomize", confFile), conf, 0o644); err != nil {
		return err
	}
	return os.WriteFile("scheduler-configmap.yaml", []byte(configMapHeader+indent(string(conf))), 0o644)
}

// indent shifts every non-empty line by four spaces, the depth of a block
// scalar under data: in the ConfigMap.
func indent(s string) string {
	lines := strings.SplitAfter(s, "\n")
	var b strings.Builder
	for _, l := range lines {
		if strings.TrimSpace(l) != "" {
			b.WriteString("    ")
		}
		b.WriteString(l)
	}
	return b.String()
}
