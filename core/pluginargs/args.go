// Package pluginargs reads the rdma-topology plugin's arguments: typed,
// defaulted and validated, strictly (an unknown key or a wrong type is an
// error naming the key). The scheduler's plugin and the tools that read a
// scheduler conf without running it (kubectl rdmatopo) share it.
package pluginargs

import (
	"fmt"
	"math"
	"sort"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/rdmatopo/rdmatopo/core/topology"
)

// PluginName is the name of the rdma-topology plugin in the scheduler conf.
const PluginName = "rdma-topology"

// Argument keys of the rdma-topology plugin (docs/design.md "Plugin arguments").
const (
	ArgRDMAResource = "rdmaResource"
	ArgGPUResource  = "gpuResource"
	ArgS1NodeLabel  = "s1NodeLabel"
	ArgS1Source     = "s1Source"
	ArgS1Tier       = "s1HyperNodeTier"
	ArgWeight       = "weight"
	// Hardware faults (faults.go).
	ArgNICFlapCount    = "nicFlapCount"
	ArgNICFlapWindow   = "nicFlapWindow"
	ArgNICCooldown     = "nicCooldown"
	ArgReplacementHold = "replacementHold"
)

// Defaults of the hardware-fault arguments.
const (
	DefaultNICFlapCount    = 3
	DefaultNICFlapWindow   = 15 * time.Minute
	DefaultNICCooldown     = 30 * time.Minute
	DefaultReplacementHold = 2 * time.Minute
	// maxFaultDuration bounds the fault durations (a typo of "10m" as
	// "10000h" is an error, not a NIC kept out for a year).
	maxFaultDuration = 7 * 24 * time.Hour
)

// Args are the typed, validated arguments of the plugin.
type Args struct {
	// RDMAResource is the extended resource of an RDMA NIC.
	RDMAResource string
	// GPUResource is the extended resource of a GPU.
	GPUResource string
	// S1Source is where a node's S1 comes from: the node label S1NodeLabel
	// (topology.S1FromLabel, the default) or Volcano HyperNodes
	// (topology.S1FromHyperNode).
	S1Source topology.S1Source
	// S1NodeLabel names the node label whose value is the node's S1
	// (miniPod); empty: all S0s form one S1.
	S1NodeLabel string
	// S1HyperNodeTier is the HyperNode tier read as S1 under the hypernode
	// source (default 2).
	S1HyperNodeTier int
	// Weight scales the plugin's node scores.
	Weight int
	// NICFlapCount is how many times a NIC must fail within NICFlapWindow
	// for it to be kept out of placement for NICCooldown once it is back.
	NICFlapCount int
	// NICFlapWindow is the window the failures of a NIC are counted in.
	NICFlapWindow time.Duration
	// NICCooldown is how long a flapping NIC stays out once it is back.
	NICCooldown time.Duration
	// ReplacementHold is how long the room for a pod a running gang lost is
	// kept for its replacement, under the gang's leaves (else its S1),
	// from other gangs.
	ReplacementHold time.Duration
}

// SetDefaults fills unset fields.
func (a *Args) SetDefaults() {
	if a.RDMAResource == "" {
		a.RDMAResource = topology.DefaultRDMAResource
	}
	if a.GPUResource == "" {
		a.GPUResource = topology.DefaultGPUResource
	}
	if a.Weight == 0 {
		a.Weight = 1
	}
	if a.S1Source == "" {
		a.S1Source = topology.S1FromLabel
	}
	if a.S1HyperNodeTier == 0 {
		a.S1HyperNodeTier = topology.DefaultS1HyperNodeTier
	}
	if a.NICFlapCount == 0 {
		a.NICFlapCount = DefaultNICFlapCount
	}
	if a.NICFlapWindow == 0 {
		a.NICFlapWindow = DefaultNICFlapWindow
	}
	if a.NICCooldown == 0 {
		a.NICCooldown = DefaultNICCooldown
	}
	if a.ReplacementHold == 0 {
		a.ReplacementHold = DefaultReplacementHold
	}
}

