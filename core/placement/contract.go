package placement

import (
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/rdmatopo/rdmatopo/core/ledger"
)

// Contract is a gang's job contract, read from its PodGroup's annotations
// (users set them on their VolcanoJob or PyTorchJob; the controllers copy
// them onto the PodGroup) or, when the PodGroup states none, from its pods'
// (ParseGangContract).
type Contract struct {
	// Mode says whether HighestTier is a limit (hard) or a preference.
	Mode Mode
	// HighestTier is the widest tier a hard gang accepts.
	HighestTier Tier
	// MaxWait bounds how long a hard gang waits for HighestTier before it
	// is placed as soft; 0 waits forever.
	MaxWait time.Duration
	// Segment keeps blocks of consecutive ranks within one domain
	// (segments_contract.go).
	Segment Segment
	// Overridden names Volcano network-topology annotations whose value
	// the rdmatopo.io one of the same meaning overrode (they disagreed),
	// for a warning; empty when none.
	Overridden []string
}

// Volcano's own network-topology annotations, read as aliases of
// rdmatopo.io/mode and rdmatopo.io/highest-tier (Volcano >= 1.13 users
// write them): mode hard|soft; highest tier 1 (s0), 2 (s1), higher
// (cluster).
const (
	AnnotationVolcanoMode        = VolcanoTopologyPrefix + "mode"
	AnnotationVolcanoHighestTier = VolcanoTopologyPrefix + "highest-tier"
)

// DefaultContract is the contract of a gang without annotations.
func DefaultContract() Contract {
	return Contract{Mode: DefaultMode, HighestTier: DefaultHighestTier}
}

// ErrInvalidContract marks an annotation of the job contract that cannot be
// read. Such a gang is never widened to the defaults: the scheduler keeps it
// pending, simulate and validate refuse it.
var ErrInvalidContract = errors.New("invalid job contract")

// ReasonInvalidContract: the gang's contract annotations cannot be read; it
// is kept pending rather than placed under defaults it did not ask for.
const ReasonInvalidContract ReasonCode = "InvalidAnnotation"

// contractKeys are the annotations a job or PodGroup may carry under
// ledger.KeyPrefix: the contract, and the PodGroup keys the scheduler writes.
var contractKeys = map[string]bool{
	ledger.AnnotationMode:         true,
	ledger.AnnotationHighestTier:  true,
	ledger.AnnotationMaxWait:      true,
	ledger.AnnotationPlacement:    true,
	ledger.AnnotationWaitingSince: true,
	AnnotationSegmentSize:         true,
	AnnotationSegmentTier:         true,
}

// ContractProblem is one bad annotation of a job contract.
type ContractProblem struct {
	// Key is the annotation.
	Key string
	// Msg says what is wrong with it.
	Msg string
}

// String names the annotation or field and says what is wrong.
func (p ContractProblem) String() string {
	if p.IsField() {
		return fmt.Sprintf("field %s: %s", p.Key, p.Msg)
	}
	return fmt.Sprintf("annotation %s: %s", p.Key, p.Msg)
}

// IsField reports whether the problem is on a field of the PodGroup's
// spec (Key is its path) rather than on an annotation (Key is its key).
func (p ContractProblem) IsField() bool { return strings.HasPrefix(p.Key, "spec.") }

// ParseContract reads the contract from a job's or PodGroup's annotations,
// strictly: values are exact (lower case, no other spelling), max-wait is a
// positive Go duration and needs mode hard, and any other key under
// rdmatopo.io/ is unknown. It returns the contract (defaults where a value is
// bad) and, when something is bad, an error wrapping ErrInvalidContract that
// names every bad annotation, sorted by key.
func ParseContract(ann map[string]string) (Contract, error) {
	c, problems := parseContract(ann)
	return c, contractError(problems)
}

// contractError is the error of a contract's problems (nil: none), wrapping
// ErrInvalidContract and naming every bad annotation in order.
func contractError(problems []ContractProblem) error {
	if len(problems) == 0 {
		return nil
	}
	msgs := make([]string, len(problems))
	for i, p := range problems {
		msgs[i] = p.String()
	}
	return fmt.Errorf("%w: %s", ErrInvalidContract, strings.Join(msgs, "; "))
}

// ContractProblems lists the bad annotations of a contract, sorted by key
// (none: the contract is valid), for input checks that name each field.
func ContractProblems(ann map[string]string) []ContractProblem {
	_, problems := parseContract(ann)
	return problems
}

