package cluster

import (
	"log/slog"
	"maps"
	"slices"
	"time"

	"github.com/atoll-runtime/atoll/atollpb"
	"github.com/atoll-runtime/atoll/internal/errs"
	"github.com/atoll-runtime/atoll/internal/ids"
)

// Work forwarded here is kept only for members: the nodes gossip has as
// live. Gossip declares a member dead when it stops answering, and its
// work here is then dropped (nodeGone); a node that never joined the
// gossip would never be declared dead, and its work would be held for
// ever. A node's first work can arrive before gossip told this node of
// its join, so a stranger's work is held on probation for StrangerGrace
// (a lease by default); if the stranger has not joined by then, its work
// is dropped and refused, and what it sends later is refused at once
// until it joins.

// DefaultMaxStrangers is how many non-member origins a node holds work
// for on probation at once; work from more is refused at once.
const DefaultMaxStrangers = 64

// revive: membership has a node this one declared dead as alive again.
// Only the head's verdicts reach the GCS, and a node the GCS lists dead
// exits when it hears; a verdict of another node's stays its own, and
// gossip undoes it when the node answers again (memberlist's refutation:
// the accused was cut off from this node, not dead). Such a node is a
// member again: its notices are applied again (a stream started anew,
// from the notices it owes this node since it heard of it again), its
// work is held. Keeping it dead, this node ignored the frees of its
// owners for good, and kept the copies of their objects that other
// nodes' work brought here (seed 1,700,947 of mixed, 4 nodes). What the
// verdict did stays done: the work sent to it failed (its owners
// retried it), its work here and its owners' objects were dropped. The
// head's verdict stands: the node exits once it reaches the GCS.
func (f *Forwarder) revive(node ids.NodeID) {
	if f.cfg.IsHead || !f.dead.remove(node) {
		return
	}
	f.log(slog.LevelInfo, "cluster: a node declared dead here answers again: a member again", "node", node.Short())
}

// joined records node as a live member: its work is held like any
// member's, its probation (if any) ends. A node declared dead stays dead
// (unless revive took it back first).
func (f *Forwarder) joined(node ids.NodeID) {
	if f.dead.has(node) {
		return
	}
	f.members[node] = true
	delete(f.strangers, node)
	f.outsiders.remove(node)
}

// onProbation reports whether work from origin, not a member, may be
// held for now: origin is not dead nor refused already, and it is a
// stranger seen first at most StrangerGrace ago (expireStrangers ends that) or
// there is room for one more.
func (f *Forwarder) onProbation(now time.Time, origin ids.NodeID) bool {
	if f.dead.has(origin) || f.outsiders.has(origin) {
		return false
	}
	if _, ok := f.strangers[origin]; ok {
		return true
	}
	if len(f.strangers) >= DefaultMaxStrangers {
		return false
	}
	f.strangers[origin] = now
	return true
}

// expireStrangers drops and refuses the work of the strangers that have
// not joined within StrangerGrace of their first work.
func (f *Forwarder) expireStrangers(now time.Time) {
	due := slices.SortedFunc(maps.Keys(f.strangers), compareNodes)
	for _, origin := range due {
		if now.Sub(f.strangers[origin]) <= f.cfg.StrangerGrace {
			continue
		}
		delete(f.strangers, origin)
		f.outsiders.add(origin)
		for f.outsiders.len() > f.cfg.MaxDeadNodes {
			f.outsiders.popOldest()
		}
		for _, k := range f.dropInbound(origin) {
			f.refuseStranger(origin, k.task.Bytes(), k.attempt)
		}
	}
}

// refuseStranger answers origin's attempt with PERMISSION_DENIED (it
// reaches origin if it exists) and counts it for the tick's log line.
func (f *Forwarder) refuseStranger(origin ids.NodeID, taskID []byte, attempt int32) {
	task := ids.MustFromBytes(taskID)
	err := errs.PermissionDeniedf("node %s refused task %s: node %s is not a live member of the cluster as node %s's gossip sees it (work is held only for members)",
		f.cfg.Self.Short(), task.Short(), origin.Short(), f.cfg.Self.Short())
	res := &atollpb.TaskResult{TaskId: taskID, Attempt: attempt, Error: errs.ToProto(err)}
	f.emit(Publish{To: origin, Kind: KindResult, Msg: &atollpb.ForwardedResult{Result: res, FromNode: f.cfg.Self.Bytes()}})
	if _, ok := f.refusedStrangers[origin]; ok || len(f.refusedStrangers) < DefaultMaxStrangers {
		f.refusedStrangers[origin]++
	}
}

// logStrangers logs the work refused for its origin since the last lease
// tick, in one line.
func (f *Forwarder) logStrangers() {
	if len(f.refusedStrangers) == 0 {
		return
	}
	n, origins := 0, make([]string, 0, len(f.refusedStrangers))
	for _, o := range slices.SortedFunc(maps.Keys(f.refusedStrangers), compareNodes) {
		n += f.refusedStrangers[o]
		origins = append(origins, o.Short())
	}
	f.log(slog.LevelWarn, "cluster: refused work forwarded from nodes that are not live members (PERMISSION_DENIED to them)",
		"refused", n, "origins", origins)
	clear(f.refusedStrangers)
}
