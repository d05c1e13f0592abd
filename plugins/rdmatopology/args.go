package rdmatopology

import (
	"fmt"
	"math"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"volcano.sh/volcano/pkg/scheduler/framework"

	"github.com/rdmatopo/rdmatopo/framework/topology"
)

// Argument keys of the rdma-topology plugin (docs/design.md "Plugin arguments").
const (
	ArgRDMAResource = "rdmaResource"
	ArgGPUResource  = "gpuResource"
	ArgS1NodeLabel  = "s1NodeLabel"
	ArgS1Source     = "s1Source"
	ArgS1Tier       = "s1HyperNodeTier"
	ArgWeight       = "weight"
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
	return errs
}

// TopologyConfig returns the fabric configuration the arguments select.
func (a *Args) TopologyConfig() topology.Config {
	return topology.Config{RDMAResource: a.RDMAResource, GPUResource: a.GPUResource, S1Source: a.S1Source,
		S1NodeLabel: a.S1NodeLabel, S1HyperNodeTier: a.S1HyperNodeTier}
}

// String renders the effective arguments for the start-up log.
func (a *Args) String() string {
	return fmt.Sprintf("%s=%s %s=%s %s=%s %s=%q %s=%d %s=%d", ArgRDMAResource, a.RDMAResource, ArgGPUResource, a.GPUResource,
		ArgS1Source, a.S1Source, ArgS1NodeLabel, a.S1NodeLabel, ArgS1Tier, a.S1HyperNodeTier, ArgWeight, a.Weight)
}

// ParseArgs decodes the plugin's arguments strictly: an unknown key or a
// value of the wrong type is an error naming the key, never ignored or
// clamped. Defaults fill what is unset; the result is validated.
func ParseArgs(in framework.Arguments) (*Args, error) {
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
		default:
			errs = append(errs, field.NotSupported(path.Child(k), k,
				[]string{ArgGPUResource, ArgRDMAResource, ArgS1NodeLabel, ArgS1Source, ArgS1Tier, ArgWeight}))
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
