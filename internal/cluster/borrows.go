package cluster

import (
	"fmt"

	"github.com/nats-io/nats.go"
	"google.golang.org/protobuf/proto"

	"github.com/atoll-runtime/atoll/atollpb"
	"github.com/atoll-runtime/atoll/internal/ids"
	"github.com/atoll-runtime/atoll/internal/owner"
	"github.com/atoll-runtime/atoll/internal/raylet"
)

// Borrowers' standalone reports across nodes: a borrower on this node
// that dropped objects an owner on another node lent it reports to that
// owner on <prefix>.node.<owner node>.borrows (atollpb.BorrowReport);
// the owner's node validates it and hands it to its raylet, which routes
// it to the owner process.

// borrowsSubject is where node takes borrowers' reports for its owners.
func borrowsSubject(prefix string, node ids.NodeID) string {
	return nodeSubject(prefix, node, "borrows")
}

// sendBorrows publishes a report to the owner's node; it never blocks
// (NATS buffers). A report too large for the server, or a publish that
// fails, is logged and dropped: the owner keeps the objects until the
// borrower's next report or its death.
func (g *Gateway) sendBorrows(node ids.NodeID, m *atollpb.BorrowReport) {
	if err := publishTo(g.cfg.Conn, borrowsSubject(g.cfg.Prefix, node), m); err != nil {
		g.cfg.Logger.Warn("cluster: a borrow report not sent; its owner keeps the objects until the borrower reports again or dies",
			"node", node.Short(), "objects", len(m.Borrows), "err", err)
	}
}

// serveBorrows takes a report for an owner on this node: decoded and
// validated here, routed by the raylet.
func (g *Gateway) serveBorrows(m *nats.Msg) {
	var r atollpb.BorrowReport
	if err := proto.Unmarshal(m.Data, &r); err != nil {
		g.cfg.Logger.Warn("cluster: undecodable borrow report dropped", "err", err)
		return
	}
	if err := validBorrowReport(&r, g.cfg.NodeID); err != nil {
		g.cfg.Logger.Warn("cluster: invalid borrow report dropped", "err", err)
		return
	}
	g.cfg.System.Root.Send(g.cfg.Raylet, &r)
}

// validBorrowReport checks a report from the network: well-formed ids,
// for an owner on self, at most owner.MaxLent objects.
func validBorrowReport(r *atollpb.BorrowReport, self ids.NodeID) error {
	if err := validID("owner_id", r.OwnerId); err != nil {
		return err
	}
	if err := validID("borrower_worker_id", r.BorrowerWorkerId); err != nil {
		return err
	}
	if len(r.BorrowerActorId) > 0 {
		if err := validID("borrower_actor_id", r.BorrowerActorId); err != nil {
			return err
		}
	}
	if node, err := ids.FromBytes(r.OwnerNode); err != nil || node != self {
		return fmt.Errorf("owner_node %x is not this node", r.OwnerNode)
	}
	if r.BorrowsSeq == 0 {
		return fmt.Errorf("borrows_seq is 0")
	}
	if len(r.Borrows) > owner.MaxLent {
		return fmt.Errorf("%d borrows, more than %d", len(r.Borrows), owner.MaxLent)
	}
	for _, b := range r.Borrows {
		if err := validObjectID(b); err != nil {
			return err
		}
	}
	return nil
}

// borrowsConfig is the raylet's hook for reports to other nodes.
func (g *Gateway) borrowsConfig(c *raylet.ClusterConfig) *raylet.ClusterConfig {
	c.Borrows = g.sendBorrows
	return c
}
