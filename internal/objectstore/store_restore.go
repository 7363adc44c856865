package objectstore

import (
	"time"

	"github.com/google/btree"

	"github.com/atoll-runtime/atoll/internal/errs"
	"github.com/atoll-runtime/atoll/internal/ids"
)

// restoreReq is the restore of one spilled object, from the first Get that
// asks for it until the object is back in memory (or the restore fails).
type restoreReq struct {
	id       ids.ObjectID
	priority int32
	seq      uint64    // arrival order among equal priorities
	deadline time.Time // for space; zero waits forever
	waiters  []RestoreWaiter
	// ticket is nonzero while the read is under way (space allocated).
	ticket uint64
}

// restoreQueue holds the restores: those waiting for space in priority
// order, and those reading, by ticket.
type restoreQueue struct {
	byID    map[ids.ObjectID]*restoreReq
	queued  *btree.BTreeG[*restoreReq]
	reading map[uint64]*restoreReq
	// bytes is the sum of the queued restores' blocks.
	bytes   uint64
	seq     uint64
	tickets uint64
}

func restoreLess(a, b *restoreReq) bool {
	if a.priority != b.priority {
		return a.priority > b.priority
	}
	return a.seq < b.seq
}

func newRestoreQueue() restoreQueue {
	return restoreQueue{
		byID:    make(map[ids.ObjectID]*restoreReq),
		queued:  btree.NewG(btreeDegree, restoreLess),
		reading: make(map[uint64]*restoreReq),
	}
}

// head returns the restore first in line for space.
func (q *restoreQueue) head() (*restoreReq, bool) { return q.queued.Min() }

// restoresWaiting reports whether restores wait for space (they go before
// creations).
func (s *Store) restoresWaiting() bool { return s.spill != nil && s.spill.restores.queued.Len() > 0 }

// Restore asks for a spilled object to be read back into memory for a
// waiting Get. The read starts when space allows (Effects.Restores), ahead
// of waiting creations and in priority order among restores; the outcome
// comes as an Effects.Restored entry, with the object pinned for the
// waiter. Several Gets of one object share one restore. It fails with
// NOT_FOUND for an object that is not in the store (or deleted), and with
// INVALID_ARGUMENT for one that is in memory (Get it) or when spilling is
// off.
func (s *Store) Restore(req RestoreRequest, now time.Time) error {
	defer s.checkInvariants()
	if s.spill == nil {
		return errs.Invalidf("restore of object %s: spilling is off", req.ID)
	}
	o, ok := s.objects[req.ID]
	switch {
	case !ok || !o.sealed || o.deleted:
		return errs.NotFoundf("object %s not in store", req.ID)
	case o.resident && o.io != ioRestoring:
		return errs.Invalidf("object %s is in memory", req.ID)
	case req.Waiter.Pins <= 0:
		return errs.Invalidf("restore of object %s for %d pins", req.ID, req.Waiter.Pins)
	}
	q := &s.spill.restores
	r := q.byID[req.ID]
	if r == nil {
		q.seq++
		r = &restoreReq{id: req.ID, priority: req.Priority, seq: q.seq, deadline: req.Deadline}
		q.byID[req.ID] = r
		q.queued.ReplaceOrInsert(r)
		q.bytes += o.block
	} else {
		if r.ticket == 0 && req.Priority > r.priority {
			q.queued.Delete(r)
			r.priority = req.Priority
			q.queued.ReplaceOrInsert(r)
		}
		if r.deadline.IsZero() || req.Deadline.IsZero() {
			r.deadline = time.Time{}
		} else if req.Deadline.After(r.deadline) {
			r.deadline = req.Deadline
		}
	}
	r.waiters = append(r.waiters, req.Waiter)
	s.settle(now)
	return nil
}

// admitRestores allocates blocks for queued restores in priority order
// while they fit, and reports whether none is left waiting.
func (s *Store) admitRestores(now time.Time) bool {
	if s.spill == nil {
		return true
	}
	if s.spill.paused {
		return s.spill.restores.queued.Len() == 0
	}
	q := &s.spill.restores
	for {
		r, ok := q.queued.Min()
		if !ok {
			return true
		}
		o := s.objects[r.id]
		off, ok := s.alloc.Alloc(o.loc.Length)
		if !ok {
			return false
		}
		q.queued.Delete(r)
		q.bytes -= o.block
		q.tickets++
		r.ticket = q.tickets
		q.reading[r.ticket] = r
		o.loc.Offset, o.resident, o.io = off, true, ioRestoring
		s.effects.Restores = append(s.effects.Restores, RestoreStart{Ticket: r.ticket, Location: o.loc, Extent: o.disk.ext, Priority: r.priority})
	}
}

