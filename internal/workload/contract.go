package workload

import (
	"fmt"

	schedulingv1beta1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"

	"github.com/rdmatopo/rdmatopo/core/placement"
)

// checkContract refuses a job or PodGroup whose rdmatopo.io annotations are
// not a valid job contract (a misspelt value or key), naming the first bad
// annotation: the scheduler would keep such a gang pending, never place it
// under defaults it did not ask for.
func checkContract(r *rawObject, namespace, name string, ann map[string]string) *InputError {
	problems := placement.ContractProblems(ann)
	if len(problems) == 0 {
		return nil
	}
	if namespace == "" {
		namespace = DefaultNamespace
	}
	r.name, r.namespace = name, namespace
	p := problems[0]
	return r.errorf(fmt.Sprintf("metadata.annotations[%q]", p.Key), "%s", p.Msg)
}

// checkPodContracts refuses a gang whose PodGroup states no contract and
// whose pods' contract annotations are invalid or disagree (see
// placement.ContractSource), naming the first pod, by name, that carries
// the bad annotation. Every pod's PodGroup exists (finish checks it first).
func (b *setBuilder) checkPodContracts() *InputError {
	byGroup := b.podsByGroup()
	for _, pg := range b.set.PodGroups {
		key := pg.Namespace + "/" + pg.Name
		idx := byGroup[key]
		_, problems := b.gangContract(pg, idx)
		if len(problems) == 0 {
			continue
		}
		p := problems[0]
		if p.IsField() {
			src := b.pgs[key]
			if src.kind == KindPodGroup {
				return src.origin.errorf(src.kind, src.namespace, src.name, p.Key, "%s", p.Msg)
			}
			return src.origin.errorf(src.kind, src.namespace, src.name, "", "the PodGroup it expands to: %s", p)
		}
		first := -1
		for _, i := range idx {
			if _, ok := b.set.Pods[i].Annotations[p.Key]; ok && (first < 0 || b.set.Pods[i].Name < b.set.Pods[first].Name) {
				first = i
			}
		}
		if first < 0 { // the PodGroup's own key: checked when it was added
			src := b.pgs[pg.Namespace+"/"+pg.Name]
			return src.origin.errorf(src.kind, src.namespace, src.name, fmt.Sprintf("metadata.annotations[%q]", p.Key), "%s", p.Msg)
		}
		src := b.pods[first]
		return src.origin.errorf(src.kind, src.namespace, src.name, fmt.Sprintf("%smetadata.annotations[%q]", src.prefix, p.Key),
			"%s (PodGroup %s/%s states no contract; it is read from its pods)", p.Msg, pg.Namespace, pg.Name)
	}
	return nil
}

// podsByGroup indexes the set's pods by "namespace/podgroup".
func (b *setBuilder) podsByGroup() map[string][]int {
	byGroup := map[string][]int{}
	for i, p := range b.set.Pods {
		key := p.Namespace + "/" + p.Annotations[schedulingv1beta1.KubeGroupNameAnnotationKey]
		byGroup[key] = append(byGroup[key], i)
	}
	return byGroup
}

// memberAnnotations lists the annotations of the pods at idx.
func (b *setBuilder) memberAnnotations(idx []int) []placement.MemberAnnotations {
	out := make([]placement.MemberAnnotations, len(idx))
	for j, i := range idx {
		out[j] = placement.MemberAnnotations{Name: b.set.Pods[i].Name, Annotations: b.set.Pods[i].Annotations, Labels: b.set.Pods[i].Labels}
	}
	return out
}

// checkSegments refuses a gang whose segment size (from its PodGroup, or
// its pods when the PodGroup states no contract) does not divide its pods
// (members counts them per "namespace/podgroup"); the contract itself was
// checked before.
func (b *setBuilder) checkSegments(members map[string]int) *InputError {
	byGroup := b.podsByGroup()
	for _, pg := range b.set.PodGroups {
		key := pg.Namespace + "/" + pg.Name
		c, _ := b.gangContract(pg, byGroup[key])
		if msg := placement.SegmentProblem(c.Segment.Size, members[key]); msg != "" {
			src := b.pgs[key]
			field := fmt.Sprintf("metadata.annotations[%q]", placement.AnnotationSegmentSize)
			if _, ours := pg.Annotations[placement.AnnotationSegmentSize]; !ours {
				field = placement.FieldSubGroupPolicy + "[0].subGroupSize"
			}
			return src.origin.errorf(src.kind, src.namespace, src.name, field, "%s", msg)
		}
	}
	return nil
}

// gangContract reads a PodGroup's contract as the scheduler will, from its
// annotations, native fields and the pods at idx; HyperNode tier names are
// resolved when the gang is scheduled (the workload does not hold them).
func (b *setBuilder) gangContract(pg *schedulingv1beta1.PodGroup, idx []int) (placement.Contract, []placement.ContractProblem) {
	return placement.ReadGangContract(placement.ContractInput{Group: pg.Annotations, Native: b.set.Native[pg.Namespace+"/"+pg.Name],
		MinMember: pg.Spec.MinMember, Tiers: placement.VolcanoTiers{NamesUnknown: true}, Pods: b.memberAnnotations(idx)})
}
