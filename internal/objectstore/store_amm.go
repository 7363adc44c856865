package objectstore

import (
	"cmp"
	"slices"
	"time"

	"github.com/atoll-runtime/atoll/atollpb"
	"github.com/atoll-runtime/atoll/internal/ids"
)

// DefaultListLimit bounds the objects an inventory lists when the request
// names no limit.
const DefaultListLimit = 4096

// Inventory lists the store's objects, largest first, at most limit
// (DefaultListLimit if 0): what the Active Memory Manager knows of this
// node. An object read (or created) within grace of now is marked as
// being read. Deleted objects are left out.
func (s *Store) Inventory(now time.Time, grace time.Duration, limit int) *atollpb.ObjectList {
	if limit <= 0 {
		limit = DefaultListLimit
	}
	list := &atollpb.ObjectList{CapacityBytes: s.Capacity(), UsedBytes: s.Used()}
	objs := make([]*object, 0, len(s.objects))
	for _, o := range s.objects {
		if !o.deleted {
			objs = append(objs, o)
		}
	}
	slices.SortFunc(objs, func(a, b *object) int {
		if c := cmp.Compare(b.loc.Length, a.loc.Length); c != 0 {
			return c
		}
		return slices.Compare(a.loc.ID[:], b.loc.ID[:])
	})
	if len(objs) > limit {
		objs, list.Truncated = objs[:limit], true
	}
	for _, o := range objs {
		h := &atollpb.ObjectHolding{ObjectId: o.loc.ID.Bytes(), Size: o.loc.Length, Copy: o.copy, Pinned: o.pins > 0,
			Reading: now.Sub(o.lastAccess) < grace, Sealed: o.sealed, Codec: o.loc.Codec}
		if !o.owner.IsZero() {
			h.OwnerId = o.owner.Bytes()
		}
		list.Objects = append(list.Objects, h)
	}
	return list
}

// DropCopies frees the copies among idList that may go: sealed copies
// pulled from another node (never a primary), not deleted, unpinned, with
// no spill I/O under way, not read within grace of now. It returns the
// ids dropped and those refused (unknown ids included).
func (s *Store) DropCopies(idList []ids.ObjectID, now time.Time, grace time.Duration) (dropped, refused []ids.ObjectID) {
	defer s.checkInvariants()
	for _, id := range idList {
		o, ok := s.objects[id]
		if !ok || !o.copy || !o.sealed || o.deleted || o.pins > 0 || o.io != ioNone || now.Sub(o.lastAccess) < grace {
			refused = append(refused, id)
			continue
		}
		o.deleted = true
		if !s.freeIfDone(o) {
			o.deleted = false // cannot happen given the checks above; keep the copy
			refused = append(refused, id)
			continue
		}
		dropped = append(dropped, id)
	}
	s.settle(now)
	return dropped, refused
}
