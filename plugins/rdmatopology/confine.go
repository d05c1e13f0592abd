package rdmatopology

// Gangs whose pods request no RDMA NICs under a hard contract. The planner
// places RDMA gangs by their NICs; a gang without NICs has none to place,
// but a hard highest tier below cluster (rdmatopo.io/*, Volcano's
// annotations or spec.networkTopology) still limits where its pods may go:
// all within one domain of that tier, each domain a set of nodes read from
// the fabric as the planner reads it, and a hard segment keeps each block
// of consecutive ranks within one domain of its tier. The topology-allocate
// action places
// such a gang domain by domain (Confine); this file says what the domains
// are and writes the gang's outcome on its PodGroup.

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	v1 "k8s.io/api/core/v1"
	"volcano.sh/volcano/pkg/scheduler/api"

	"github.com/rdmatopo/rdmatopo/core/placement"
	"github.com/rdmatopo/rdmatopo/core/topology"
)

// Domain is one domain of a tier: the nodes a confined gang may share.
type Domain struct {
	// Name names it in messages: the node, "S0 <leaf>" or "S1 <s1>".
	Name string
	// Nodes are its nodes, sorted.
	Nodes []string
}

// Confinement is where a gang whose pods request no RDMA NICs must stay:
// within one domain of Tier and, with a Segment, each block of
// consecutive ranks within one domain of the segment's tier.
type Confinement struct {
	Tier placement.Tier
	// Domains are the tier's domains over the nodes asked for, sorted by
	// name (one domain "cluster" of every node at TierCluster). A node of
	// no domain of the tier (a node with no NIC under a known leaf, for
	// s0; a node the fabric does not know, for s1) is a domain of its
	// own: one node is never wider than a tier.
	Domains []Domain
	// Segment, when set, keeps each block of Segment.Size consecutive
	// ranks within one of Segment.Domains.
	Segment *SegmentConfinement
}

// SegmentConfinement is a confinement's hard sub-group: blocks of Size
// consecutive ranks, each within one of Domains (of Tier, tighter than
// the gang's).
type SegmentConfinement struct {
	Size    int
	Tier    placement.Tier
	Domains []Domain
}

// Confine returns the confinement of a job none of whose pods request RDMA
// NICs, over the session's nodes: nil when its contract limits nothing (soft
// or hard at cluster without a segment, or relaxed after max-wait). A
// segment (subGroupPolicy, partitionPolicy, rdmatopo.io/segment-*) no
// tighter than the gang's tier adds nothing. The error is an invalid
// contract (wrapping placement.ErrInvalidContract); such a job is never
// placed.
func (s *SessionState) Confine(job *api.JobInfo) (*Confinement, error) {
	c, _, err := s.effectiveContract(job)
	if err != nil {
		s.markConfined(job)
		return nil, err
	}
	tier := placement.TierCluster
	if c.Mode == placement.ModeHard && c.HighestTier >= placement.TierNode {
		tier = c.HighestTier
	}
	out := &Confinement{Tier: tier}
	if c.Segment.Set() && c.Segment.Tier < tier && c.Segment.Tier >= placement.TierNode {
		out.Segment = &SegmentConfinement{Size: c.Segment.Size, Tier: c.Segment.Tier, Domains: s.domains(c.Segment.Tier)}
	}
	if tier >= placement.TierCluster {
		if out.Segment == nil {
			return nil, nil
		}
		out.Domains = []Domain{{Name: "cluster", Nodes: s.nodeNames()}}
	} else {
		out.Domains = s.domains(tier)
	}
	s.markConfined(job)
	return out, nil
}

// Ranks returns the rank of each task's pod as the planner reads ranks
// (Runtime.PodRanks); an invalid rank annotation is an error wrapping
// placement.ErrInvalidContract.
func (s *SessionState) Ranks(tasks []*api.TaskInfo) ([]int, error) {
	return s.taskRanks(tasks)
}

// domains returns the domains of tier over the session's nodes, made once
// per session and tier (shared: not to be modified).
func (s *SessionState) domains(tier placement.Tier) []Domain {
	s.mu.Lock()
	d, ok := s.domainsByTier[tier]
	s.mu.Unlock()
	if ok {
		return d
	}
	d = domainsOf(s.fabric, tier, s.nodeNames())
	s.mu.Lock()
	if s.domainsByTier == nil {
		s.domainsByTier = map[placement.Tier][]Domain{}
	}
	s.domainsByTier[tier] = d
	s.mu.Unlock()
	return d
}

// nodeNames lists the session's nodes, sorted.
func (s *SessionState) nodeNames() []string {
	names := make([]string, 0, len(s.ssn.NodeList))
	for _, n := range s.ssn.NodeList {
		names = append(names, n.Name)
	}
	sort.Strings(names)
	return names
}

