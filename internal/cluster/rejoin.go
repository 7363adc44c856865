package cluster

import (
	"context"

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
	var alive []ids.NodeID
	for _, n := range nodes {
		id, err := ids.FromBytes(n.NodeId)
		if err != nil || n.State != atollpb.NodeState_NODE_ALIVE || id == g.cfg.NodeID {
			continue
		}
		alive = append(alive, id)
	}
	return alive, nil
}

// ReconcileNodes marks dead, in the GCS, those of listed (the nodes the
// GCS listed alive when the head started, from ListedAlive) that it still
// lists alive and that this node has not heard a load report from, and
// returns them, recording reason as why. Call it on the head, once every
// live node had the time to reconnect and report (the head does, after it
// starts and then every grace, so that registrations never heard from
// expire). Only nodes listed at the start are candidates: one
// that registered since is alive by definition, even if its first load
// report has not arrived yet.
func (g *Gateway) ReconcileNodes(ctx context.Context, listed []ids.NodeID, reason string) ([]ids.NodeID, error) {
	if len(listed) == 0 {
		return nil, nil
	}
	still, err := g.ListedAlive(ctx)
	if err != nil {
		return nil, err
	}
	alive := make(map[ids.NodeID]bool, len(still))
	for _, id := range still {
		alive[id] = true
	}
	var gone []ids.NodeID
	for _, id := range listed {
		if !alive[id] || g.heard.has(id) {
			continue
		}
		if err := g.cfg.GCS.MarkNodeDead(ctx, id.Bytes(), false, reason); err != nil {
			return gone, err
		}
		gone = append(gone, id)
	}
	return gone, nil
}
