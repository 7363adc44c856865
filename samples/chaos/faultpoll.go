package main

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/atoll-runtime/atoll/atolltest"
)

// The node processes of a chaos run are this program re-executed by
// internal/localcluster, served by atoll.Init (node.RunFromEnv): each
// loads the plan faultplan.EnvPlan names into its own fault injector and
// serves that injector's log on its "faults" subject. The driver reads
// them all, its own node's included, with atolltest.GetClusterFaultLog every
// faultPollInterval, asking each node only for the events after those
// already read. A node the plan kills (SIGKILL) takes its log with it:
// the table keeps its last reading, at most one interval old.

// faultPollInterval is how often the driver reads the cluster's faults.
const faultPollInterval = 250 * time.Millisecond

// faultTally is what the polls read: each node's latest counts by rule
// (every fault ever, as of its last reading) and where its faults hit
// (from the events read).
type faultTally struct {
	mu    sync.Mutex
	seen  map[string]uint64 // node -> last Seq read
	nodes map[string]*nodeTally
	// polls counts the reads; failed the reads that failed or missed a
	// live node; lost the events a node's ring dropped between reads.
	polls, failed int
	lost          uint64
}

// nodeTally is one node's faults.
type nodeTally struct {
	driver bool
	byRule map[string]uint64
	where  map[string]map[string]int // rule -> "Message@actor" -> faults
	gone   bool                      // not in the last reading
}

func newFaultTally() *faultTally {
	return &faultTally{seen: map[string]uint64{}, nodes: map[string]*nodeTally{}}
}

// poll reads the cluster's new faults once.
func (ft *faultTally) poll(ctx context.Context) error {
	ft.mu.Lock()
	since := make(map[string]uint64, len(ft.seen))
	for n, s := range ft.seen {
		since[n] = s
	}
	ft.mu.Unlock()
	log, err := atolltest.GetClusterFaultLog(ctx, since)
	ft.mu.Lock()
	defer ft.mu.Unlock()
	ft.polls++
	if err != nil {
		ft.failed++
		return err
	}
	if len(log.Unreachable) > 0 {
		ft.failed++
	}
	read := map[string]bool{}
	for _, n := range log.Nodes {
		t := ft.nodes[n.Node]
		if t == nil {
			t = &nodeTally{driver: n.Driver, where: map[string]map[string]int{}}
			ft.nodes[n.Node] = t
		}
		t.byRule, t.gone = n.ByRule, false
		ft.seen[n.Node] = n.Through
		ft.lost += n.Lost
		read[n.Node] = true
	}
	for _, e := range log.Messages {
		t := ft.nodes[e.Node]
		if t.where[e.Rule] == nil {
			t.where[e.Rule] = map[string]int{}
		}
		t.where[e.Rule][shortMessage(e.Message)+"@"+e.Actor]++
	}
	for id, t := range ft.nodes {
		if !read[id] && log.Unreachable[id] == nil {
			t.gone = true
		}
	}
	return nil
}

// run polls every faultPollInterval until ctx ends.
func (ft *faultTally) run(ctx context.Context) {
	tick := time.NewTicker(faultPollInterval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
			_ = ft.poll(ctx)
		}
	}
}

// rule returns the faults of rule on the driver's node and on the node
// processes, and where they hit.
func (ft *faultTally) rule(name string) (driver, nodes int, where map[string]int) {
	ft.mu.Lock()
	defer ft.mu.Unlock()
	where = map[string]int{}
	for _, t := range ft.nodes {
		if t.driver {
			driver += int(t.byRule[name])
		} else {
			nodes += int(t.byRule[name])
		}
		for w, k := range t.where[name] {
			where[w] += k
		}
	}
	return driver, nodes, where
}

// note describes the readings for the table.
func (ft *faultTally) note() string {
	ft.mu.Lock()
	defer ft.mu.Unlock()
	gone := 0
	for _, t := range ft.nodes {
		if t.gone {
			gone++
		}
	}
	s := fmt.Sprintf("faults read from %d nodes (the driver's included) by %d polls of atolltest.GetClusterFaultLog every %v; %d node(s) gone by the end keep their last reading",
		len(ft.nodes), ft.polls, faultPollInterval, gone)
	if ft.failed > 0 {
		s += fmt.Sprintf("; %d poll(s) failed or missed a live node", ft.failed)
	}
	if ft.lost > 0 {
		s += fmt.Sprintf("; %d events dropped by a node's ring between polls: \"where\" counts are low (totals are exact)", ft.lost)
	}
	return s
}
