package simulatecmd

import (
	"encoding/json"
	"fmt"
	"io"

	schedulingv1beta1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"

	"github.com/rdmatopo/rdmatopo/internal/kubectlcmd"
	"github.com/rdmatopo/rdmatopo/internal/live"
	"github.com/rdmatopo/rdmatopo/internal/sim"
	"github.com/rdmatopo/rdmatopo/internal/workload"
)

// nextSession runs the scheduler's next session over the live cluster: one
// cycle of the real Volcano actions and plugins of conf (what `simulate`
// runs), with every gang waiting in the cluster, in Volcano's job order.
func nextSession(conf *sim.Conf, snap *live.Snapshot) (*sim.Report, error) {
	set := &workload.Set{Queues: snap.Queues, PriorityClasses: snap.PriorityClasses}
	w, _ := waitingSet(snap, conf.Topology.WithDefaults().RDMAResource)
	set.PodGroups, set.Pods = w.PodGroups, w.Pods
	if len(set.Queues) == 0 {
		set.Queues = []*schedulingv1beta1.Queue{defaultQueue()}
	}
	s, err := sim.New(conf, snap.Cluster, sim.Options{})
	if err != nil {
		return nil, err
	}
	if err := s.Submit(set); err != nil {
		return nil, err
	}
	if _, err := s.RunCycle(); err != nil {
		return nil, err
	}
	return sim.BuildReport(s), nil
}

// runNextSession is --next-session: it reads a kubectlcmd.NextSessionInput
// from in, runs the next session and prints its outcome (simjson) to out.
func runNextSession(in io.Reader, out io.Writer) error {
	var input kubectlcmd.NextSessionInput
	if err := json.NewDecoder(in).Decode(&input); err != nil {
		return fmt.Errorf("--%s: reading the input: %w", kubectlcmd.NextSessionFlag, err)
	}
	if input.Snapshot == nil || input.Snapshot.Cluster == nil {
		return fmt.Errorf("--%s: the input holds no cluster", kubectlcmd.NextSessionFlag)
	}
	conf, err := sim.ParseConf(input.Conf)
	if err != nil {
		return fmt.Errorf("--%s: scheduler conf: %w", kubectlcmd.NextSessionFlag, err)
	}
	rep, err := nextSession(conf, input.Snapshot)
	if err != nil {
		return err
	}
	return json.NewEncoder(out).Encode(sim.JSONReport(rep))
}
