package topology

import (
	"errors"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/kubewharf/katalyst-api/pkg/apis/node/v1alpha1"
)

// WithDefaults returns the config with every empty resource name, the S1
// source and the HyperNode tier replaced by their defaults. S1NodeLabel has
// no default: without it all S0s share one S1.
func (c Config) WithDefaults() Config {
	if c.S1Source == "" {
		c.S1Source = S1FromLabel
	}
	if c.S1HyperNodeTier == 0 {
		c.S1HyperNodeTier = DefaultS1HyperNodeTier
	}
	if c.RDMAResource == "" {
		c.RDMAResource = DefaultRDMAResource
	}
	if c.GPUResource == "" {
		c.GPUResource = DefaultGPUResource
	}
	return c
}

// PolicyOf reduces a katalyst topology policy to a placement Policy (see
// ParsePolicy): SingleNUMANodeContainerLevel is PolicySingleNUMAContainer;
// SingleNUMANodePodLevel and any unrecognised value are PolicySingleNUMA;
// None, BestEffort*, Restricted*, Numeric* and the unset policy are
// PolicySpanning.
func PolicyOf(p v1alpha1.TopologyPolicy) Policy {
	pol, _ := ParsePolicy(p)
	return pol
}

// ParsePolicy reduces a katalyst topology policy to a placement Policy and
// reports whether katalyst defines the value:
//   - SingleNUMANodeContainerLevel: PolicySingleNUMAContainer (one zone
//     per container);
//   - SingleNUMANodePodLevel: PolicySingleNUMA (one zone per pod);
//   - None, BestEffort*, Restricted*, Numeric*: PolicySpanning;
//   - "" (unset): PolicySpanning, known; katalyst's default policy is None;
//   - anything else (a misspelling): PolicySingleNUMA, the strictest
//     reading (SingleNUMANodePodLevel), and known is false.
func ParsePolicy(p v1alpha1.TopologyPolicy) (pol Policy, known bool) {
	switch p {
	case v1alpha1.TopologyPolicySingleNUMANodeContainerLevel:
		return PolicySingleNUMAContainer, true
	case v1alpha1.TopologyPolicySingleNUMANodePodLevel:
		return PolicySingleNUMA, true
	case "", v1alpha1.TopologyPolicyNone,
		v1alpha1.TopologyPolicyBestEffortContainerLevel, v1alpha1.TopologyPolicyBestEffortPodLevel,
		v1alpha1.TopologyPolicyRestrictedContainerLevel, v1alpha1.TopologyPolicyRestrictedPodLevel,
		v1alpha1.TopologyPolicyNumericContainerLevel, v1alpha1.TopologyPolicyNumericPodLevel:
		return PolicySpanning, true
	default:
		return PolicySingleNUMA, false
	}
}

// NormalizeNICName returns the NICID of a NIC name as a KCNR gives it (a NIC
// zone's name, or the part of an RDMATOR/ property name after the prefix): a
// PCI address, with or without its domain ("0000:1A:00.0", "1a:00.0"), in
// lower case; any other name verbatim.
func NormalizeNICName(name string) NICID {
	if isPCIAddress(name) {
		return NICID(strings.ToLower(name))
	}
	return NICID(name)
}

// isPCIAddress reports whether s is a PCI address [domain:]bus:device.function
// in hexadecimal digits of either case: "0000:1a:00.0" or "1a:00.0".
func isPCIAddress(s string) bool {
	parts := strings.Split(s, ":")
	if len(parts) == 3 {
		if !isHex(parts[0], 4, 8) {
			return false
		}
		parts = parts[1:]
	}
	if len(parts) != 2 || !isHex(parts[0], 2, 2) {
		return false
	}
	dev, fn, ok := strings.Cut(parts[1], ".")
	return ok && isHex(dev, 2, 2) && len(fn) == 1 && fn[0] >= '0' && fn[0] <= '7'
}

// isHex reports whether s is minLen to maxLen hexadecimal digits.
func isHex(s string, minLen, maxLen int) bool {
	if len(s) < minLen || len(s) > maxLen {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F') {
			return false
		}
	}
	return true
}

// CheckNICName reports why a NIC name cannot be handed out, or nil: a name
// must be non-empty, valid UTF-8 and free of commas and whitespace, so that it
// round-trips through the comma-separated rdmatopo.io/nics annotation.
func CheckNICName(name string) error {
	switch {
	case name == "":
		return errors.New("the name is empty")
	case !utf8.ValidString(name):
		return errors.New("the name is not valid UTF-8")
	case strings.Contains(name, ","):
		return errors.New("the name holds a comma, the separator of the rdmatopo.io/nics annotation")
	case strings.IndexFunc(name, unicode.IsSpace) >= 0:
		return errors.New("the name holds whitespace, which the rdmatopo.io/nics annotation cannot carry")
	}
	return nil
}

// String names the policy for logs and reports.
func (p Policy) String() string {
	switch p {
	case PolicySingleNUMA:
		return "SingleNUMA"
	case PolicySingleNUMAContainer:
		return "SingleNUMAContainer"
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
