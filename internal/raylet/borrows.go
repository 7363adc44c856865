package raylet

import (
	"github.com/asynkron/protoactor-go/actor"

	"github.com/atoll-runtime/atoll/atollpb"
	"github.com/atoll-runtime/atoll/internal/ids"
)

// routeBorrowReport takes a borrower's standalone report (from a worker
// process of this node through its proxy, or from another node through
// the cluster gateway) to the owner it names: on another node through
// the cluster, here to the worker process that owns the objects (its
// actor forwards it down the connection) or to this process's own owner
// (Config.DeliverBorrows). A report whose owner is gone (an exited
// process, a node not in the cluster) is dropped: nobody keeps objects
// for that owner any more.
func (r *raylet) routeBorrowReport(ctx actor.Context, m *atollpb.BorrowReport) {
	owner, err := ids.FromBytes(m.GetOwnerId())
	if err != nil {
		r.cfg.Logger.Warn("raylet: a borrow report with a malformed owner id dropped", "err", err)
		return
	}
	if node, err := ids.FromBytes(m.GetOwnerNode()); err == nil && !node.IsZero() && node != r.cfg.NodeID {
		if r.cfg.Cluster == nil || r.cfg.Cluster.Borrows == nil {
			r.cfg.Logger.Debug("raylet: a borrow report for an owner on another node dropped: this node is not in a cluster", "owner", owner.Short(), "node", node.Short())
			return
		}
		r.cfg.Cluster.Borrows(node, m)
		return
	}
	if pid := r.ownerProcess(owner); pid != nil {
		ctx.Send(pid, m)
		return
	}
	if r.cfg.DeliverBorrows != nil && r.cfg.DeliverBorrows(m) {
		return
	}
	r.cfg.Logger.Debug("raylet: a borrow report for an owner no longer on this node dropped", "owner", owner.Short())
}

// ownerProcess is the actor of this node's worker process w (a pool
// worker or an actor host), or nil.
func (r *raylet) ownerProcess(w ids.WorkerID) *actor.PID {
	if wk := r.workers[w]; wk != nil && wk.binary != "" {
		return wk.pid
	}
	for _, h := range r.hosts {
		if h.worker == w {
			return h.pid
		}
	}
	return nil
}
