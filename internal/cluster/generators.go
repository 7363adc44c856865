package cluster

import (
	"log/slog"
	"strconv"
	"time"

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
func (f *Forwarder) itemFromRaylet(res *atollpb.TaskResult) {
	k := keyOf(res.TaskId, res.Attempt)
	stack := f.inbound[k]
	if len(stack) == 0 || f.itemFailed[k] != nil {
		return // its origin died, the attempt ended, or an item failed it
	}
	top := stack[len(stack)-1]
	m := &atollpb.ForwardedResult{Result: res, FromNode: f.cfg.Self.Bytes(), Hops: top.hops}
	if err := f.fits(m); err != nil {
		f.failItem(res, top.origin, err)
		return
	}
	f.emit(Publish{To: top.origin, Kind: KindResult, Msg: m, Unsent: UnsentFailsItem})
}

// failItem fails the attempt running here whose item res could not be
// sent back to origin (err): it is cancelled, and its result will carry
// the error.
func (f *Forwarder) failItem(res *atollpb.TaskResult, origin ids.NodeID, err error) {
	k := keyOf(res.TaskId, res.Attempt)
	info := errs.ToProto(err)
	info.Message = "item " + strconv.FormatInt(res.GetGeneratorItem().GetIndex(), 10) + " of generator task " + k.task.Short() +
		" could not be sent back to node " + origin.Short() + ": " + info.Message
	f.log(slog.LevelWarn, "cluster: a generator item could not be sent back; its attempt is cancelled and fails",
		"task", k.task.Short(), "attempt", k.attempt, "err", err)
	f.itemFailed[k] = info
	f.emit(ToRaylet{&atollpb.CancelTask{TaskId: res.TaskId, OneAttempt: true, Attempt: res.Attempt}})
}

// itemFromPeer hands an item that came back on link m.Hops to the owner of
// this node's pending entry for that link, or relays it on the link
// before (the attempt went through here); an item its attempt's result
// overtook goes where the entry sent the result. An item no entry is
// waiting for (the attempt was failed here, or its node died) is
// dropped.
func (f *Forwarder) itemFromPeer(now time.Time, m *atollpb.ForwardedResult) {
	from, err := ids.FromBytes(m.FromNode)
	if err != nil {
		return
	}
	res := m.Result
	k := keyOf(res.TaskId, res.Attempt)
	stack := f.pending[k]
	for i := len(stack) - 1; i >= 0; i-- {
		fw := stack[i]
		if fw.hops != m.Hops || fw.node != from || fw.isCall {
			continue
		}
		fw.renewed = now // the node evidently holds it
		f.passItem(fw, res, m.Hops)
		return
	}
	if e, ok := f.ended[endedLink{k: k, node: from, hops: m.Hops}]; ok {
		// Overtaken by its attempt's result: the owner decides (it frees
		// what the item stored, unless its stream still wants it).
		f.passItem(e.fw, res, m.Hops)
		return
	}
	f.log(slog.LevelDebug, "cluster: a generator item nobody waits for dropped", "task", k.task.Short(), "attempt", k.attempt, "link", m.Hops)
}

// passItem hands an item that came back on link hops to fw's owner, or
// relays it on the link before.
func (f *Forwarder) passItem(fw *forward, res *atollpb.TaskResult, hops int32) {
	switch {
	case fw.relay:
		f.relayItem(res, hops-1)
	case fw.owner != nil:
		f.emit(Deliver{To: fw.owner, Result: res})
	}
}

// relayItem sends an item on back over link hops, which brought the
// attempt here.
func (f *Forwarder) relayItem(res *atollpb.TaskResult, hops int32) {
	k := keyOf(res.TaskId, res.Attempt)
	stack := f.inbound[k]
	for i := len(stack) - 1; i >= 0; i-- {
		if a := stack[i]; a.hops == hops && a.address == "" {
			// Same size as the message that brought it here: if that
			// fitted, so does this.
			f.emit(Publish{To: a.origin, Kind: KindResult, Msg: &atollpb.ForwardedResult{Result: res, FromNode: f.cfg.Self.Bytes(), Hops: hops}})
			return
		}
	}
}

// forwardAck publishes a generator ack on the link after hops, if this
// node forwarded the attempt on it.
func (f *Forwarder) forwardAck(ack *atollpb.GeneratorAck, hops int32) {
	id, err := ids.FromBytes(ack.GetTaskId())
	if err != nil || hops >= maxAckHops {
		return
	}
	for _, fw := range f.pending[taskKey{id, ack.Attempt}] {
		if fw.hops == hops+1 && !fw.isCall {
			f.emit(Publish{To: fw.node, Kind: KindGenAck, Msg: &atollpb.ForwardGeneratorAck{Ack: ack, Hops: hops + 1}})
			return
		}
	}
}
