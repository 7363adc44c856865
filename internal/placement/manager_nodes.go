package placement

import (
	"bytes"
	"cmp"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/atoll-runtime/atoll/atollpb"
	"github.com/atoll-runtime/atoll/internal/ids"
	"github.com/atoll-runtime/atoll/internal/raylet"
)

// Nodes coming and going: their reports reconciled with the groups, and
// the groups a lost node held placed again.

// NodeUp records a live node: its plain resources in all and, from a load
// report, those available now, whether it is draining, and the bundles it
// holds (nil held: not from a report). Bundles a node holds that the
// Manager did not place there are released; bundles it placed there that
// the node's reports stop listing are placed again.
func (m *Manager) NodeUp(now time.Time, id ids.NodeID, total, avail raylet.Resources, draining bool, held []*atollpb.BundleHeld) {
	m.now = now
	n := m.nodes[id]
	isNew := n == nil
	if isNew {
		n = &node{id: id}
		m.nodes[id] = n
	}
	changed := isNew || !equalRes(n.total, total) || n.draining != draining
	n.total = raylet.PlainResources(total)
	n.draining = draining
	if held == nil && avail == nil {
		if !n.reported {
			n.avail = n.total.Clone()
		}
	} else {
		next := raylet.PlainResources(avail)
		for k, v := range next {
			if v > n.avail[k]+1e-9 {
				m.dirty = true // room grew: pending groups may fit (tried on the next Tick)
				break
			}
		}
		n.avail = next
		n.reported, n.reportedAt = true, now
		m.reconcile(n, held)
	}
	if changed {
		m.tryPending()
	}
}

func equalRes(a, b raylet.Resources) bool {
	return maps.Equal(raylet.PlainResources(a), raylet.PlainResources(b))
}

// reconcile compares what a node reports holding with what the Manager
// placed there.
func (m *Manager) reconcile(n *node, held []*atollpb.BundleHeld) {
	n.held = make(map[bundleKey]bool, len(held))
	for _, h := range held {
		pg, err := ids.FromBytes(h.GetPlacementGroupId())
		if err != nil {
			continue
		}
		k := bundleKey{pg: pg, index: h.GetIndex()}
		n.held[k] = h.GetCommitted()
		delete(n.inflight, k) // the report's available resources count it
	}
	for k := range n.unreleased {
		if _, ok := n.held[k]; !ok {
			delete(n.unreleased, k)
		}
	}
	// Held but not placed here, nor being: a leftover (an abort's release
	// overtaken by its prepare, a removal the node missed).
	stray := map[ids.ID16][]int{}
	for k := range n.held {
		g := m.groups[k.pg]
		if g != nil && g.info.State != atollpb.PlacementGroupState_PLACEMENT_GROUP_REMOVED {
			if int(k.index) < len(g.placed) && g.placed[k.index] == n.id {
				continue
			}
			if t := g.txn; t != nil && slices.Contains(t.nodes[n.id], int(k.index)) {
				continue
			}
		}
		if r, ok := n.unreleased[k]; ok && m.now.Sub(r.sent) < m.cfg.ReportGrace {
			continue // released lately; the node's reports may not show it yet
		}
		stray[k.pg] = append(stray[k.pg], int(k.index))
	}
	for _, pg := range sortedIDs(stray) {
		indices := stray[pg]
		slices.Sort(indices)
		op := &atollpb.BundleOp{Kind: atollpb.BundleOp_RELEASE, NodeId: n.id.Bytes(), Reason: "its placement group has no bundle there"}
		for _, i := range indices {
			op.Bundles = append(op.Bundles, &atollpb.BundleRef{PlacementGroupId: pg.Bytes(), Index: int32(i)})
			if n.unreleased == nil {
				n.unreleased = map[bundleKey]release{}
			}
			k := bundleKey{pg: pg, index: int32(i)}
			r := n.unreleased[k] // resources known if a removal released it before
			r.sent = m.now
			n.unreleased[k] = r
		}
		m.cfg.Logger.Info("placement: releasing bundles a node holds for no group", "node", n.id.Short(), "group", pg.Short(), "bundles", indices)
		m.emit(Send{Node: n.id, Op: op})
	}
	// Placed here but not held: lost (past the grace a report may lag).
	lostBundles := map[ids.ID16][]int{}
	for k := range m.placedOn[n.id] {
		g := m.groups[k.pg]
		if g == nil || g.info.State != atollpb.PlacementGroupState_PLACEMENT_GROUP_CREATED || m.now.Sub(g.since) < m.cfg.ReportGrace {
			continue
		}
		if c, ok := n.held[k]; !ok || !c {
			lostBundles[k.pg] = append(lostBundles[k.pg], int(k.index))
		}
	}
	var lost []*group
	for _, pg := range sortedIDs(lostBundles) {
		lost = append(lost, m.groups[pg])
	}
	slices.SortFunc(lost, func(a, b *group) int { return cmp.Compare(a.seq, b.seq) })
	for _, g := range lost {
		for _, i := range lostBundles[g.id()] {
			m.setPlaced(g, i, ids.NodeID{})
		}
		m.cfg.Logger.Warn("placement: a node does not hold bundles it committed; placing them again", "node", n.id.Short(), "group", g.id().Short())
		m.reschedule(g, fmt.Sprintf("node %s lost some of its bundles", n.id.Short()))
		m.try(g)
	}
}

