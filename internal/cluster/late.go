package cluster

import (
	"log/slog"

	"github.com/atoll-runtime/atoll/atollpb"
	"github.com/atoll-runtime/atoll/internal/ids"
)

// What comes back after its attempt ended here. An attempt sent to
// another node ends at its sender when its result comes back, when its
// node dies, or when its lease runs out (FORWARD_LOST: the node stopped
// confirming it). Only the last leaves it running: the forward or its
// result may have been delayed, not lost, and the attempt then finishes
// on that node after its owner retried it, storing its returns there
// under the ids the retry's returns have. Its result comes back to a
// gateway that no longer waits for it; dropped, the copy it stored would
// stay in that node's store until its owner exits, one leaked object per
// such race. So the link stays remembered (ended, with a generator's
// ended links: its late items go the same way), and a late result that
// stored something goes where the result would have gone: to its owner,
// which frees the copies its record does not hold (owner.FreeStrays), or
// back on the link the attempt came here on, for an attempt relayed
// through here.

// maxEnded bounds the ended attempts remembered (Forwarder.ended).
const maxEnded = 1024

// endedLink names the link an attempt went on from here.
type endedLink struct {
	k    taskKey
	node ids.NodeID
	hops int32
}

// endedAttempt is where what an ended attempt sends late goes: fw's
// owner, or, for an attempt relayed through here, back to the node it
// came from (up) on its link (upHops).
type endedAttempt struct {
	fw     *forward
	up     ids.NodeID
	upHops int32
}

// remember keeps the link of fw, k's pending entry just removed, for
// what its attempt sends late. Called before a relay's result pops the
// inbound entry it goes back on.
func (f *Forwarder) remember(k taskKey, fw *forward) {
	l := endedLink{k: k, node: fw.node, hops: fw.hops}
	if !f.endedOrder.add(l) {
		return
	}
	e := endedAttempt{fw: fw}
	if st := f.inbound[k]; fw.relay && len(st) > 0 {
		top := st[len(st)-1]
		e.up, e.upHops = top.origin, top.hops
	}
	f.ended[l] = e
	for f.endedOrder.len() > maxEnded {
		old, _ := f.endedOrder.popOldest()
		delete(f.ended, old)
	}
}

// resultFromPeer applies a result that came back from another node: to
// the entry waiting for it, or, late, to the owner of the ended attempt
// it belongs to, if it stored something.
func (f *Forwarder) resultFromPeer(m *atollpb.ForwardedResult) {
	res := m.Result
	k := keyOf(res.TaskId, res.Attempt)
	if len(f.pending[k]) > 0 {
		f.deliver(res)
		return
	}
	from, err := ids.FromBytes(m.FromNode)
	if err != nil {
		return
	}
	e, ok := f.ended[endedLink{k: k, node: from, hops: m.Hops}]
	if !ok || res.Error != nil || !storedSome(res) {
		return // a duplicate, or late with nothing to free
	}
	f.log(slog.LevelDebug, "cluster: a late result of a lost attempt goes to its owner, to free what it stored",
		"task", k.task.Short(), "attempt", k.attempt, "node", from.Short())
	switch {
	case e.fw.relay:
		if !e.up.IsZero() {
			f.emit(Publish{To: e.up, Kind: KindResult, Msg: &atollpb.ForwardedResult{Result: res, FromNode: f.cfg.Self.Bytes(), Hops: e.upHops},
				Unsent: UnsentIgnored})
		}
	case e.fw.owner != nil:
		f.emit(Deliver{To: e.fw.owner, Result: res})
	}
}

// storedSome reports whether a result has a return in a store.
func storedSome(res *atollpb.TaskResult) bool {
	for _, r := range res.Returns {
		if r.GetValue().GetStored() != nil {
			return true
		}
	}
	return false
}