func parseContract(ann map[string]string) (Contract, []ContractProblem) {
	return readContract(ContractInput{Group: ann})
}

// ContractInput is everything a gang's contract is read from, by layer
// (later layers win, a disagreement is noted in Contract.Overridden):
// Volcano's volcano.sh/network-topology-* annotations, the PodGroup's
// native fields (spec.networkTopology, spec.subGroupPolicy), then the
// rdmatopo.io/* annotations.
type ContractInput struct {
	// Group holds the annotations the contract is read from: the
	// PodGroup's, or its pods' (ContractSource).
	Group map[string]string
	// Native is the PodGroup's spec.networkTopology and subGroupPolicy
	// (nil: none, or a cluster whose PodGroup CRD does not carry them).
	Native *NativeTopology
	// MinMember is the PodGroup's minMember, which bounds a sub-group
	// policy's minSubGroups (0: not checked).
	MinMember int32
	// Tiers maps HyperNode tiers and tier names onto rdmatopo's tiers.
	Tiers VolcanoTiers
	// Pods are the gang's pods, whose labels sub-group selectors match.
	Pods []MemberAnnotations
}

// layerValue is one layer's value of a contract setting, for override
// notes: the key or field that set it, as written, and what it means.
type layerValue struct {
	key, text string
	meaning   string
}

// readContract reads a contract from its layers (see ContractInput).
func readContract(in ContractInput) (Contract, []ContractProblem) {
	ann := in.Group
	c := DefaultContract()
	var problems []ContractProblem
	bad := func(key, format string, args ...any) {
		problems = append(problems, ContractProblem{Key: key, Msg: fmt.Sprintf(format, args...)})
	}
	for k := range ann {
		if strings.HasPrefix(k, ledger.KeyPrefix) && !contractKeys[k] {
			bad(k, "unknown key (the job contract has %s, %s, %s, %s and %s)", ledger.AnnotationMode, ledger.AnnotationHighestTier,
				ledger.AnnotationMaxWait, AnnotationSegmentSize, AnnotationSegmentTier)
		}
	}
	var modes, tiers []layerValue
	parseVolcanoAliases(ann, &c, in.Tiers, bad, &modes, &tiers)
	if in.Native != nil {
		problems = append(problems, in.Native.Problems...)
		readNativeLayer(in, &c, bad, &modes, &tiers)
	}
	readOwnLayer(ann, &c, bad, &modes, &tiers)
	c.Overridden = append(c.Overridden, overridden(modes)...)
	c.Overridden = append(c.Overridden, overridden(tiers)...)
	if v, ok := ann[ledger.AnnotationMaxWait]; ok {
		d, err := time.ParseDuration(v)
		switch {
		case err != nil:
			bad(ledger.AnnotationMaxWait, "%q is not a duration (e.g. 30s, 10m, 1h30m)", v)
		case d <= 0:
			bad(ledger.AnnotationMaxWait, "%q must be positive", v)
		case c.Mode != ModeHard:
			bad(ledger.AnnotationMaxWait, "needs %s: hard (a soft gang never waits for its tier)", ledger.AnnotationMode)
		default:
			c.MaxWait = d
		}
	}
	parseSegment(ann, &c, bad)
	if in.Native != nil {
		if seg, ok := readSubGroups(in.Native.SubGroupPolicy, in.Tiers, in.Pods, in.MinMember, bad); ok {
			_, ours := ann[AnnotationSegmentSize]
			switch {
			case !ours:
				c.Segment = seg
			case seg != c.Segment:
				c.Overridden = append(c.Overridden, fmt.Sprintf("%s=%d at %s (%s=%d at %s wins)", FieldSubGroupPolicy, seg.Size, seg.Tier,
					AnnotationSegmentSize, c.Segment.Size, c.Segment.Tier))
			}
		}
	}
	sortProblems(problems)
	return c, problems
}

