package integration

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// podNICs is one pod's NICs as the scheduler annotated them, checked
// against the fabric.
type podNICs struct {
	Pod  string
	Node string
	NICs []string
	NUMA int
	S0   string
}

// checkPodNICs checks that a bound pod carries rdmatopo.io/nics,
// rdmatopo.io/numa and rdmatopo.io/s0 that agree with the fabric: as many
// NICs as it requested, all on its node, all in the NUMA zone the pod is
// annotated with (the nodes' policy is single-NUMA), and all under the S0
// it is annotated with.
func checkPodNICs(f *fabric, pod corev1.Pod, shape podShape) (podNICs, error) {
	id := pod.Namespace + "/" + pod.Name
	out := podNICs{Pod: id, Node: pod.Spec.NodeName, NICs: splitList(pod.Annotations[annNICs])}
	if out.Node == "" {
		return out, fmt.Errorf("pod %s is not bound", id)
	}
	if int64(len(out.NICs)) != shape.NICs {
		return out, fmt.Errorf("pod %s: %s=%q names %d NICs, the pod requests %d",
			id, annNICs, pod.Annotations[annNICs], len(out.NICs), shape.NICs)
	}
	numa, err := strconv.Atoi(pod.Annotations[annNUMA])
	if err != nil {
		return out, fmt.Errorf("pod %s: %s=%q is not one NUMA id: %v", id, annNUMA, pod.Annotations[annNUMA], err)
	}
	out.NUMA = numa
	out.S0 = pod.Annotations[annS0]
	seen := map[string]bool{}
	for _, nic := range out.NICs {
		info, ok := f.nics[out.Node][nic]
		if !ok {
			return out, fmt.Errorf("pod %s: NIC %s is not a NIC of node %s", id, nic, out.Node)
		}
		if seen[nic] {
			return out, fmt.Errorf("pod %s: NIC %s listed twice", id, nic)
		}
		seen[nic] = true
		if info.NUMA != numa {
			return out, fmt.Errorf("pod %s: NIC %s is in NUMA zone %d, the pod is annotated %s=%d", id, nic, info.NUMA, annNUMA, numa)
		}
		if info.S0 != out.S0 {
			return out, fmt.Errorf("pod %s: NIC %s is under S0 %s, the pod is annotated %s=%q", id, nic, info.S0, annS0, out.S0)
		}
	}
	return out, nil
}

// checkNICsWithinUnits fails the test when more pods hold a NIC of a node than
// it has RDMA units (two pods on a NIC of one unit).
func checkNICsWithinUnits(t *testing.T, f *fabric, placed []podNICs) {
	t.Helper()
	holders := map[string][]string{}
	for _, p := range placed {
		for _, nic := range p.NICs {
			key := p.Node + "/" + nic
			holders[key] = append(holders[key], p.Pod)
			if units := max(f.nics[p.Node][nic].Units, 1); int64(len(holders[key])) > units {
				t.Errorf("NIC %s of node %s (%d RDMA units) is given to %s", nic, p.Node, units, strings.Join(holders[key], ", "))
			}
		}
	}
}

// checkGangNICs checks a bound gang's pods one by one (checkPodNICs, each
// failure an error) and that no NIC serves more pods than its units; it returns the NICs of
// the pods that passed.
func checkGangNICs(t *testing.T, f *fabric, pods []corev1.Pod, shape podShape) []podNICs {
	t.Helper()
	var placed []podNICs
	for _, p := range pods {
		pn, err := checkPodNICs(f, p, shape)
		if err != nil {
			t.Error(err)
			continue
		}
		placed = append(placed, pn)
	}
	checkNICsWithinUnits(t, f, placed)
	return placed
}

// checkGangUnderOneS0 checks a bound gang: every pod's NICs agree with the
// fabric and are NUMA-aligned, no NIC serves more pods than its units, all NICs hang off one
// S0, the PodGroup's placement annotation says tier s0 with that S0, and its
// placed condition is True. It returns the pods' NICs and the S0.
func checkGangUnderOneS0(t *testing.T, f *fabric, pods []corev1.Pod, shape podShape) ([]podNICs, string) {
	t.Helper()
	placed := checkGangNICs(t, f, pods, shape)
	leaves := map[string]bool{}
	for _, pn := range placed {
		leaves[pn.S0] = true
	}
	if len(leaves) != 1 {
		t.Fatalf("gang spans %d S0s: %s", len(leaves), describePlacement(placed))
	}
	t.Logf("placed: %s", describePlacement(placed))
	var leaf string
	for l := range leaves {
		leaf = l
	}
	pg := podGroupOf(t, f.e, pods[0])
	got, err := decodePlacement(pg)
	if err != nil {
		t.Fatal(err)
	}
	if got.Tier != "s0" || len(got.S0) != 1 || got.S0[0] != leaf {
		t.Errorf("PodGroup %s/%s %s = %+v, want tier s0 with S0 [%s]", pg.Namespace, pg.Name, annPlacement, got, leaf)
	}
	if c := condition(pg, placedCondition); c == nil || c.Status != corev1.ConditionTrue {
		t.Errorf("PodGroup condition %s not True: %s", placedCondition, describePodGroup(pg))
	}
	return placed, leaf
}

// describePlacement lists pods with node, NUMA, S0 and NICs.
func describePlacement(placed []podNICs) string {
	lines := make([]string, 0, len(placed))
	for _, p := range placed {
		lines = append(lines, fmt.Sprintf("%s on %s numa %d s0 %.8s nics %s", p.Pod, p.Node, p.NUMA, p.S0, strings.Join(p.NICs, ",")))
	}
	sort.Strings(lines)
	return strings.Join(lines, "; ")
}

// nicSet returns node/NIC keys of placed pods.
func nicSet(placed []podNICs) map[string]bool {
	out := map[string]bool{}
	for _, p := range placed {
		for _, nic := range p.NICs {
			out[p.Node+"/"+nic] = true
		}
	}
	return out
}
