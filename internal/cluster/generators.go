package cluster

import (
	"strconv"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/atoll-runtime/atoll/atollpb"
	"github.com/atoll-runtime/atoll/internal/errs"
	"github.com/atoll-runtime/atoll/internal/ids"
)

// Streaming generator tasks across nodes. An attempt forwarded to another
// node (and maybe spilled back further) reaches the node that runs it over
// a chain of links, one per ForwardTask, numbered by its hops (1 from the
// owner's node, then 2, ...). Each link left a pending entry on its sender
// and an inbound entry on its receiver, both with the link's hops.
//
// Items go back while the attempt runs: the running node's gateway
// publishes each on the link it received the attempt on (its newest
// inbound entry), on the same subject as the attempt's final result and
// from the same actor, so the owner sees the items in order and before
// the end. A gateway receiving an item on link h hands it to the owner of
// its pending entry for h, without removing the entry (the attempt goes
// on); an entry owned by the gateway itself (the attempt was relayed
// through here) sends it on, on link h-1. Unlike a result, an item pops
// nothing, so the link number, not the top of the stacks, names the
// entries it passes through.
//
// Acks go the other way: the owner's GeneratorAck reaches the raylet of
// its node, which writes it to the worker running the attempt or, if the
// attempt does not run there, passes it to the gateway with the link it
// came on (0 from an owner of this node); the gateway publishes it on the
// next link (ForwardGeneratorAck on the receiver's "genack" subject), whose
// raylet does the same. An ack with no next link is dropped: the worker
// learns the count again with its next item's ack.

// maxAckHops bounds the link a ForwardGeneratorAck may name (links are
// bounded by the raylets' spillback limit, far below it).
const maxAckHops = 64

// itemFromRaylet sends an item of a generator attempt running here back on
// the link the attempt arrived on. An item that cannot be sent (larger
// than the NATS server's max payload) fails the attempt: it is cancelled
// here, and its result carries the error, rather than leave the caller
// waiting for an item that never comes.
func (g *gateway) itemFromRaylet(ctx actor.Context, res *atollpb.TaskResult) {
	k := keyOf(res.TaskId, res.Attempt)
	stack := g.inbound[k]
	if len(stack) == 0 || g.itemFailed[k] != nil {
		return // its origin died, the attempt ended, or an item failed it
	}
	top := stack[len(stack)-1]
	err := g.publish(nodeSubject(g.cfg.Prefix, top.origin, "result"),
		&atollpb.ForwardedResult{Result: res, FromNode: g.cfg.NodeID.Bytes(), Hops: top.hops})
	if err == nil {
		return
	}
	info := errs.ToProto(err)
	info.Message = "item " + strconv.FormatInt(res.GetGeneratorItem().GetIndex(), 10) + " of generator task " + k.task.Short() +
		" could not be sent back to node " + top.origin.Short() + ": " + info.Message
	g.cfg.Logger.Warn("cluster: a generator item could not be sent back; its attempt is cancelled and fails",
		"task", k.task.Short(), "attempt", k.attempt, "err", err)
	g.itemFailed[k] = info
	ctx.Send(g.cfg.Raylet, &atollpb.CancelTask{TaskId: res.TaskId, OneAttempt: true, Attempt: res.Attempt})
}

// itemFromPeer hands an item that came back on link m.Hops to the owner of
// this node's pending entry for that link, or relays it on the link
// before (the attempt went through here). An item no entry is waiting for
// (the attempt was failed here, or its node died) is dropped.
func (g *gateway) itemFromPeer(ctx actor.Context, m *atollpb.ForwardedResult) {
	from, err := ids.FromBytes(m.FromNode)
	if err != nil {
		return
	}
	res := m.Result
	k := keyOf(res.TaskId, res.Attempt)
	stack := g.pending[k]
	for i := len(stack) - 1; i >= 0; i-- {
		f := stack[i]
		if f.hops != m.Hops || f.node != from || f.isCall {
			continue
		}
		f.renewed = time.Now() // the node evidently holds it
		switch {
		case f.owner == nil:
		case f.owner.Equal(ctx.Self()):
			g.relayItem(res, m.Hops-1)
		default:
			ctx.Send(f.owner, res)
		}
		return
	}
	g.cfg.Logger.Debug("cluster: a generator item nobody waits for dropped", "task", k.task.Short(), "attempt", k.attempt, "link", m.Hops)
}

// relayItem sends an item on back over link hops, which brought the
// attempt here.
func (g *gateway) relayItem(res *atollpb.TaskResult, hops int32) {
	k := keyOf(res.TaskId, res.Attempt)
	stack := g.inbound[k]
	for i := len(stack) - 1; i >= 0; i-- {
		if a := stack[i]; a.hops == hops && a.address == "" {
			// Same size as the message that brought it here: if that
			// fitted, so does this.
			_ = g.publish(nodeSubject(g.cfg.Prefix, a.origin, "result"),
				&atollpb.ForwardedResult{Result: res, FromNode: g.cfg.NodeID.Bytes(), Hops: hops})
			return
		}
	}
}

// forwardAck publishes a generator ack on the link after hops, if this
// node forwarded the attempt on it.
func (g *gateway) forwardAck(ack *atollpb.GeneratorAck, hops int32) {
	id, err := ids.FromBytes(ack.GetTaskId())
	if err != nil || hops >= maxAckHops {
		return
	}
	for _, f := range g.pending[taskKey{id, ack.Attempt}] {
		if f.hops == hops+1 && !f.isCall {
			_ = g.publish(nodeSubject(g.cfg.Prefix, f.node, "genack"), &atollpb.ForwardGeneratorAck{Ack: ack, Hops: hops + 1})
			return
		}
	}
}