// readNativeLayer reads the mode and tier of the PodGroup's (or Job's)
// spec.networkTopology into c, noting each in modes and tiers.
func readNativeLayer(in ContractInput, c *Contract, bad func(key, format string, args ...any), modes, tiers *[]layerValue) {
	nt := in.Native.NetworkTopology
	if nt == nil {
		return
	}
	l, ok := readNetworkTopology(nt, FieldNetworkTopology, in.Tiers, bad)
	if !ok {
		return
	}
	c.Mode, c.HighestTier = l.mode, l.tier
	*modes = append(*modes, layerValue{key: FieldNetworkTopology + ".mode", text: l.modeText, meaning: l.mode.String()})
	if l.hasTier {
		field := FieldNetworkTopology + ".highestTierAllowed"
		if nt.HighestTierAllowed == nil {
			field = FieldNetworkTopology + ".highestTierName"
		}
		*tiers = append(*tiers, layerValue{key: field, text: l.tierText, meaning: l.tier.String()})
	}
}

// readOwnLayer reads rdmatopo's own mode and tier annotations into c, the
// last layer, noting each in modes and tiers.
func readOwnLayer(ann map[string]string, c *Contract, bad func(key, format string, args ...any), modes, tiers *[]layerValue) {
	if v, ok := ann[ledger.AnnotationMode]; ok {
		switch v {
		case "hard":
			c.Mode = ModeHard
		case "soft":
			c.Mode = ModeSoft
		default:
			bad(ledger.AnnotationMode, "%q is not a mode (want hard or soft)", v)
		}
		if c.Mode.String() == v {
			*modes = append(*modes, layerValue{key: ledger.AnnotationMode, text: v, meaning: v})
		}
	}
	if v, ok := ann[ledger.AnnotationHighestTier]; ok {
		if t, err := ParseTier(v); err != nil || v != t.String() {
			bad(ledger.AnnotationHighestTier, "%q is not a tier (want node, s0, s1 or cluster)", v)
		} else {
			c.HighestTier = t
			*tiers = append(*tiers, layerValue{key: ledger.AnnotationHighestTier, text: v, meaning: v})
		}
	}
}

// overridden notes each layer whose value the last layer (the winner)
// overrode with another meaning.
func overridden(layers []layerValue) []string {
	if len(layers) < 2 {
		return nil
	}
	win := layers[len(layers)-1]
	var out []string
	for _, l := range layers[:len(layers)-1] {
		if l.meaning != win.meaning {
			out = append(out, fmt.Sprintf("%s=%q (%s=%q wins)", l.key, l.text, win.key, win.text))
		}
	}
	return out
}

// sortProblems orders problems by key, then message.
func sortProblems(problems []ContractProblem) {
	sort.Slice(problems, func(i, j int) bool {
		if problems[i].Key != problems[j].Key {
			return problems[i].Key < problems[j].Key
		}
		return problems[i].Msg < problems[j].Msg
	})
}

// parseVolcanoAliases reads Volcano's network-topology annotations into c
// as Volcano's PodGroup controller does: the mode case-insensitive, a
// highest tier without a mode hard, a hard mode without a tier limiting
// nothing (cluster). Later layers override them; modes and tiers collect
// what they set for override notes.
func parseVolcanoAliases(ann map[string]string, c *Contract, scale VolcanoTiers, bad func(key, format string, args ...any), modes, tiers *[]layerValue) {
	mode, hasMode := ann[AnnotationVolcanoMode]
	tier, hasTier := ann[AnnotationVolcanoHighestTier]
	if !hasMode && !hasTier {
		return
	}
	c.Mode = ModeHard
	c.HighestTier = TierCluster
	if hasMode {
		switch strings.ToLower(mode) {
		case "hard":
			c.Mode = ModeHard
		case "soft":
			c.Mode = ModeSoft
		default:
			bad(AnnotationVolcanoMode, "%q is not a mode (want hard or soft)", mode)
		}
		*modes = append(*modes, layerValue{key: AnnotationVolcanoMode, text: mode, meaning: c.Mode.String()})
		if c.Mode == ModeSoft {
			c.HighestTier = DefaultHighestTier
		}
	}
	if hasTier {
		if t, ok := volcanoTier(tier, scale); ok {
			c.HighestTier = t
			*tiers = append(*tiers, layerValue{key: AnnotationVolcanoHighestTier, text: tier, meaning: t.String()})
		} else {
			bad(AnnotationVolcanoHighestTier, "%q is not a tier (want an integer of 0 or more: 1 is s0, 2 is s1, higher is cluster)", tier)
		}
	}
}

// volcanoTier reads a Volcano HyperNode tier number as a tier.
func volcanoTier(v string, scale VolcanoTiers) (Tier, bool) {
	n, err := strconv.Atoi(v)
	if err != nil {
		return TierNone, false
	}
	return scale.Tier(n)
}
