package placement

import (
	"cmp"
	"fmt"
	"time"

	"github.com/atoll-runtime/atoll/atollpb"
	"github.com/atoll-runtime/atoll/internal/ids"
)

// The two-phase commit of a group's bundles with the nodes: their
// replies, and a transaction's progress or abort.

// Reply is a node's answer to a step (refused: a prepare or commit it
// refused; err: it could not be asked, or failed).
func (m *Manager) Reply(now time.Time, node ids.NodeID, txnID uint64, refused string, err error) {
	m.now = now
	t := m.txns[txnID]
	if t == nil {
		return // aborted or finished: a late answer
	}
	if _, ok := t.waiting[node]; !ok {
		return
	}
	why := refused
	if err != nil && why == "" {
		why = fmt.Sprintf("node %s: %v", node.Short(), err)
	}
	if !t.commit {
		m.answer(t, node, why)
		return
	}
	delete(t.waiting, node)
	if why != "" {
		m.cfg.Logger.Warn("placement: a node failed to commit bundles; placing them again", "node", node.Short(), "group", t.g.id().Short(), "why", why)
		t.lostOn(node)
		if t.refused == "" {
			t.refused = why
		}
	}
	m.progress(t)
}

// answer records a prepare's answer from node (why: refused, "" for ok).
func (m *Manager) answer(t *txn, node ids.NodeID, why string) {
	delete(t.waiting, node)
	if why != "" && t.refused == "" {
		t.refused = why
	}
	if why != "" {
		// Whatever it reserved (nothing, if it refused) is not ours to count.
		if n := m.nodes[node]; n != nil {
			for _, i := range t.nodes[node] {
				delete(n.inflight, bundleKey{pg: t.g.id(), index: int32(i)})
			}
		}
	}
	m.progress(t)
}

func (t *txn) lostOn(node ids.NodeID) {
	if t.lost == nil {
		t.lost = map[ids.NodeID]bool{}
	}
	t.lost[node] = true
}

// progress moves a transaction on once every answer is in.
func (m *Manager) progress(t *txn) {
	if len(t.waiting) > 0 {
		return
	}
	g := t.g
	if !t.commit {
		if t.refused != "" {
			m.abort(t, t.refused)
			m.setPending(g, t.refused, false)
			return
		}
		if t.onePhase {
			t.commit = true // its prepare committed
			m.progress(t)
			return
		}
		// Every node prepared: commit.
		t.commit = true
		t.deadline = m.now.Add(m.cfg.OpTimeout)
		for _, n := range sortedNodes(t.nodes) {
			t.waiting[n] = struct{}{}
			op := &atollpb.BundleOp{Kind: atollpb.BundleOp_COMMIT, NodeId: n.Bytes(), Txn: t.id}
			for _, i := range t.nodes[n] {
				op.Bundles = append(op.Bundles, g.ref(i))
			}
			m.emit(Send{Node: n, Op: op})
		}
		return
	}
	// Committed: where a node failed, its bundles are placed again.
	delete(m.txns, t.id)
	g.txn = nil
	for _, n := range sortedNodes(t.nodes) {
		if t.lost[n] {
			if m.nodes[n] != nil {
				m.release(g, n, t.nodes[n], "its commit failed")
			}
			continue
		}
		for _, i := range t.nodes[n] {
			m.setPlaced(g, i, n)
		}
	}
	g.since = m.now
	next := shallowCopy(g.info)
	next.BundleNodes = g.nodeBytes()
	if g.complete() {
		if next.State != atollpb.PlacementGroupState_PLACEMENT_GROUP_CREATED {
			next.CreatedTimeUnixMs = m.now.UnixMilli()
		}
		next.State, next.Reason, next.Infeasible = atollpb.PlacementGroupState_PLACEMENT_GROUP_CREATED, "", false
	} else {
		next.Reason = cmp.Or(t.refused, "a node failed to commit some of its bundles")
	}
	g.info, g.moved = next, false
	m.emit(Persist{Info: g.snapshot()})
	m.emit(Changed{Info: g.snapshot()})
	if !g.complete() {
		m.try(g)
	}
}

// abort ends a transaction: the bundles it prepared or committed are
// released.
func (m *Manager) abort(t *txn, why string) {
	delete(m.txns, t.id)
	t.g.txn = nil
	for _, n := range sortedNodes(t.nodes) {
		if m.nodes[n] != nil {
			m.release(t.g, n, t.nodes[n], "aborted: "+why)
		}
	}
}
