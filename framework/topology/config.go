package topology

import (
	"slices"
	"strconv"
	"strings"

	"github.com/kubewharf/katalyst-api/pkg/apis/node/v1alpha1"
)

// WithDefaults returns the config with every empty resource name replaced by
// its default. S1NodeLabel has no default: without it all S0s share one S1.
func (c Config) WithDefaults() Config {
	if c.RDMAResource == "" {
		c.RDMAResource = DefaultRDMAResource
	}
	if c.GPUResource == "" {
		c.GPUResource = DefaultGPUResource
	}
	return c
}

// singleNUMAPrefix starts the name of every katalyst policy that confines a
// container (or pod) to one NUMA zone.
const singleNUMAPrefix = "SingleNUMANode"

// PolicyOf reduces a katalyst topology policy to a placement Policy:
// SingleNUMANode* is PolicySingleNUMA, everything else (None, BestEffort*,
// Restricted*, Numeric*, unset or unrecognised) is PolicySpanning.
func PolicyOf(p v1alpha1.TopologyPolicy) Policy {
	if strings.HasPrefix(string(p), singleNUMAPrefix) {
		return PolicySingleNUMA
	}
	return PolicySpanning
}

// String names the policy for logs and reports.
func (p Policy) String() string {
	switch p {
	case PolicySingleNUMA:
		return "SingleNUMA"
	case PolicySpanning:
		return "Spanning"
	default:
		return "Policy(" + strconv.Itoa(int(p)) + ")"
	}
}

// SortReasons orders reasons by node, code, NIC and message, in place.
func SortReasons(rs []Reason) {
	slices.SortFunc(rs, compareReasons)
}

func compareReasons(a, b Reason) int {
	if c := strings.Compare(a.Node, b.Node); c != 0 {
		return c
	}
	if c := strings.Compare(string(a.Code), string(b.Code)); c != 0 {
		return c
	}
	if c := strings.Compare(string(a.NIC), string(b.NIC)); c != 0 {
		return c
	}
	return strings.Compare(a.Message, b.Message)
}
