package objectstore

import (
	"time"

	"github.com/atoll-runtime/atoll/atollpb"
)

// Admission of waiting requests, their deadlines, and the Store's outputs
// (effects and stats).

// ExpirePending fails the queued creations (and restores) whose deadline
// is not after now with ObjectStoreFull, then admits what fits behind them.
// While a spill write is under way nothing expires: the creations wait for
// the space it frees, and the deadlines are checked again when it lands
// (SpillDone). ExpirePending also resumes spilling after a back-off.
func (s *Store) ExpirePending(now time.Time) {
	defer s.checkInvariants()
	s.settleAndExpire(now)
}

// settleAndExpire admits and spills what it can, then, unless a spill
// write is under way, fails the requests whose deadline passed.
func (s *Store) settleAndExpire(now time.Time) {
	s.settle(now)
	if s.spillsInFlight() {
		return
	}
	expired := false
	for _, req := range s.pending.RemoveExpired(now) {
		s.failed++
		expired = true
		s.complete(Completion{Token: req.Token, ID: req.ID, Client: req.Client, Err: s.fullError(req)})
	}
	if s.expireRestores(now) || expired {
		s.settle(now)
	}
}

// failPending fails every queued creation with err.
func (s *Store) failPending(err error) {
	defer s.checkInvariants()
	for _, req := range s.pending.removeIf(func(CreateRequest) bool { return true }) {
		s.complete(Completion{Token: req.Token, ID: req.ID, Client: req.Client, Err: err})
	}
}

// NextDeadline returns when ExpirePending should run next: the earliest
// deadline among queued creations and restores, or the end of a spill
// back-off. While a spill write is under way deadlines wait for it, so
// there is none.
func (s *Store) NextDeadline() (time.Time, bool) {
	if s.spillsInFlight() {
		return time.Time{}, false
	}
	next, ok := s.pending.NextDeadline()
	for _, d := range []time.Time{s.restoreDeadline(), s.spillRetryAt()} {
		if !d.IsZero() && (!ok || d.Before(next)) {
			next, ok = d, true
		}
	}
	return next, ok
}

// TakeEffects returns and clears the effects accumulated so far.
func (s *Store) TakeEffects() Effects {
	e := s.effects
	s.effects = Effects{}
	return e
}

// Stats returns a snapshot of the store's counters.
func (s *Store) Stats() *atollpb.StoreStats {
	st := &atollpb.StoreStats{
		CapacityBytes:       s.Capacity(),
		UsedBytes:           s.Used(),
		NumObjects:          uint64(len(s.objects)),
		NumSealed:           s.numSealed,
		PinnedBytes:         s.pinnedBytes,
		PendingCreates:      uint64(s.pending.Len()),
		LargestFreeBlock:    s.alloc.LargestFree(),
		CreatedTotal:        s.created,
		FailedCreatesTotal:  s.failed,
		ReadsAfterFreeTotal: s.freed.reads,
	}
	s.spillStats(st)
	return st
}

// admit hands out space to waiting requests while the head fits: restores
// first (by priority), then creations (FIFO). A request that does not fit
// holds up everything behind it, so a large one is not starved.
func (s *Store) admit(now time.Time) {
	if !s.admitRestores(now) {
		return
	}
	for {
		req, epoch, ok := s.pending.Head()
		if !ok {
			return
		}
		loc, ok := s.place(req, now)
		if !ok {
			return
		}
		s.pending.Remove(req.ID)
		s.countFallback(epoch, req.Size)
		s.complete(Completion{Token: req.Token, ID: req.ID, Client: req.Client, Location: loc})
	}
}

func (s *Store) complete(c Completion) {
	s.effects.Completions = append(s.effects.Completions, c)
}

// spillStats fills in the spilling counters of st.
func (s *Store) spillStats(st *atollpb.StoreStats) {
	sp := s.spill
	if sp == nil {
		return
	}
	st.SpilledBytesTotal = sp.spilledBytes
	st.SpilledObjectsTotal = sp.spilledObjects
	st.RestoredBytesTotal = sp.restoredBytes
	st.RestoredObjectsTotal = sp.restoredObjects
	st.SpilledBytesCurrent = sp.diskBytes
	st.SpilledObjectsCurrent = sp.diskObjects
	st.SpillFilesCurrent = uint64(len(sp.files))
	st.SpillFileBytesCurrent = sp.fileBytes
	st.SpillErrorsTotal = sp.spillErrors
	st.RestoreErrorsTotal = sp.restoreErrors
	st.FallbackCreatesTotal = sp.fallbackCreates
	st.FallbackBytesTotal = sp.fallbackBytes
	st.SpillingBytes = sp.spillingBytes
	st.PendingRestores = uint64(len(sp.restores.byID))
}
