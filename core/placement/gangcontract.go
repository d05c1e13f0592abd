package placement

import (
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/rdmatopo/rdmatopo/core/ledger"
)

// VolcanoTopologyPrefix is the prefix of Volcano's own network-topology
// annotations (volcano.sh/network-topology-mode, ...-highest-tier). A
// PodGroup that carries one states a contract, so its pods are not read.
const VolcanoTopologyPrefix = "volcano.sh/network-topology-"

// writtenKeys are the PodGroup keys under ledger.KeyPrefix the scheduler
// writes: known on a PodGroup, but no part of what a user asked for.
var writtenKeys = map[string]bool{
	ledger.AnnotationPlacement:    true,
	ledger.AnnotationWaitingSince: true,
}

// isContractKey reports whether an annotation is one a user sets to state a
// job contract: a contract key of ours, or one of Volcano's.
func isContractKey(k string) bool {
	return (contractKeys[k] && !writtenKeys[k]) || strings.HasPrefix(k, VolcanoTopologyPrefix)
}

// MemberAnnotations is one pod of a gang, as its contract is read: its name
// (to name it in problems) and its annotations.
type MemberAnnotations struct {
	Name        string
	Annotations map[string]string
	// Labels are the pod's labels, which a sub-group policy's selector
	// matches (spec.subGroupPolicy).
	Labels map[string]string
}

// maxNamedPods bounds the pod names a disagreement lists per value, so that
// the message of a large gang stays one readable line.
const maxNamedPods = 3

// ContractSource returns the annotations a gang's contract is read from.
// The PodGroup's win whenever it carries a contract key (ours or Volcano's
// network-topology ones): that is where Volcano Jobs and PyTorchJobs put
// the job's annotations. A PodGroup without any (Kubeflow Trainer creates
// its PodGroups bare) defers to its pods: their contract keys, which a pod
// template gives every pod alike. A key the pods do not agree on (set on
// some and not on others, or to different values) is a problem naming the
// pods and is left out of the returned annotations. Only contract keys are
// taken from pods: the scheduler's own pod annotations are no contract.
func ContractSource(group map[string]string, pods []MemberAnnotations) (map[string]string, []ContractProblem) {
	for k := range group {
		if isContractKey(k) {
			return group, nil
		}
	}
	if len(pods) == 0 {
		return group, nil
	}
	// holders are the pods that give a key one value (set false: the pods
	// without the key, apart from those that set it to "").
	type holders struct {
		value string
		set   bool
		names []string
	}
	// keys lists, per contract key any pod carries, its distinct values
	// in the order of the first pod (by name) with each.
	keys := map[string][]*holders{}
	sorted := append([]MemberAnnotations(nil), pods...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].Name < sorted[j].Name })
	for _, p := range sorted {
		for k := range p.Annotations {
			if isContractKey(k) {
				keys[k] = nil
			}
		}
	}
	for k := range keys {
		for _, p := range sorted {
			v, set := p.Annotations[k]
			var h *holders
			for _, cand := range keys[k] {
				if cand.set == set && cand.value == v {
					h = cand
					break
				}
			}
			if h == nil {
				h = &holders{value: v, set: set}
				keys[k] = append(keys[k], h)
			}
			h.names = append(h.names, p.Name)
		}
	}
	out := make(map[string]string, len(group)+len(keys))
	for k, v := range group {
		out[k] = v
	}
	var problems []ContractProblem
	for k, hs := range keys {
		if len(hs) == 1 {
			out[k] = hs[0].value
			continue
		}
		parts := make([]string, len(hs))
		for i, h := range hs {
			what := "unset"
			if h.set {
				what = fmt.Sprintf("%q", h.value)
			}
			parts[i] = what + " on " + namedPods(h.names)
		}
		problems = append(problems, ContractProblem{Key: k, Msg: "the gang's pods disagree: " + strings.Join(parts, "; ")})
	}
	return out, problems
}

// namedPods lists up to maxNamedPods names and counts the rest.
func namedPods(names []string) string {
	if len(names) <= maxNamedPods {
		return strings.Join(names, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(names[:maxNamedPods], ", "), len(names)-maxNamedPods)
}

// ParseGangContract reads a gang's contract: from its PodGroup's
// annotations, or from its pods' when the PodGroup states none (see
// ContractSource), strictly as ParseContract does. Pods that disagree are
// a bad annotation like any invalid value: the error wraps
// ErrInvalidContract.
func ParseGangContract(group map[string]string, pods []MemberAnnotations) (Contract, error) {
	c, problems := parseGangContract(group, pods)
	return c, contractError(problems)
}

// GangContractProblems lists the bad annotations of a gang's contract,
// sorted by key (none: the contract is valid).
func GangContractProblems(group map[string]string, pods []MemberAnnotations) []ContractProblem {
	_, problems := parseGangContract(group, pods)
	return problems
}

func parseGangContract(group map[string]string, pods []MemberAnnotations) (Contract, []ContractProblem) {
	return ReadGangContract(ContractInput{Group: group, Pods: pods})
}

// ReadGangContract reads a gang's contract from every layer (ContractInput;
// in.Group holds the PodGroup's annotations). A PodGroup whose native
// fields state a topology states a contract: its pods' annotations are not
// read then, as when it carries a contract annotation. It returns the
// contract and its problems, sorted by key.
func ReadGangContract(in ContractInput) (Contract, []ContractProblem) {
	var disagree []ContractProblem
	if !in.Native.Set() {
		in.Group, disagree = ContractSource(in.Group, in.Pods)
	}
	c, problems := readContract(in)
	problems = append(problems, disagree...)
	sortProblems(problems)
	return c, problems
}

// ContractErr is the error of a contract's problems (nil: none), wrapping
// ErrInvalidContract.
func ContractErr(problems []ContractProblem) error { return contractError(problems) }

// MembersOf returns the pods' names and annotations, for ParseGangContract.
func MembersOf(pods []*corev1.Pod) []MemberAnnotations {
	out := make([]MemberAnnotations, 0, len(pods))
	for _, p := range pods {
		out = append(out, MemberAnnotations{Name: p.Name, Annotations: p.Annotations, Labels: p.Labels})
	}
	return out
}
