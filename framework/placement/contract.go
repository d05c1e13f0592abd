package placement

import (
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/rdmatopo/rdmatopo/framework/ledger"
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
		msgs[i] = fmt.Sprintf("annotation %s: %s", p.Key, p.Msg)
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
	parseVolcanoAliases(ann, &c, bad)
	if v, ok := ann[ledger.AnnotationMode]; ok {
		switch v {
		case "hard":
			c.Mode = ModeHard
		case "soft":
			c.Mode = ModeSoft
		default:
			bad(ledger.AnnotationMode, "%q is not a mode (want hard or soft)", v)
		}
	}
	if v, ok := ann[ledger.AnnotationHighestTier]; ok {
		if t, err := ParseTier(v); err != nil || v != t.String() {
			bad(ledger.AnnotationHighestTier, "%q is not a tier (want node, s0, s1 or cluster)", v)
		} else {
			c.HighestTier = t
		}
	}
	noteOverridden(ann, &c)
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
	sortProblems(problems)
	return c, problems
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

// parseVolcanoAliases reads Volcano's network-topology annotations into c;
// the rdmatopo.io annotations, read after, override them.
func parseVolcanoAliases(ann map[string]string, c *Contract, bad func(key, format string, args ...any)) {
	if v, ok := ann[AnnotationVolcanoMode]; ok {
		switch v {
		case "hard":
			c.Mode = ModeHard
		case "soft":
			c.Mode = ModeSoft
		default:
			bad(AnnotationVolcanoMode, "%q is not a mode (want hard or soft)", v)
		}
	}
	if v, ok := ann[AnnotationVolcanoHighestTier]; ok {
		if t, ok := volcanoTier(v); ok {
			c.HighestTier = t
		} else {
			bad(AnnotationVolcanoHighestTier, "%q is not a tier (want a positive integer: 1 is s0, 2 is s1, higher is cluster)", v)
		}
	}
}

// volcanoTier reads a Volcano HyperNode tier number as a tier.
func volcanoTier(v string) (Tier, bool) {
	n, err := strconv.Atoi(v)
	switch {
	case err != nil || n < 1:
		return TierNone, false
	case n == 1:
		return TierS0, true
	case n == 2:
		return TierS1, true
	}
	return TierCluster, true
}

// noteOverridden records the Volcano aliases an rdmatopo.io annotation of
// the same meaning overrode with another value.
func noteOverridden(ann map[string]string, c *Contract) {
	if v, ok := ann[AnnotationVolcanoMode]; ok {
		if ours, set := ann[ledger.AnnotationMode]; set && ours != v {
			c.Overridden = append(c.Overridden, fmt.Sprintf("%s=%q (%s=%q wins)", AnnotationVolcanoMode, v, ledger.AnnotationMode, ours))
		}
	}
	if v, ok := ann[AnnotationVolcanoHighestTier]; ok {
		if ours, set := ann[ledger.AnnotationHighestTier]; set {
			if t, ok := volcanoTier(v); ok && t.String() != ours {
				c.Overridden = append(c.Overridden, fmt.Sprintf("%s=%q (%s=%q wins)", AnnotationVolcanoHighestTier, v, ledger.AnnotationHighestTier, ours))
			}
		}
	}
}
