package cluster

import (
	"log/slog"
	"slices"
	"time"

	"github.com/atoll-runtime/atoll/atollpb"
	"github.com/atoll-runtime/atoll/internal/ids"
	"github.com/atoll-runtime/atoll/internal/raylet"
)

// The Forwarder's view of the other nodes: their load reports (the view
// the raylet places with), the nodes that died or left, the owners of
// objects held here and the directory of copies of objects owned here.

// load records a node's report and gives the raylet the new view.
func (f *Forwarder) load(now time.Time, m *atollpb.NodeLoad) {
	node := ids.MustFromBytes(m.NodeId)
	if node == f.cfg.Self || f.dead.has(node) {
		return
	}
	if m.Leaving {
		f.nodeGone(now, node, false)
		return
	}
	if old := f.peers[node]; old == nil {
		f.heardOf(now, node)
		f.emit(PeerHeard{Node: node, TransferAddress: m.TransferAddress})
		f.log(slog.LevelDebug, "cluster: node joined the view", "node", node.Short())
	}
	f.peers[node] = m
	f.sendView()
}

// sendView gives the raylet the live peers that take work, in node order.
func (f *Forwarder) sendView() {
	view := &raylet.PeerView{Nodes: make([]raylet.NodeView, 0, len(f.peers))}
	for id, l := range f.peers {
		if l.Draining {
			continue // it takes no new work
		}
		view.Nodes = append(view.Nodes, raylet.NodeView{ID: id, Total: raylet.Resources(l.Total).Clone(),
			Available: raylet.Resources(l.Available).Clone(), QueuedCPU: l.QueuedCpu})
	}
	slices.SortFunc(view.Nodes, func(a, b raylet.NodeView) int { return compareNodes(a.ID, b.ID) })
	f.emit(ToRaylet{view})
}

// nodeGone forgets a node that died or left: it leaves the view, the work
// sent to it fails with NodeDiedError (owners retry tasks), and the work
// it sent here is dropped.
func (f *Forwarder) nodeGone(now time.Time, node ids.NodeID, died bool) {
	if node == f.cfg.Self || f.dead.has(node) {
		return
	}
	f.markDead(node)
	delete(f.notices, node)
	delete(f.knownSince, node)
	delete(f.peers, node)
	delete(f.members, node)
	delete(f.strangers, node)
	f.emit(PeerLost{Node: node})
	f.sendView()
	if died {
		f.log(slog.LevelWarn, "cluster: node failed: declared dead", "node", node.Short())
	} else {
		f.log(slog.LevelInfo, "cluster: node left the cluster", "node", node.Short())
	}
	f.failIfDead(node)
	f.emit(ToRaylet{&raylet.NodeGone{Node: node}})
	// The objects held here for owners on that node have nobody left to
	// release them.
	gone := f.owners.forget(node)
	slices.SortFunc(gone, compareNodes)
	for _, w := range gone {
		f.emit(ToStore{&atollpb.ClientDisconnected{ClientId: w.Bytes()}})
	}
	for id, nodes := range f.copies {
		if i := slices.Index(nodes, node); i >= 0 {
			if nodes = slices.Delete(nodes, i, i+1); len(nodes) == 0 {
				delete(f.copies, id)
			} else {
				f.copies[id] = nodes
			}
		}
	}
	f.dropInbound(node)
	// Only the head tells the GCS (see partition.go): a node cut off from
	// the others declares them all dead, and must not be believed.
	if f.cfg.IsHead {
		if died {
			f.reportDead(now, node, false, "declared dead: no gossip answer within the failure timeout")
		} else {
			f.reportDead(now, node, true, "left the cluster")
		}
	}
}

// dropInbound forgets the work node sent here (nobody to answer there)
// and returns the keys of the attempts it dropped, in key order: it
// leaves the quota, and a dropped task is cancelled in the raylet.
func (f *Forwarder) dropInbound(node ids.NodeID) (dropped []taskKey) {
	for _, k := range sortedKeys(f.inbound) {
		task := false
		if stack := slices.DeleteFunc(f.inbound[k], func(a arrival) bool {
			if a.origin != node {
				return false
			}
			f.quota.release(a.origin, a.size)
			task = task || a.address == ""
			return true
		}); len(stack) == len(f.inbound[k]) {
			continue // none of node's
		} else if dropped = append(dropped, k); len(stack) > 0 {
			f.inbound[k] = stack
			continue
		}
		delete(f.inbound, k)
		delete(f.itemFailed, k)
		if task {
			// Nobody wants its result any more (the origin's owner retries
			// it elsewhere, or died with it): the raylet drops it from its
			// queues, or stops it, rather than hold it outside the quota (a
			// peer could otherwise fill a node by forwarding tasks no node
			// can run, then claiming to leave). This attempt only: the
			// owner may have sent a newer one here since, from a live node
			// (found by samples/chaos: a retry cancelled when its first
			// attempt's relay died).
			f.emit(ToRaylet{&atollpb.CancelTask{TaskId: k.task.Bytes(), OneAttempt: true, Attempt: k.attempt}})
		}
	}
	return dropped
}

// markDead remembers node as dead, forgetting the oldest dead nodes past
// the cap.
func (f *Forwarder) markDead(node ids.NodeID) {
	f.dead.add(node)
	for f.dead.len() > f.cfg.MaxDeadNodes {
		old, _ := f.dead.popOldest()
		delete(f.reports, old)
		f.emit(PeerForgotten{Node: old})
	}
}

// ownersExited forgets owner processes that exited on their node and
// frees the objects they owned here.
func (f *Forwarder) ownersExited(m *atollpb.OwnersExited) {
	node := ids.MustFromBytes(m.NodeId)
	for _, b := range m.WorkerIds {
		w, err := ids.FromBytes(b)
		if err != nil {
			continue
		}
		// On the owner's own node the raylet already reclaimed them.
		if f.owners.exited(node, w) && node != f.cfg.Self {
			f.emit(ToStore{&atollpb.ClientDisconnected{ClientId: w.Bytes()}})
		}
	}
}

// addCopies records the copies a node pulled of an object owned here, or
// forgets those the AMM dropped.
func (f *Forwarder) addCopies(m *atollpb.ObjectCopies) {
	id := ids.MustObjectID(m.ObjectId)
	for _, b := range m.NodeIds {
		n, err := ids.FromBytes(b)
		if err != nil {
			continue
		}
		if m.Dropped {
			// The AMM dropped that node's copy.
			if nodes := slices.DeleteFunc(f.copies[id], func(x ids.NodeID) bool { return x == n }); len(nodes) == 0 {
				delete(f.copies, id)
			} else {
				f.copies[id] = nodes
			}
			continue
		}
		if !f.dead.has(n) && !slices.Contains(f.copies[id], n) {
			f.copies[id] = append(f.copies[id], n)
		}
	}
}
