package cluster

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/atoll-runtime/atoll/atollpb"
	"github.com/atoll-runtime/atoll/internal/ids"
)

// A head that restarts on its GCS directory (or on an external NATS)
// reloads the nodes the GCS knew. Two things keep that list true:
//
//   - Reregister: every node registers again when its NATS connection
//     comes back (node.Node installs it as the connection's reconnect
//     handler), so the head lists the nodes still running even if its
//     state was lost or older than them; a node the GCS lists dead is
//     refused (NODE_DIED) and stops, as when it hears of its own death.
//   - ReconcileNodes: the restarted head, once every live node had the
//     time to reconnect, marks dead the nodes the GCS listed alive when
//     it started (and still does) that it has not heard a load report from (every node publishes one
//     every 100 ms on NATS; one that cannot reach NATS is of no use):
//     nodes that died while the head was down (their peers could not
//     tell the GCS) and the previous head itself if it was killed. Until
//     then the GCS only ever reloads what it stored: loading marks no
//     node dead, and the head's gossip declares dead only the members it
//     heard from, so a restart alone never declares a live node dead.
//     It also marks dead again the nodes the GCS lists dead whose actors
//     it still lists live there (a death whose actors' writes failed, the
//     head that would have reported it again gone or given up), and goes
//     on past any node it fails to mark: the next round tries it again.

// Reregister registers this node in the GCS again (gcs.Client.ReregisterNode)
// with what Start registered. It fails with NODE_DIED if the GCS lists
// the node dead. Safe for concurrent use once Start returned.
func (g *Gateway) Reregister(ctx context.Context) error {
	return g.cfg.GCS.ReregisterNode(ctx, g.info)
}

// ListedAlive returns the nodes the GCS lists alive, other than this one:
// on a head that just started, the candidates for ReconcileNodes.
func (g *Gateway) ListedAlive(ctx context.Context) ([]ids.NodeID, error) {
	nodes, err := g.cfg.GCS.ListNodes(ctx)
	if err != nil {
		return nil, err
	}
	return listedAlive(nodes, g.cfg.NodeID), nil
}

// maxReconcileErrors bounds the failures one ReconcileNodes logs and
// returns; the others are counted.
const maxReconcileErrors = 8

// ReconcileNodes marks dead, in the GCS, those of listed (the nodes the
// GCS listed alive when the head started, from ListedAlive) that it still
// lists alive and that this node has not heard a load report from, and
// returns them, recording reason as why. Call it on the head, once every
// live node had the time to reconnect and report (the head does, after it
// starts and then every grace, so that registrations never heard from
// expire). Only nodes listed at the start are candidates: one
// that registered since is alive by definition, even if its first load
// report has not arrived yet.
//
// It also marks dead again the nodes the GCS lists dead that still host
// actors it lists live (a death whose actors' writes failed, reported
// UNAVAILABLE while the head that would have reported it again was down,
// or given up on): the GCS then updates the actors left there
// (internal/gcs, mark_node_dead). Those are logged, not returned. The GCS
// finds them (ListActorsLeftOnDeadNodes): the reply holds only them.
//
// A failure does not stop the others: the failures (the first
// maxReconcileErrors logged and joined, the rest counted) come back
// together with the nodes marked dead.
func (g *Gateway) ReconcileNodes(ctx context.Context, listed []ids.NodeID, reason string) ([]ids.NodeID, error) {
	var fails reconcileErrors
	nodes, err := g.cfg.GCS.ListNodes(ctx)
	if err != nil {
		return nil, err
	}
	var gone []ids.NodeID
	for _, id := range silentNodes(listed, nodes, g.cfg.NodeID, g.heard.has) {
		if err := g.cfg.GCS.MarkNodeDead(ctx, id.Bytes(), false, reason); err != nil {
			fails.add(g.cfg.Logger, "cluster: marking dead a node the GCS lists alive but that was not heard from failed", id, err)
			if ctx.Err() != nil {
				return gone, fails.err()
			}
			continue
		}
		gone = append(gone, id)
	}
	if len(deadNodes(nodes)) == 0 {
		return gone, fails.err()
	}
	actors, err := g.cfg.GCS.ListActorsLeftOnDeadNodes(ctx)
	if err != nil {
		fails.add(g.cfg.Logger, "cluster: listing the actors, to find those left on dead nodes, failed", ids.NodeID{}, err)
		return gone, fails.err()
	}
	for _, l := range leftOnDeadNodes(nodes, actors) {
		// Marked dead already: the first end time and reason stand.
		if err := g.cfg.GCS.MarkNodeDead(ctx, l.node.Bytes(), false, reason); err != nil {
			fails.add(g.cfg.Logger, "cluster: marking dead again a dead node whose actors the GCS still lists on it failed", l.node, err)
			if ctx.Err() != nil {
				break
			}
			continue
		}
		g.cfg.Logger.Warn("cluster: marked dead again a dead node whose actors the GCS still listed on it (their update had failed)",
			"node", l.node.Short(), "actors", l.actors)
	}
	return gone, fails.err()
}