// RestoreDone records the outcome of the read started with ticket. On
// success the object is in memory again (keeping its disk copy) and pinned
// for every waiter; on error its block is freed and it stays on disk only.
// Either way an Effects.Restored entry reports it. It returns errStaleIO
// for a read the store no longer waits for.
func (s *Store) RestoreDone(ticket uint64, err error, now time.Time) error {
	defer s.checkInvariants()
	if s.spill == nil {
		return errStaleIO
	}
	sp := s.spill
	r, ok := sp.restores.reading[ticket]
	if !ok {
		return errStaleIO
	}
	delete(sp.restores.reading, ticket)
	delete(sp.restores.byID, r.id)
	o := s.objects[r.id] // restoring objects are never freed
	o.io = ioNone
	out := RestoreOutcome{ID: r.id, Waiters: r.waiters}
	switch {
	case err != nil:
		sp.restoreErrors++
		s.releaseBlock(o)
		out.Err = restoreFailed(r.id, err)
		s.freeIfDone(o)
	case o.deleted:
		s.free(o)
		out.Err = errs.NotFoundf("object %s deleted while it was restored", r.id)
	default:
		sp.restoredBytes += o.loc.Length
		sp.restoredObjects++
		o.lastAccess = now
		out.Location = o.loc
		for _, w := range r.waiters {
			for range w.Pins {
				s.pin(o, w.Client)
			}
		}
		if s.diskTight() {
			// The disk is full but for the reserve, which spilling
			// others to make room for this restore may have used: give
			// the object's disk space back (it is written again if it
			// is spilled again).
			s.dropDiskCopy(o)
		}
		s.newCandidate() // spillable at once if nobody waits any more
	}
	s.effects.Restored = append(s.effects.Restored, out)
	s.settle(now)
	return nil
}

// expireRestores fails the queued restores whose deadline passed with
// ObjectStoreFull and reports whether there were any.
func (s *Store) expireRestores(now time.Time) bool {
	if s.spill == nil {
		return false
	}
	q := &s.spill.restores
	var expired []*restoreReq
	q.queued.Ascend(func(r *restoreReq) bool {
		if !r.deadline.IsZero() && !r.deadline.After(now) {
			expired = append(expired, r)
		}
		return true
	})
	for _, r := range expired {
		o := s.objects[r.id]
		s.dequeueRestore(r, o.block)
		s.effects.Restored = append(s.effects.Restored, RestoreOutcome{ID: r.id, Waiters: r.waiters, Err: &errs.ObjectStoreFullError{
			ObjectID: r.id.String(), Requested: o.loc.Length, Capacity: s.Capacity(), Used: s.Used(), Resource: s.fullResource(),
		}})
	}
	return len(expired) > 0
}

// restoreDeadline returns the earliest deadline of the queued restores, or
// the zero time.
func (s *Store) restoreDeadline() time.Time {
	var earliest time.Time
	if s.spill == nil {
		return earliest
	}
	s.spill.restores.queued.Ascend(func(r *restoreReq) bool {
		if !r.deadline.IsZero() && (earliest.IsZero() || r.deadline.Before(earliest)) {
			earliest = r.deadline
		}
		return true
	})
	return earliest
}

// dequeueRestore removes a queued (not reading) restore of an object with
// a block of the given size.
func (s *Store) dequeueRestore(r *restoreReq, block uint64) {
	q := &s.spill.restores
	q.queued.Delete(r)
	q.bytes -= block
	delete(q.byID, r.id)
}

// withdrawRestore drops the queued restore of an object being freed; its
// waiters learn that the object is gone.
func (s *Store) withdrawRestore(o *object) {
	if s.spill == nil {
		return
	}
	r, ok := s.spill.restores.byID[o.loc.ID]
	if !ok || r.ticket != 0 {
		return
	}
	s.dequeueRestore(r, o.block)
	s.effects.Restored = append(s.effects.Restored, RestoreOutcome{ID: r.id, Waiters: r.waiters, Err: errs.NotFoundf("object %s deleted", r.id)})
}

// dropRestoreWaiters forgets the client's waiting Gets; a queued restore
// nobody waits for any more is dropped.
func (s *Store) dropRestoreWaiters(client ids.WorkerID) {
	if s.spill == nil {
		return
	}
	var idle []*restoreReq
	for _, r := range s.spill.restores.byID {
		kept := r.waiters[:0]
		for _, w := range r.waiters {
			if w.Client != client {
				kept = append(kept, w)
			}
		}
		r.waiters = kept
		if len(kept) == 0 && r.ticket == 0 {
			idle = append(idle, r)
		}
	}
	for _, r := range idle {
		s.dequeueRestore(r, s.objects[r.id].block)
	}
}

// abandonRestores forgets the reads under way (see abandonIO): their blocks
// are freed and they wait for space again if requeue is set. Without
// requeue every restore is dropped, queued ones included, with no outcome.
func (s *Store) abandonRestores(requeue bool) {
	q := &s.spill.restores
	for ticket, r := range q.reading {
		delete(q.reading, ticket)
		r.ticket = 0
		o := s.objects[r.id]
		o.io = ioNone
		s.releaseBlock(o)
		if requeue && !o.deleted {
			q.queued.ReplaceOrInsert(r)
			q.bytes += o.block
			continue
		}
		delete(q.byID, r.id)
		if requeue {
			s.effects.Restored = append(s.effects.Restored, RestoreOutcome{ID: r.id, Waiters: r.waiters, Err: errs.NotFoundf("object %s deleted", r.id)})
		}
		s.freeIfDone(o)
	}
	if !requeue {
		q.queued.Clear(false)
		clear(q.byID)
		q.bytes = 0
	}
}
