package integration

import (
	"context"
	"testing"
	"time"
)

// placeTimeout bounds the wait for a gang to be created by its controller
// and bound by the scheduler.
const placeTimeout = 90 * time.Second

// twoGroups builds the fabric of the placement tests: nodes 1-3 put their
// NUMA-0 NICs under leaf 0 and their NUMA-1 NICs under leaf 1 (three zones
// per leaf), nodes 4-7 theirs under leaves 2 and 3 (four zones per leaf).
// A gang of four single-zone pods fits under one S0 only on leaf 2 or 3,
// one pod per node; a topology-blind scheduler may put it anywhere.
func twoGroups(ctx context.Context, f *fabric) (wideLeaves map[string]bool) {
	for i := 1; i <= 7; i++ {
		leaves := [2]int{0, 1}
		if i >= 4 {
			leaves = [2]int{2, 3}
		}
		f.AddNode(ctx, nodeSpec{Index: i, Leaves: leaves})
	}
	return map[string]bool{f.Leaf(2): true, f.Leaf(3): true}
}

func TestVolcanoJobPlacedUnderOneS0(t *testing.T) {
	e := requireEnv(t)
	ctx := context.Background()
	f := newFabric(t, e)
	ns := newNamespace(t, e)
	wide := twoGroups(ctx, f)

	job := volcanoJob{Name: "llm", Workers: 3, Shape: trainer, Contract: hardS0}
	job.Create(t, e, ns)
	pods := waitBound(t, e, ns, job.Selector(), job.Size(), placeTimeout)

	placed, leaf := checkGangUnderOneS0(t, f, pods, job.Shape)
	if !wide[leaf] {
		t.Errorf("gang placed under S0 %s, which has room for 3 pods only: %s", leaf, describePlacement(placed))
	}
}