// Validate checks the arguments; path prefixes the field names.
func (a *Args) Validate(path *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, f := range []struct{ key, val string }{{ArgRDMAResource, a.RDMAResource}, {ArgGPUResource, a.GPUResource}} {
		for _, msg := range validation.IsQualifiedName(f.val) {
			errs = append(errs, field.Invalid(path.Child(f.key), f.val, msg))
		}
	}
	if a.RDMAResource == a.GPUResource {
		errs = append(errs, field.Invalid(path.Child(ArgGPUResource), a.GPUResource, "must differ from "+ArgRDMAResource))
	}
	if a.S1NodeLabel != "" {
		for _, msg := range validation.IsQualifiedName(a.S1NodeLabel) {
			errs = append(errs, field.Invalid(path.Child(ArgS1NodeLabel), a.S1NodeLabel, msg))
		}
	}
	switch a.S1Source {
	case topology.S1FromLabel:
	case topology.S1FromHyperNode:
		if a.S1NodeLabel != "" {
			errs = append(errs, field.Invalid(path.Child(ArgS1NodeLabel), a.S1NodeLabel, "must be empty with "+ArgS1Source+": hypernode (the S1 comes from HyperNodes)"))
		}
	default:
		errs = append(errs, field.NotSupported(path.Child(ArgS1Source), a.S1Source, []string{string(topology.S1FromLabel), string(topology.S1FromHyperNode)}))
	}
	if a.S1HyperNodeTier < 1 {
		errs = append(errs, field.Invalid(path.Child(ArgS1Tier), a.S1HyperNodeTier, "must be >= 1"))
	}
	if a.Weight < 1 || a.Weight > 100 {
		errs = append(errs, field.Invalid(path.Child(ArgWeight), a.Weight, "must be between 1 and 100"))
	}
	if a.NICFlapCount < 1 || a.NICFlapCount > 100 {
		errs = append(errs, field.Invalid(path.Child(ArgNICFlapCount), a.NICFlapCount, "must be between 1 and 100"))
	}
	for _, d := range []struct {
		key string
		val time.Duration
	}{{ArgNICFlapWindow, a.NICFlapWindow}, {ArgNICCooldown, a.NICCooldown}, {ArgReplacementHold, a.ReplacementHold}} {
		if d.val < time.Second || d.val > maxFaultDuration {
			errs = append(errs, field.Invalid(path.Child(d.key), d.val.String(), "must be between 1s and "+maxFaultDuration.String()))
		}
	}
	return errs
}

// TopologyConfig returns the fabric configuration the arguments select.
func (a *Args) TopologyConfig() topology.Config {
	return topology.Config{RDMAResource: a.RDMAResource, GPUResource: a.GPUResource, S1Source: a.S1Source,
		S1NodeLabel: a.S1NodeLabel, S1HyperNodeTier: a.S1HyperNodeTier}
}

// String renders the effective arguments for the start-up log.
func (a *Args) String() string {
	return fmt.Sprintf("%s=%s %s=%s %s=%s %s=%q %s=%d %s=%d %s=%d %s=%s %s=%s %s=%s", ArgRDMAResource, a.RDMAResource, ArgGPUResource, a.GPUResource,
		ArgS1Source, a.S1Source, ArgS1NodeLabel, a.S1NodeLabel, ArgS1Tier, a.S1HyperNodeTier, ArgWeight, a.Weight,
		ArgNICFlapCount, a.NICFlapCount, ArgNICFlapWindow, a.NICFlapWindow, ArgNICCooldown, a.NICCooldown, ArgReplacementHold, a.ReplacementHold)
}

