package workload

import (
	"fmt"

	schedulingv1beta1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"

	"github.com/rdmatopo/rdmatopo/framework/placement"
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
		idx := byGroup[pg.Namespace+"/"+pg.Name]
		problems := placement.GangContractProblems(pg.Annotations, b.memberAnnotations(idx))
		if len(problems) == 0 {
			continue
		}
		p := problems[0]
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
		out[j] = placement.MemberAnnotations{Name: b.set.Pods[i].Name, Annotations: b.set.Pods[i].Annotations}
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
		c, _ := placement.ParseGangContract(pg.Annotations, b.memberAnnotations(byGroup[key]))
		if msg := placement.SegmentProblem(c.Segment.Size, members[key]); msg != "" {
			src := b.pgs[key]
			return src.origin.errorf(src.kind, src.namespace, src.name, fmt.Sprintf("metadata.annotations[%q]", placement.AnnotationSegmentSize), "%s", msg)
		}
	}
	return nil
}
