package cluster

import (
	"bytes"
	"context"
	"time"

	"github.com/nats-io/nats.go"
	"google.golang.org/protobuf/proto"

	"github.com/atoll-runtime/atoll/atollpb"
	"github.com/atoll-runtime/atoll/internal/errs"
	"github.com/atoll-runtime/atoll/internal/ids"
	"github.com/atoll-runtime/atoll/internal/partition"
)

// A fault plan partitions a node by asking it to cut itself off
// (PartitionNode → servePartition → partition.Switch.Cut): its NATS
// connection, object transfers and gossip stop for the duration, and it
// heals by itself. The others declare it dead after the failure timeout
// and retry its work; once healed, its NATS connection comes back, it
// registers again, learns from the GCS that it is dead (NODE_DIED) and
// stops (node.Node.DeclaredDead). Only the head writes deaths to the GCS
// (nodeGone): what a cut node concluded about the others while alone,
// and sent into its reconnect buffer, cannot kill them after the heal.

// servePartition answers a PartitionRequest: it replies first (the cut
// closes the connection the reply travels on), then cuts the node off.
func (g *Gateway) servePartition(m *nats.Msg) {
	var req atollpb.PartitionRequest
	var err error
	var dir partition.Direction
	var d time.Duration
	switch {
	case proto.Unmarshal(m.Data, &req) != nil:
		err = errs.Invalidf("partition: undecodable request")
	case !bytes.Equal(req.NodeId, g.cfg.NodeID.Bytes()):
		err = errs.Invalidf("partition: request for another node")
	case g.cfg.Partition == nil:
		err = errs.Invalidf("partition: node %s cannot be partitioned (it has no network switch)", g.cfg.NodeID.Short())
	case g.cfg.Node.GetIsHead():
		err = errs.Invalidf("partition: node %s is the head (it serves the control plane to the others)", g.cfg.NodeID.Short())
	default:
		d = time.Duration(req.DurationMs) * time.Millisecond
		var perr error
		if dir, perr = partition.ParseDirection(req.Direction); perr != nil {
			err = errs.Invalidf("partition: %v", perr)
		} else if d <= 0 || d > partition.MaxCut {
			err = errs.Invalidf("partition: a cut of %v: want more than 0 and at most %v", d, partition.MaxCut)
		}
	}
	var reply atollpb.PartitionReply
	if err != nil {
		g.cfg.Logger.Warn("cluster: partition request refused", "err", err)
		reply.Error = errs.ToProto(err)
	}
	b, _ := proto.Marshal(&reply)
	_ = m.Respond(b)
	if err != nil {
		return
	}
	_ = g.cfg.Conn.FlushTimeout(time.Second)
	if err := g.cfg.Partition.Cut(dir, d); err != nil {
		g.cfg.Logger.Warn("cluster: partition", "err", err)
	}
}

// PartitionNode asks node to cut itself off the network in dir
// ("both", "inbound", "outbound") for d (fault injection); it returns
// once the node acknowledged. It fails with ErrNotFound if no live node
// has that id, and ErrInvalidArgument for the head, a node without a
// switch, or a bad direction or duration.
func (g *Gateway) PartitionNode(ctx context.Context, node ids.NodeID, dir string, d time.Duration) error {
	if err := g.faultInjectionAllowed(ctx, "PartitionNode"); err != nil {
		return err
	}
	return askNode(ctx, g.cfg.Conn, nodeSubject(g.cfg.Prefix, node, "partition"), "PartitionNode", node,
		&atollpb.PartitionRequest{NodeId: node.Bytes(), Direction: dir, DurationMs: d.Milliseconds()}, &atollpb.PartitionReply{})
}