// Parse decodes the plugin's arguments strictly: an unknown key or a
// value of the wrong type is an error naming the key, never ignored or
// clamped. Defaults fill what is unset; the result is validated.
func Parse(in map[string]any) (*Args, error) {
	path := field.NewPath("plugins").Key(PluginName).Child("arguments")
	a := &Args{}
	var errs field.ErrorList
	keys := make([]string, 0, len(in))
	for k := range in {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		v := in[k]
		switch k {
		case ArgRDMAResource:
			errs = append(errs, decodeString(path.Child(k), v, &a.RDMAResource)...)
		case ArgGPUResource:
			errs = append(errs, decodeString(path.Child(k), v, &a.GPUResource)...)
		case ArgS1NodeLabel:
			errs = append(errs, decodeString(path.Child(k), v, &a.S1NodeLabel)...)
		case ArgS1Source:
			var src string
			errs = append(errs, decodeString(path.Child(k), v, &src)...)
			a.S1Source = topology.S1Source(src)
		case ArgS1Tier:
			errs = append(errs, decodeInt(path.Child(k), v, &a.S1HyperNodeTier)...)
		case ArgWeight:
			errs = append(errs, decodeInt(path.Child(k), v, &a.Weight)...)
		case ArgNICFlapCount:
			errs = append(errs, decodeInt(path.Child(k), v, &a.NICFlapCount)...)
		case ArgNICFlapWindow:
			errs = append(errs, decodeDuration(path.Child(k), v, &a.NICFlapWindow)...)
		case ArgNICCooldown:
			errs = append(errs, decodeDuration(path.Child(k), v, &a.NICCooldown)...)
		case ArgReplacementHold:
			errs = append(errs, decodeDuration(path.Child(k), v, &a.ReplacementHold)...)
		default:
			errs = append(errs, field.NotSupported(path.Child(k), k,
				[]string{ArgGPUResource, ArgNICCooldown, ArgNICFlapCount, ArgNICFlapWindow, ArgRDMAResource, ArgReplacementHold,
					ArgS1NodeLabel, ArgS1Source, ArgS1Tier, ArgWeight}))
		}
	}
	if len(errs) == 0 {
		a.SetDefaults()
		errs = a.Validate(path)
	}
	if err := errs.ToAggregate(); err != nil {
		return nil, err
	}
	return a, nil
}

func decodeString(p *field.Path, v interface{}, out *string) field.ErrorList {
	s, ok := v.(string)
	if !ok {
		return field.ErrorList{field.TypeInvalid(p, v, fmt.Sprintf("must be a string, not %T", v))}
	}
	*out = strings.TrimSpace(s)
	if *out == "" {
		return field.ErrorList{field.Invalid(p, s, "must not be empty")}
	}
	return nil
}

// decodeDuration reads a Go duration string ("90s", "15m"); a number is
// an error (its unit would be a guess).
func decodeDuration(p *field.Path, v interface{}, out *time.Duration) field.ErrorList {
	var s string
	if errs := decodeString(p, v, &s); len(errs) > 0 {
		return errs
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return field.ErrorList{field.Invalid(p, s, "must be a duration such as 90s or 15m")}
	}
	if d <= 0 {
		return field.ErrorList{field.Invalid(p, s, "must be positive")}
	}
	*out = d
	return nil
}

func decodeInt(p *field.Path, v interface{}, out *int) field.ErrorList {
	switch n := v.(type) {
	case int:
		*out = n
	case int32:
		*out = int(n)
	case int64:
		if n > math.MaxInt32 || n < math.MinInt32 {
			return field.ErrorList{field.Invalid(p, n, "out of range")}
		}
		*out = int(n)
	case uint64:
		if n > math.MaxInt32 {
			return field.ErrorList{field.Invalid(p, n, "out of range")}
		}
		*out = int(n)
	case float64:
		if n != math.Trunc(n) || n > math.MaxInt32 || n < math.MinInt32 {
			return field.ErrorList{field.Invalid(p, n, "must be a whole number")}
		}
		*out = int(n)
	default:
		return field.ErrorList{field.TypeInvalid(p, v, fmt.Sprintf("must be an integer, not %T", v))}
	}
	if *out == 0 {
		return field.ErrorList{field.Invalid(p, 0, "must be between 1 and 100")}
	}
	return nil
}
