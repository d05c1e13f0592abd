package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
)

// auditEvent is the part of an audit.k8s.io/v1 Event the report reads.
type auditEvent struct {
	AuditID string `json:"auditID"`
	// Received and Done bound the request (RFC 3339, microseconds).
	Received  time.Time `json:"requestReceivedTimestamp"`
	Done      time.Time `json:"stageTimestamp"`
	Stage     string    `json:"stage"`
	Verb      string    `json:"verb"`
	UserAgent string    `json:"userAgent"`
	User      struct {
		Username string `json:"username"`
	} `json:"user"`
	ObjectRef *struct {
		Resource    string `json:"resource"`
		Subresource string `json:"subresource"`
	} `json:"objectRef"`
	ResponseStatus *struct {
		Code int `json:"code"`
	} `json:"responseStatus"`
}

// auditCounts are the scheduler's requests as the API server's audit log
// recorded them.
type auditCounts struct {
	requests, rejected429 int
	byKind                map[string]int
	userAgents            []string
	// peakInFlight is the most requests (watches aside) the user had
	// open at once.
	peakInFlight int
}

// readAudit counts the requests of users in an audit log: one per audit ID
// (a watch is counted when it starts), 429 answers separately.
func readAudit(path string, users ...string) (auditCounts, error) {
	f, err := os.Open(path)
	if err != nil {
		return auditCounts{}, err
	}
	defer f.Close()
	c := auditCounts{byKind: map[string]int{}}
	seen := map[string]bool{}
	type edge struct {
		at time.Time
		d  int
	}
	var edges []edge
	agents := map[string]bool{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		var ev auditEvent
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			return c, fmt.Errorf("%s: %w", path, err)
		}
		if !slices.Contains(users, ev.User.Username) || seen[ev.AuditID] {
			continue
		}
		if ev.Verb != "watch" && ev.Stage == "ResponseComplete" {
			edges = append(edges, edge{ev.Received, 1}, edge{ev.Done, -1})
		}
		seen[ev.AuditID] = true
		c.requests++
		agents[ev.UserAgent] = true
		kind := ev.Verb
		if ev.ObjectRef != nil {
			kind += " " + ev.ObjectRef.Resource
			if ev.ObjectRef.Subresource != "" {
				kind += "/" + ev.ObjectRef.Subresource
			}
		}
		c.byKind[kind]++
		if ev.ResponseStatus != nil && ev.ResponseStatus.Code == 429 {
			c.rejected429++
			c.byKind["429 "+kind]++
		}
	}
	for a := range agents {
		c.userAgents = append(c.userAgents, a)
	}
	sort.Strings(c.userAgents)
	sort.Slice(edges, func(i, j int) bool {
		if !edges[i].at.Equal(edges[j].at) {
			return edges[i].at.Before(edges[j].at)
		}
		return edges[i].d < edges[j].d // an end before a start at the same instant
	})
	open := 0
	for _, e := range edges {
		open += e.d
		c.peakInFlight = max(c.peakInFlight, open)
	}
	return c, sc.Err()
}

// requestTotals sums apiserver_request_total over every label set, and the
// samples with code="429".
func requestTotals(metrics string) (total, rejected429 int) {
	for _, line := range strings.Split(metrics, "\n") {
		rest, ok := strings.CutPrefix(line, "apiserver_request_total{")
		if !ok {
			continue
		}
		i := strings.LastIndexByte(rest, '}')
		if i < 0 {
			continue
		}
		v, err := strconv.ParseFloat(strings.TrimSpace(rest[i+1:]), 64)
		if err != nil {
			continue
		}
		total += int(v)
		if strings.Contains(rest[:i], `code="429"`) {
			rejected429 += int(v)
		}
	}
	return total, rejected429
}
