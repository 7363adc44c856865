package placement

// What the shell reads of the Manager: a group by id or name, every
// group, the pending ones (the autoscaler's demand), and the sizes of its
// tables.

import (
	"github.com/atoll-runtime/atoll/atollpb"
	"github.com/atoll-runtime/atoll/internal/errs"
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

// Lookup answers a GetPlacementGroup request: the group by id, or else
// the live one by namespace and name; ErrNotFound if there is none.
func (m *Manager) Lookup(r *atollpb.GetPlacementGroup) (*atollpb.PlacementGroupInfo, error) {
	if len(r.GetPlacementGroupId()) > 0 {
		return m.ByID(r.GetPlacementGroupId())
	}
	if info := m.Named(r.GetNamespace(), r.GetName()); info != nil {
		return info, nil
	}
	return nil, errs.NotFoundf("placement group %q not found in namespace %q", r.GetName(), r.GetNamespace())
}

// ByID returns the group whose id is id's bytes (a wait's, a read's);
// ErrNotFound if there is none or the bytes are not an id.
func (m *Manager) ByID(id []byte) (*atollpb.PlacementGroupInfo, error) {
	if pg, err := ids.FromBytes(id); err == nil {
		if info := m.Group(pg); info != nil {
			return info, nil
		}
	}
	return nil, errs.NotFoundf("placement group %x not found", id)
}

// Settled reports whether a waiter for the group has its answer: it is
// created or removed.
func Settled(info *atollpb.PlacementGroupInfo) bool {
	return info.State == atollpb.PlacementGroupState_PLACEMENT_GROUP_CREATED || info.State == atollpb.PlacementGroupState_PLACEMENT_GROUP_REMOVED
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