// domainsOf groups nodes into the domains of tier on the fabric.
func domainsOf(f *topology.Fabric, tier placement.Tier, nodes []string) []Domain {
	byName := map[string][]string{}
	for _, name := range nodes {
		keys := domainKeys(f, tier, name)
		if len(keys) == 0 {
			keys = []string{"node " + name}
		}
		for _, k := range keys {
			byName[k] = append(byName[k], name)
		}
	}
	out := make([]Domain, 0, len(byName))
	for name, members := range byName {
		sort.Strings(members)
		out = append(out, Domain{Name: name, Nodes: members})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// domainKeys names the domains of tier a node belongs to (none: a domain
// of its own).
func domainKeys(f *topology.Fabric, tier placement.Tier, name string) []string {
	n, ok := f.Node(name)
	switch {
	case tier == placement.TierNode || !ok:
		return nil
	case tier == placement.TierS1:
		if n.KCNROnly {
			return nil
		}
		return []string{"S1 " + string(n.S1)}
	}
	var keys []string
	for _, z := range n.Zones {
		for _, c := range z.NICs {
			if k := "S0 " + string(c.S0); c.S0 != "" && !slices.Contains(keys, k) {
				keys = append(keys, k)
			}
		}
	}
	return keys
}

// markConfined records that the job's outcome is written by
// ConfinedPlaced and ReportConfined.
func (s *SessionState) markConfined(job *api.JobInfo) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.confined == nil {
		s.confined = map[api.JobID]string{}
	}
	if _, ok := s.confined[job.UID]; !ok {
		s.confined[job.UID] = ""
	}
}

// ConfinedPlaced records that the confined job was placed within domain
// d of its tier in this session, its blocks of consecutive ranks within
// the segment domains named (none without a segment).
func (s *SessionState) ConfinedPlaced(job *api.JobInfo, c *Confinement, d Domain, segments []string) {
	msg := fmt.Sprintf("pods request no RDMA NICs: placed within one %s domain (%s)", c.Tier, d.Name)
	if c.Tier == placement.TierCluster {
		msg = "pods request no RDMA NICs: placed"
	}
	if c.Segment != nil {
		msg += fmt.Sprintf(", each block of %d consecutive ranks within one %s domain (%s)", c.Segment.Size, c.Segment.Tier, strings.Join(segments, ", "))
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.confined == nil {
		s.confined = map[api.JobID]string{}
	}
	s.confined[job.UID] = msg
}

// closeConfined writes the outcome of a confined job without RDMA pods:
// the contract's error, the reason it waits, or where it was placed.
func (s *SessionState) closeConfined(job *api.JobInfo) {
	s.mu.Lock()
	placed, ok := s.confined[job.UID]
	f := s.failures[job.UID]
	s.mu.Unlock()
	if !ok {
		return
	}
	_, cerr := s.contract(job)
	switch {
	case cerr != nil:
		s.setCondition(job, v1.ConditionFalse, ReasonInvalid, cerr.Error())
	case placed != "" && job.ReadyTaskNum() >= job.MinAvailable:
		s.setCondition(job, v1.ConditionTrue, ReasonPlaced, placed+s.overrideNote(job))
	case f != nil && job.ReadyTaskNum() < job.MinAvailable:
		s.setCondition(job, v1.ConditionFalse, string(f.Code), f.Message+s.overrideNote(job))
	}
}

// ConfinedFailure is the failure of a confined gang no domain holds.
func ConfinedFailure(c *Confinement, pods int, tried []string) *placement.Failure {
	msg := fmt.Sprintf("pods request no RDMA NICs: no %s domain holds the gang's %d pods within its hard highest tier", c.Tier, pods)
	switch {
	case c.Segment != nil && c.Tier == placement.TierCluster:
		msg = fmt.Sprintf("pods request no RDMA NICs: the gang's %d pods do not fit with each block of %d consecutive ranks within one %s domain", pods, c.Segment.Size, c.Segment.Tier)
	case c.Segment != nil:
		msg = fmt.Sprintf("pods request no RDMA NICs: no %s domain holds the gang's %d pods with each block of %d consecutive ranks within one %s domain", c.Tier, pods, c.Segment.Size, c.Segment.Tier)
	}
	if len(tried) > 0 {
		shown := tried
		if len(shown) > 5 {
			shown = append(append([]string(nil), shown[:5]...), fmt.Sprintf("%d more", len(tried)-5))
		}
		msg += " (tried " + strings.Join(shown, ", ") + ")"
	}
	return &placement.Failure{Code: placement.ReasonTierLimit, Message: msg}
}