// Waiting takes the groups a node's load report shows work waiting for
// (raylet.GroupsIn of its demands): for each one the Manager removed, it
// tells the node again (Notify), at most once a ReportGrace while the
// reports show it: the node missed the removal's notice, and what waits
// there for the group would wait for ever.
func (m *Manager) Waiting(now time.Time, id ids.NodeID, groups []ids.ID16) {
	m.now = now
	n := m.nodes[id]
	if n == nil {
		return
	}
	var next map[ids.ID16]time.Time
	groups = slices.Clone(groups)
	slices.SortFunc(groups, func(a, b ids.ID16) int { return bytes.Compare(a[:], b[:]) })
	for _, pg := range groups {
		g := m.groups[pg]
		if g == nil || g.info.State != atollpb.PlacementGroupState_PLACEMENT_GROUP_REMOVED {
			continue
		}
		if next == nil {
			next = map[ids.ID16]time.Time{}
		}
		if at, ok := n.notified[pg]; ok && now.Sub(at) < m.cfg.ReportGrace {
			next[pg] = at // told lately: the report may predate it
			continue
		}
		next[pg] = now
		m.cfg.Logger.Info("placement: telling a node again of a removal it missed", "node", id.Short(), "group", pg.Short())
		m.emit(Notify{Node: id, Info: g.snapshot()})
	}
	n.notified = next
}

// NodeDown forgets a node that died or left: the bundles it held are
// placed again (the groups go RESCHEDULING), a commit in flight with it
// fails, and the groups it created (not detached) are removed.
func (m *Manager) NodeDown(now time.Time, id ids.NodeID, left bool) {
	m.now = now
	delete(m.nodes, id)
	for _, t := range m.sortedTxns() {
		if _, ok := t.nodes[id]; !ok {
			continue
		}
		if t.commit {
			// Its bundles die with it, committed or not: the commit
			// places them again when it ends, never on this node.
			t.lostOn(id)
			if _, waiting := t.waiting[id]; waiting {
				delete(t.waiting, id)
				t.refused = fmt.Sprintf("node %s died while it committed bundles", id.Short())
				m.progress(t)
			} else if t.refused == "" {
				t.refused = fmt.Sprintf("node %s died after it committed bundles", id.Short())
			}
			continue
		}
		m.answer(t, id, fmt.Sprintf("node %s died", id.Short()))
	}
	how := "died"
	if left {
		how = "left"
	}
	var gone []*group
	for _, g := range m.sortedGroups() {
		if g.info.State == atollpb.PlacementGroupState_PLACEMENT_GROUP_REMOVED {
			continue
		}
		if !g.info.Detached && bytes.Equal(g.info.CreatorNodeId, id.Bytes()) {
			gone = append(gone, g)
			continue
		}
		lost := false
		for i, n := range g.placed {
			if n == id {
				m.setPlaced(g, i, ids.NodeID{})
				lost = true
			}
		}
		if lost {
			m.reschedule(g, fmt.Sprintf("node %s %s", id.Short(), how))
		}
	}
	for _, g := range gone {
		m.Remove(now, g.id(), fmt.Sprintf("removed: its creator's node %s %s", id.Short(), how))
	}
	m.tryPending()
}

// reschedule puts a group whose bundles were lost back to placing them.
func (m *Manager) reschedule(g *group, reason string) {
	next := shallowCopy(g.info)
	if next.State == atollpb.PlacementGroupState_PLACEMENT_GROUP_CREATED {
		next.Reschedules++
	}
	next.State = atollpb.PlacementGroupState_PLACEMENT_GROUP_RESCHEDULING
	if g.complete() {
		next.State = atollpb.PlacementGroupState_PLACEMENT_GROUP_CREATED
	}
	next.Reason = reason
	next.BundleNodes = g.nodeBytes()
	g.info, g.moved = next, false
	m.emit(Persist{Info: g.snapshot()})
	m.emit(Changed{Info: g.snapshot()})
}
