package atolltest

import (
	"context"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/atoll-runtime/atoll/atollpb"
	"github.com/atoll-runtime/atoll/faultplan"
	"github.com/atoll-runtime/atoll/internal/actors"
	"github.com/atoll-runtime/atoll/internal/cluster"
	"github.com/atoll-runtime/atoll/internal/ids"
	"github.com/atoll-runtime/atoll/internal/runtime"
)

// FaultLog is what a fault plan injected in this driver: the message
// faults of its node's injector (oldest first, at most
// actors.FaultLogCap) and the actions of its timed rules.
type FaultLog struct {
	Messages []actors.FaultEvent
	Timed    []faultplan.Event
}

// GetFaultLog returns what the fault injector of the driver's node
// (atoll.WithFaultInjector, atoll.WithFaultPlan) and the plan's timed
// rules injected so far. Node processes keep their own logs
// (GetClusterFaultLog reads them). A worker process gets
// ErrInvalidArgument.
func GetFaultLog(ctx context.Context) (FaultLog, error) {
	d, err := runtime.DriverOf(ctx, "GetFaultLog")
	if err != nil {
		return FaultLog{}, err
	}
	var log FaultLog
	log.Messages, log.Timed = d.FaultLog()
	return log, nil
}

// NodeFaultEvent is a message fault and the node whose injector
// injected it.
type NodeFaultEvent struct {
	Node string // the node's id (hex)
	actors.FaultEvent
}

// NodeFaults is what one node's fault injector reported.
type NodeFaults struct {
	Node string
	// Driver: this driver's own node (its log is read in process).
	Driver bool
	// Injector: the node has a fault injector (a fault plan's message
	// rules for its role); without one every count is zero.
	Injector bool
	// Total counts the node's faults ever (the Seq of its latest); Stats
	// and ByRule count them by kind and by rule name, ever.
	Total  uint64
	Stats  actors.Stats
	ByRule map[string]uint64
	// Through is the Seq of the last event read (the caller's since if
	// none was); Lost counts the events after since that the node's ring
	// (actors.FaultLogCap) no longer kept.
	Through, Lost uint64
}

// ClusterFaultLog is what the fault injectors of the cluster's live
// nodes and the driver's plan injected (GetClusterFaultLog).
type ClusterFaultLog struct {
	// Messages are the message faults read, each with its node: node by
	// node (the driver's first), each node's oldest first.
	Messages []NodeFaultEvent
	// Timed are the actions of the driver's plan's timed rules.
	Timed []faultplan.Event
	// Nodes has one entry per node read, the driver's first.
	Nodes []NodeFaults
	// Unreachable are the live nodes whose log could not be read, and
	// why (node id -> error).
	Unreachable map[string]error
}

// Seen returns each node's Through: pass it as the next call's since to
// read only the events after those read.
func (l ClusterFaultLog) Seen() map[string]uint64 {
	out := make(map[string]uint64, len(l.Nodes))
	for _, n := range l.Nodes {
		out[n.Node] = n.Through
	}
	return out
}

const (
	// faultLogTimeout bounds each node's answer to GetClusterFaultLog.
	faultLogTimeout = 5 * time.Second
	// maxFaultPages bounds the pages read from one node in one call: its
	// ring holds actors.FaultLogCap events, a few more pages of faults
	// may arrive meanwhile, and the rest waits for the next call.
	maxFaultPages = actors.FaultLogCap/cluster.MaxFaultEventsPerReply + 4
)

// GetClusterFaultLog returns the faults of every live node of the
// cluster, each labelled with its node, and the driver's: its node's
// message faults and its plan's timed actions (GetFaultLog's). Outside a
// cluster it returns the driver's alone. since
// maps node ids to the last Seq the caller already read of them (nil:
// read each node's log from its oldest kept event); ClusterFaultLog.Seen
// makes the next call's since.
//
// Each node keeps its own log (a ring of actors.FaultLogCap events,
// counts by kind and rule ever) and serves it on its "faults" subject.
// A node that is gone (killed by a plan's kill-node with SIGKILL, or
// stopped) takes its log with it: poll to keep its last reading. Live
// nodes that do not answer within 5 s are listed in Unreachable.
func GetClusterFaultLog(ctx context.Context, since map[string]uint64) (ClusterFaultLog, error) {
	d, err := runtime.DriverOf(ctx, "GetClusterFaultLog")
	if err != nil {
		return ClusterFaultLog{}, err
	}
	_, timed := d.FaultLog()
	out := ClusterFaultLog{Timed: timed, Unreachable: map[string]error{}}
	self := d.NodeID()
	out.add(cluster.FaultLogOf(self, d.Faults(), since[self.String()], actors.FaultLogCap), self.String(), true, since[self.String()])
	n, err := d.ClusterNode("GetClusterFaultLog")
	if err != nil {
		return out, nil // not in a cluster
	}
	nodes, err := n.GCS().ListNodes(ctx)
	if err != nil {
		return out, err
	}
	var (
		mu   sync.Mutex
		logs = map[string][]*atollpb.FaultLog{}
		wg   sync.WaitGroup
	)
	for _, info := range nodes {
		id, err := ids.FromBytes(info.NodeId)
		if err != nil || info.State != atollpb.NodeState_NODE_ALIVE || id == self {
			continue
		}
		wg.Go(func() {
			rctx, cancel := context.WithTimeout(ctx, faultLogTimeout)
			defer cancel()
			after := since[id.String()]
			var pages []*atollpb.FaultLog
			for range maxFaultPages {
				l, err := cluster.RequestFaultLog(rctx, n.Conn(), id, after)
				if err != nil {
					mu.Lock()
					out.Unreachable[id.String()] = err
					mu.Unlock()
					return
				}
				pages = append(pages, l)
				if !l.More || len(l.Events) == 0 {
					break
				}
				after = l.Events[len(l.Events)-1].Seq
			}
			mu.Lock()
			logs[id.String()] = pages
			mu.Unlock()
		})
	}
	wg.Wait()
	for _, node := range slices.Sorted(maps.Keys(logs)) {
		pages := logs[node]
		var events []*atollpb.FaultEvent
		var lost uint64
		for _, p := range pages {
			lost += p.Lost
			events = append(events, p.Events...)
		}
		merged := pages[len(pages)-1] // the latest counts
		merged.Lost, merged.Events = lost, events
		out.add(merged, node, false, since[node])
	}
	return out, nil
}

// add appends node's log l (validated), read after since.
func (out *ClusterFaultLog) add(l *atollpb.FaultLog, node string, driver bool, since uint64) {
	nf := NodeFaults{Node: node, Driver: driver, Injector: l.Injector, Total: l.Total, Lost: l.Lost, ByRule: l.ByRule, Through: since,
		Stats: actors.Stats{Dropped: l.Dropped, Delayed: l.Delayed, Duplicated: l.Duplicated, Recorded: l.Recorded}}
	if nf.ByRule == nil {
		nf.ByRule = map[string]uint64{}
	}
	for _, e := range l.Events {
		out.Messages = append(out.Messages, NodeFaultEvent{Node: node, FaultEvent: actors.FaultEvent{Seq: e.Seq, Rule: e.Rule,
			Match: e.Match, Kind: actors.FaultKind(e.Kind), Message: e.Message, Actor: e.Actor, Point: e.Point, Task: e.Task}})
		nf.Through = e.Seq
	}
	out.Nodes = append(out.Nodes, nf)
}
