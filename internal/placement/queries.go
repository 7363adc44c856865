package placement

// What the shell reads of the Manager: a group by id or name, every
// group, the pending ones (the autoscaler's demand), and the sizes of its
// tables.

import (
	"github.com/atoll-runtime/atoll/atollpb"
	"github.com/atoll-runtime/atoll/internal/ids"
)

// Group returns a group's entry (nil if unknown).
func (m *Manager) Group(id ids.ID16) *atollpb.PlacementGroupInfo {
	if g := m.groups[id]; g != nil {
		return g.snapshot()
	}
	return nil
}

// Named returns the live group named name in namespace (nil if none).
func (m *Manager) Named(namespace, name string) *atollpb.PlacementGroupInfo {
	if id, ok := m.names[nameKey(namespace, name)]; ok {
		return m.Group(id)
	}
	return nil
}

// List returns every group the Manager knows, removed ones included,
// in creation order.
func (m *Manager) List() []*atollpb.PlacementGroupInfo {
	gs := m.sortedGroups()
	out := make([]*atollpb.PlacementGroupInfo, len(gs))
	for i, g := range gs {
		out[i] = g.snapshot()
	}
	return out
}

// Pending returns the groups not fully placed, oldest first: the demand
// the autoscaler reads (the bundles not placed of each).
func (m *Manager) Pending() []*atollpb.PlacementGroupInfo {
	var out []*atollpb.PlacementGroupInfo
	for _, g := range m.sortedUnplaced() {
		out = append(out, g.snapshot())
	}
	return out
}

// Sizes are the numbers of live and removed groups and transactions in
// flight.
func (m *Manager) Sizes() (live, removed, txns int) { return m.live, len(m.removed), len(m.txns) }