// reconcileErrors collects ReconcileNodes' failures: the first
// maxReconcileErrors logged and kept, the others counted.
type reconcileErrors struct {
	kept []error
	more int
}

func (r *reconcileErrors) add(log *slog.Logger, msg string, node ids.NodeID, err error) {
	if len(r.kept) == maxReconcileErrors {
		r.more++
		return
	}
	if node != (ids.NodeID{}) {
		log.Warn(msg, "node", node.Short(), "err", err)
		err = fmt.Errorf("node %s: %w", node.Short(), err)
	} else {
		log.Warn(msg, "err", err)
	}
	r.kept = append(r.kept, err)
}

func (r *reconcileErrors) err() error {
	if r.more > 0 {
		return errors.Join(append(r.kept, fmt.Errorf("and %d more failures", r.more))...)
	}
	return errors.Join(r.kept...)
}

// What ReconcileNodes marks dead, decided from the GCS's lists alone (the
// functions below are pure; ReconcileNodes does the I/O).

// listedAlive returns the nodes of nodes listed alive, other than self,
// in the GCS's order.
func listedAlive(nodes []*atollpb.NodeInfo, self ids.NodeID) []ids.NodeID {
	var alive []ids.NodeID
	for _, n := range nodes {
		id, err := ids.FromBytes(n.NodeId)
		if err != nil || n.State != atollpb.NodeState_NODE_ALIVE || id == self {
			continue
		}
		alive = append(alive, id)
	}
	return alive
}

// silentNodes returns those of listed that nodes still lists alive and
// that were not heard from, in listed's order (never self).
func silentNodes(listed []ids.NodeID, nodes []*atollpb.NodeInfo, self ids.NodeID, heard func(ids.NodeID) bool) []ids.NodeID {
	alive := map[ids.NodeID]bool{}
	for _, id := range listedAlive(nodes, self) {
		alive[id] = true
	}
	var out []ids.NodeID
	for _, id := range listed {
		if alive[id] && !heard(id) {
			out = append(out, id)
		}
	}
	return out
}

// deadNodes returns the set of the nodes listed dead.
func deadNodes(nodes []*atollpb.NodeInfo) map[ids.NodeID]bool {
	dead := map[ids.NodeID]bool{}
	for _, n := range nodes {
		if id, err := ids.FromBytes(n.NodeId); err == nil && n.State == atollpb.NodeState_NODE_DEAD {
			dead[id] = true
		}
	}
	return dead
}

// leftover is a node listed dead and how many actors the GCS still lists
// live on it.
type leftover struct {
	node   ids.NodeID
	actors int
}

// leftOnDeadNodes returns the nodes listed dead that host actors listed
// live (any state but DEAD, the node set: what the GCS updates when the
// node is marked dead), in node order.
func leftOnDeadNodes(nodes []*atollpb.NodeInfo, actors []*atollpb.ActorInfo) []leftover {
	dead := deadNodes(nodes)
	count := map[ids.NodeID]int{}
	for _, a := range actors {
		id, err := ids.FromBytes(a.NodeId)
		if err != nil || a.State == atollpb.ActorState_ACTOR_DEAD || !dead[id] {
			continue
		}
		count[id]++
	}
	out := make([]leftover, 0, len(count))
	for _, id := range sortedNodes(count) {
		out = append(out, leftover{id, count[id]})
	}
	return out
}
