package workload

import (
	"fmt"

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
