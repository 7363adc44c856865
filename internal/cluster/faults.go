package cluster

import (
	"context"
	"fmt"

	"github.com/nats-io/nats.go"
	"google.golang.org/protobuf/proto"

	"github.com/atoll-runtime/atoll/atollpb"
	"github.com/atoll-runtime/atoll/internal/actors"
	"github.com/atoll-runtime/atoll/internal/errs"
	"github.com/atoll-runtime/atoll/internal/ids"
)

// A node's fault log leaves the node on its "faults" subject: the node
// that injected the faults owns them (its actors.FaultInjector), and
// anyone with the cluster's credentials may page through them
// (RequestFaultLog). A node killed with SIGKILL takes its log with it.

const (
	// MaxFaultEventsPerReply bounds the events one FaultLog reply
	// carries: a reader pages with after_seq.
	MaxFaultEventsPerReply = 1024
	// MaxFaultNameBytes bounds each name a FaultLog carries (rule,
	// message, actor); longer names are cut on the way out and refused
	// on the way in.
	MaxFaultNameBytes = 256
)

// FaultsSubject is where node answers fault-log requests (a
// atollpb.FaultLogRequest body, a atollpb.FaultLog reply).
func FaultsSubject(node ids.NodeID) string { return nodeSubject(DefaultPrefix, node, "faults") }

// serveFaults answers a fault-log request with a page of the node's
// injector's log (the NATS callback: an injector read is a lock and a
// copy of at most MaxFaultEventsPerReply events).
func (g *Gateway) serveFaults(m *nats.Msg) {
	var req atollpb.FaultLogRequest
	if err := proto.Unmarshal(m.Data, &req); err != nil {
		g.cfg.Logger.Debug("cluster: undecodable fault-log request", "err", err)
		return
	}
	l := FaultLogOf(g.cfg.NodeID, g.cfg.Faults, req.AfterSeq, MaxFaultEventsPerReply)
	b, _ := proto.Marshal(l)
	// Keep the oldest events that fit in one NATS message; the rest make
	// the next page.
	for limit := g.cfg.Conn.MaxPayload(); limit > 0 && int64(len(b)) > limit && len(l.Events) > 0; b, _ = proto.Marshal(l) {
		l.Events, l.More = l.Events[:len(l.Events)/2], true
	}
	_ = m.Respond(b)
}

// FaultLogOf is the FaultLog of node's injector fi (nil: none): at most
// limit events numbered after after.
func FaultLogOf(node ids.NodeID, fi *actors.FaultInjector, after uint64, limit int) *atollpb.FaultLog {
	out := &atollpb.FaultLog{NodeId: node.Bytes()}
	if fi == nil {
		return out
	}
	s := fi.Snapshot(after, limit)
	out.Injector, out.Total, out.Lost, out.More = true, s.Total, s.Lost, s.More
	out.Dropped, out.Delayed, out.Duplicated, out.Recorded = s.Stats.Dropped, s.Stats.Delayed, s.Stats.Duplicated, s.Stats.Recorded
	out.ByRule = make(map[string]uint64, len(s.ByRule))
	for r, n := range s.ByRule {
		out.ByRule[cut(r)] += n
	}
	for _, e := range s.Events {
		out.Events = append(out.Events, &atollpb.FaultEvent{Seq: e.Seq, Rule: cut(e.Rule), Match: e.Match, Kind: uint32(e.Kind),
			Message: cut(e.Message), Actor: cut(e.Actor), Point: cut(e.Point), Task: cut(e.Task)})
	}
	return out
}

func cut(s string) string { return s[:min(len(s), MaxFaultNameBytes)] }

// RequestFaultLog asks node for the events of its fault log numbered
// after after (one page) and validates the answer: the node it came
// from, events in order within the page and the node's total, bounded
// names and counts. A node that does not answer in time is an
// Unavailable error; a malformed answer an Invalid one.
func RequestFaultLog(ctx context.Context, nc *nats.Conn, node ids.NodeID, after uint64) (*atollpb.FaultLog, error) {
	body, _ := proto.Marshal(&atollpb.FaultLogRequest{AfterSeq: after})
	msg, err := nc.RequestWithContext(ctx, FaultsSubject(node), body)
	if err != nil {
		return nil, errs.Unavailablef("node %s: fault log: %v", node, err)
	}
	var l atollpb.FaultLog
	if err := proto.Unmarshal(msg.Data, &l); err != nil {
		return nil, errs.Invalidf("node %s: undecodable fault log: %v", node, err)
	}
	if err := validFaultLog(&l, node, after); err != nil {
		return nil, errs.Invalidf("node %s: fault log: %v", node, err)
	}
	return &l, nil
}

// validFaultLog checks a FaultLog from node asked for events after after.
func validFaultLog(l *atollpb.FaultLog, node ids.NodeID, after uint64) error {
	id, err := ids.FromBytes(l.NodeId)
	switch {
	case err != nil:
		return fmt.Errorf("node_id: %w", err)
	case id != node:
		return fmt.Errorf("answered by node %s", id)
	case len(l.Events) > MaxFaultEventsPerReply:
		return fmt.Errorf("%d events, at most %d", len(l.Events), MaxFaultEventsPerReply)
	case len(l.ByRule) > actors.MaxRuleCounts+1:
		return fmt.Errorf("%d rule counts, at most %d", len(l.ByRule), actors.MaxRuleCounts+1)
	case l.Dropped+l.Delayed+l.Duplicated+l.Recorded != l.Total:
		return fmt.Errorf("%d faults by kind, total %d", l.Dropped+l.Delayed+l.Duplicated+l.Recorded, l.Total)
	}
	var sum uint64
	for r, n := range l.ByRule {
		if len(r) > MaxFaultNameBytes {
			return fmt.Errorf("rule name of %d bytes", len(r))
		}
		sum += n
	}
	if sum != l.Total {
		return fmt.Errorf("%d faults by rule, total %d", sum, l.Total)
	}
	prev := after
	for _, e := range l.Events {
		switch {
		case e == nil:
			return fmt.Errorf("a nil event")
		case e.Seq <= prev || e.Seq > l.Total:
			return fmt.Errorf("event %d after %d (total %d)", e.Seq, prev, l.Total)
		case e.Kind < uint32(actors.FaultDrop) || e.Kind > uint32(actors.FaultPanic):
			return fmt.Errorf("event %d: kind %d", e.Seq, e.Kind)
		case len(e.Rule) > MaxFaultNameBytes || len(e.Message) > MaxFaultNameBytes || len(e.Actor) > MaxFaultNameBytes ||
			len(e.Point) > MaxFaultNameBytes || len(e.Task) > MaxFaultNameBytes:
			return fmt.Errorf("event %d: a name past %d bytes", e.Seq, MaxFaultNameBytes)
		}
		prev = e.Seq
	}
	return nil
}
