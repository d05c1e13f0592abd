package preemption

import (
	"bytes"
	"encoding/json"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rdmatopo/rdmatopo/core/placement"
	"github.com/rdmatopo/rdmatopo/core/topology"
)

// Claim is the room a waiting hard gang is kept: younger gangs of its
// priority are not placed there while it waits.
type Claim struct {
	// Job is the claiming job's UID; Name its "namespace/name".
	Job  string `json:"job"`
	Name string `json:"name"`
	// Priority and Created are the job's, when it claimed: the claim keeps
	// out jobs of that priority created later.
	Priority int32       `json:"priority"`
	Created  metav1.Time `json:"created"`
	// Room names the room ("s1 <id>", "s0 <id>", "node <name>"). S0s are
	// its leaves (none for a node room): RDMA gangs kept out of it do not
	// use their NICs. Nodes are its nodes: a node room keeps RDMA gangs off
	// the node, and every room keeps pods without RDMA off its nodes.
	Room  string                 `json:"room"`
	S0s   map[topology.S0ID]bool `json:"s0s,omitempty"`
	Nodes map[string]bool        `json:"nodes,omitempty"`
	// Renewed is when the claim was last named: a claim its gang does not
	// name again lasts ClaimGrace from then while the gang waits. It is
	// not encoded (EncodeClaims would change every session): a claim read
	// back is renewed by its reader.
	Renewed metav1.Time `json:"-"`
}

// ClaimGrace is how long a claim lasts after it was last named while its
// gang still waits but is not found to fit its room any more. The room is
// named from the pods the scheduler knows: when one of them is deleted, a
// node agent may list its allocation for a few more seconds, and in those
// sessions the gang fits no room. Without the grace the claim would lapse
// then, and a younger gang take the room the pod just freed.
const ClaimGrace = 30 * time.Second

// Lapsed reports whether the claim, not named again, has outlived
// ClaimGrace at now.
func (c *Claim) Lapsed(now time.Time) bool {
	return now.Sub(c.Renewed.Time) >= ClaimGrace
}

// claimsRecord is the claims as EncodeClaims writes them.
type claimsRecord struct {
	// Version is the record's format, claimsVersion.
	Version int      `json:"version"`
	Claims  []*Claim `json:"claims"`
}

// claimsVersion is the format EncodeClaims writes and DecodeClaims reads.
const claimsVersion = 1

// EncodeClaims is the claims as a new leader reads them back with
// DecodeClaims: the same claims give the same bytes (claims in the order
// given, map keys sorted).
func EncodeClaims(claims []*Claim) ([]byte, error) {
	if claims == nil {
		claims = []*Claim{}
	}
	return json.Marshal(claimsRecord{Version: claimsVersion, Claims: claims})
}

// DecodeClaims reads what EncodeClaims wrote. A record of another version,
// unknown fields or a claim without its job, name or room is an error
// naming what is wrong; nothing of a bad record is returned.
func DecodeClaims(data []byte) ([]*Claim, error) {
	var rec claimsRecord
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&rec); err != nil {
		return nil, err
	}
	if dec.More() {
		return nil, fmt.Errorf("data after the record")
	}
	if rec.Version != claimsVersion {
		return nil, fmt.Errorf("version %d, want %d", rec.Version, claimsVersion)
	}
	seen := map[string]bool{}
	for i, c := range rec.Claims {
		switch {
		case c == nil:
			return nil, fmt.Errorf("claims[%d]: null", i)
		case c.Job == "":
			return nil, fmt.Errorf("claims[%d].job: empty", i)
		case c.Name == "":
			return nil, fmt.Errorf("claims[%d].name: empty", i)
		case c.Room == "":
			return nil, fmt.Errorf("claims[%d].room: empty", i)
		case len(c.Nodes) == 0 && len(c.S0s) == 0:
			return nil, fmt.Errorf("claims[%d]: room %q has neither nodes nor s0s", i, c.Room)
		case seen[c.Job]:
			return nil, fmt.Errorf("claims[%d].job: %s claims twice", i, c.Job)
		}
		seen[c.Job] = true
	}
	return rec.Claims, nil
}

// Older reports whether job a (created at ca) is ahead of job b in age:
// created earlier, or at the same time with the smaller UID.
func Older(ca metav1.Time, a string, cb metav1.Time, b string) bool {
	if !ca.Equal(&cb) {
		return ca.Before(&cb)
	}
	return a < b
}

// Against returns the claims that keep a waiting job (UID job, priority
// prio, created at created, with no pod placed) out of their rooms: those
// of older gangs of its priority (Older) that still wait, waiting telling
// whether a claiming job is in the session at the claim's priority and
// short of its minimum (not placed by an earlier action, not gone).
func Against(claims []*Claim, job string, prio int32, created metav1.Time, waiting func(job string, prio int32) bool) []*Claim {
	var out []*Claim
	for _, c := range claims {
		if c.Job == job || c.Priority != prio || !Older(c.Created, c.Job, created, job) {
			continue
		}
		if waiting(c.Job, c.Priority) {
			out = append(out, c)
		}
	}
	return out
}

// KeepOff keeps gang g out of the claims' rooms: their leaves go to its
// excluded S0s, node rooms to its excluded nodes. It returns the first
// claim's gang name and how many claims there are ("", 0 when none).
func KeepOff(g *placement.Gang, claims []*Claim) (string, int) {
	for _, c := range claims {
		if len(c.S0s) == 0 {
			if g.Exclude == nil {
				g.Exclude = map[string]bool{}
			}
			for n := range c.Nodes {
				g.Exclude[n] = true
			}
			continue
		}
		if g.ExcludeS0s == nil {
			g.ExcludeS0s = map[topology.S0ID]bool{}
		}
		for id := range c.S0s {
			g.ExcludeS0s[id] = true
		}
	}
	if len(claims) == 0 {
		return "", 0
	}
	return claims[0].Name, len(claims)
}

// ClaimedNodes returns the nodes of the claims' rooms, each with the first
// claim's gang name that keeps it (nil when there is none).
func ClaimedNodes(claims []*Claim) map[string]string {
	var out map[string]string
	for _, c := range claims {
		if out == nil {
			out = map[string]string{}
		}
		for n := range c.Nodes {
			if _, ok := out[n]; !ok {
				out[n] = c.Name
			}
		}
	}
	return out
}

// ClaimedFailure returns f with a note that n rooms are kept for older
// waiting gangs of the same priority, by first, so the PodGroup says why
// its gang waits behind them.
func ClaimedFailure(f *placement.Failure, by string, n int) *placement.Failure {
	if f == nil || by == "" {
		return f
	}
	out := *f
	rooms := "a room"
	if n > 1 {
		rooms = fmt.Sprintf("%d rooms", n)
	}
	out.Message = fmt.Sprintf("%s (%s kept for %s, an older waiting gang of the same priority)", f.Message, rooms, by)
	return &out
}
