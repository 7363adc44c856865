package objectstore

import (
	"errors"
	"fmt"
	"time"

	"github.com/atoll-runtime/atoll/internal/errs"
	"github.com/atoll-runtime/atoll/internal/objectstore/spill"
)

// Spilling adds states to a sealed object (see store.go's object):
//
//	state            block  disk copy  Get                 may be freed
//	in memory        yes    no         pins                when unpinned
//	spilling         yes    (writing)  pins                after SpillDone
//	spilled          no     yes        Restore, then pins  at once
//	restoring        yes    yes        waits (Restore)     after RestoreDone
//	restored         yes    yes        pins                when unpinned
//
// Spilling an object that is on disk already (restored) only gives up its
// block ("evict"); the disk copy lives until the object is freed, and a
// spill file is removed when its last live object is freed.

// SpillPolicy says when a spilling store spills and how it fuses files.
// Zero fields take the defaults (DefaultSpillThreshold and its siblings).
type SpillPolicy struct {
	// Threshold is the fraction of capacity that objects in memory may
	// use before the store spills (down to the threshold less one batch,
	// or less the headroom above the threshold if that is smaller). A
	// creation or restore that does not fit spills whatever the usage.
	// At most 1; 1 spills only for creations and restores that wait.
	Threshold float64
	// BatchBytes is the most bytes fused into one spill file.
	BatchBytes uint64
	// MaxObjects is the most objects fused into one spill file.
	MaxObjects int
}

func (p SpillPolicy) withDefaults() SpillPolicy {
	if p.Threshold <= 0 || p.Threshold > 1 {
		p.Threshold = DefaultSpillThreshold
	}
	if p.BatchBytes == 0 {
		p.BatchBytes = DefaultSpillBatchBytes
	}
	if p.MaxObjects <= 0 {
		p.MaxObjects = DefaultSpillMaxObjects
	}
	return p
}

// Back-off after a failed spill write: no new writes for spillBackoffMin,
// doubling with every consecutive failure up to spillBackoffMax. Evicting
// objects that are on disk already needs no write and goes on meanwhile.
const (
	spillBackoffMin = 100 * time.Millisecond
	spillBackoffMax = 10 * time.Second
)

// errStaleIO is returned by SpillDone and RestoreDone for an operation the
// store no longer waits for (abandoned when the spiller stopped).
var errStaleIO = errors.New("objectstore: outcome of an abandoned spill operation")

// spillState is the part of the Store that only a spilling store has.
type spillState struct {
	policy SpillPolicy

	// batches in flight, by id, with their objects in file order.
	batches       map[uint64][]*object
	nextBatch     uint64
	spillingBytes uint64 // blocks of the objects in flight
	files         map[string]*spillFile
	restores      restoreQueue

	retryAt  time.Time // no spill writes before
	failures int       // consecutive failed writes
	lastErr  error     // the latest of them (nil after a write succeeds)
	// paused: no spiller runs (between abandonIO and resumeIO), so no
	// write or read starts; evictions go on.
	paused bool
	// epoch counts the times spilling freed memory; a queued creation
	// admitted in a later epoch than it was queued in waited for a spill.
	epoch uint64
	// candEpoch changes whenever an object may have become spillable. A
	// pick that could not free what was needed is not repeated until it
	// changes (or the back-off ends), so a store full of pinned objects
	// does not scan its objects on every request.
	candEpoch   uint64
	exhausted   bool
	exhaustedAt exhaustKey

	// The disk of the spill directories, as the spiller last measured
	// it (SetDiskSpace): free bytes, not counting the files of the
	// batches in flight (spillingDisk), and the file system's size.
	diskKnown           bool
	diskFree, diskTotal uint64
	spillingDisk        uint64
	// diskShort: the last pick passed objects over for lack of disk.
	diskShort bool

	spilledBytes, spilledObjects   uint64
	restoredBytes, restoredObjects uint64
	spillErrors, restoreErrors     uint64
	fallbackCreates, fallbackBytes uint64
	diskBytes, diskObjects         uint64 // live objects with a disk copy
	fileBytes                      uint64 // sizes of the spill files
}

type exhaustKey struct {
	epoch   uint64
	blocked bool
	// restores: restores waited, which may use the disk's reserve.
	restores bool
}

// spillFile is a spill file and how many live objects it holds.
type spillFile struct {
	name string
	size uint64
	live int
}

// diskCopy is an object's copy in a spill file.
type diskCopy struct {
	file *spillFile
	ext  spill.Extent
}

// NewSpillingStore returns an empty store over an arena of capacity bytes
// that spills sealed, unpinned objects to disk as policy says. The store
// only decides: the batches to write and the reads to make come out of
// TakeEffects, and their outcomes go back in with SpillDone and
// RestoreDone.
func NewSpillingStore(capacity uint64, policy SpillPolicy) *Store {
	s := NewStore(capacity)
	s.spill = &spillState{
		policy:   policy.withDefaults(),
		batches:  make(map[uint64][]*object),
		files:    make(map[string]*spillFile),
		restores: newRestoreQueue(),
	}
	return s
}

// Spilling reports whether the store spills.
func (s *Store) Spilling() bool { return s.spill != nil }

// settle admits waiting requests, then spills if usage or waiting requests
// call for it, for as long as spilling frees memory at once (evictions).
func (s *Store) settle(now time.Time) {
	s.admit(now)
	for s.maybeSpill(now) {
		s.admit(now)
	}
}

// spillNeed returns how many bytes of memory should be freed by spilling
// beyond the writes already under way.
func (s *Store) spillNeed() uint64 {
	sp := s.spill
	capacity, used := s.Capacity(), s.Used()
	after := used - min(used, sp.spillingBytes) // once the writes land
	limit := uint64(float64(capacity) * sp.policy.Threshold)
	var need uint64
	if after > limit {
		// Spill at least a batch, so small objects are fused, but not
		// below the threshold by more than the headroom above it.
		need = after - limit + min(sp.policy.BatchBytes, capacity-limit)
	}
	if waiting := s.pending.bytes + sp.restores.bytes; waiting > 0 {
		free := capacity - after
		switch {
		case waiting > free:
			need = max(need, waiting-free)
		case len(sp.batches) == 0:
			// Enough bytes are free, but not in one piece: spill more
			// until the head fits (each round frees one object at least).
			need = max(need, s.headBlock())
		}
	}
	return need
}

// headBlock returns the block size of the request at the head of the
// admission order.
func (s *Store) headBlock() uint64 {
	if r, ok := s.spill.restores.head(); ok {
		return s.objects[r.id].block
	}
	if req, _, ok := s.pending.Head(); ok {
		return BlockSize(req.Size)
	}
	return 0
}

// maybeSpill picks objects to spill if memory is needed and carries out
// the plan: evictions at once, writes as Effects.Spills. It reports whether
// it freed memory at once.
func (s *Store) maybeSpill(now time.Time) bool {
	sp := s.spill
	if sp == nil {
		return false
	}
	if !sp.retryAt.IsZero() && !now.Before(sp.retryAt) {
		sp.retryAt = time.Time{} // back-off over; failures keep counting
		sp.candEpoch++
	}
	blocked := sp.paused || now.Before(sp.retryAt)
	need := s.spillNeed()
	forRestore := sp.restores.queued.Len() > 0
	key := exhaustKey{sp.candEpoch, blocked, forRestore}
	if need == 0 || (sp.exhausted && sp.exhaustedAt == key) {
		return false
	}
	disk, limited := s.diskBudget(forRestore)
	plan := PickSpill(s.spillSnapshot(), need, SpillLimits{
		BatchBytes:    sp.policy.BatchBytes,
		MaxObjects:    sp.policy.MaxObjects,
		WritesBlocked: blocked,
		DiskLimited:   limited,
		DiskBytes:     disk,
	})
	sp.exhausted, sp.exhaustedAt = plan.Bytes < need, key
	sp.diskShort = plan.DiskShort
	for _, id := range plan.Evict {
		s.releaseBlock(s.objects[id])
	}
	if len(plan.Evict) > 0 {
		sp.epoch++
	}
	for _, batch := range plan.Batches {
		sp.nextBatch++
		objs := make([]*object, len(batch))
		locs := make([]Location, len(batch))
		for i, id := range batch {
			o := s.objects[id]
			o.io = ioSpilling
			sp.spillingBytes += o.block
			objs[i], locs[i] = o, o.loc
		}
		sp.spillingDisk += batchFileSize(objs)
		sp.batches[sp.nextBatch] = objs
		s.effects.Spills = append(s.effects.Spills, SpillBatch{ID: sp.nextBatch, Objects: locs})
	}
	return len(plan.Evict) > 0
}

// spillSnapshot lists the objects in memory that could be spilled, for the
// picker.
func (s *Store) spillSnapshot() []SpillCandidate {
	out := make([]SpillCandidate, 0, len(s.objects))
	for id, o := range s.objects {
		if !o.resident || !o.sealed || o.deleted || o.pins > 0 || o.io != ioNone {
			continue
		}
		out = append(out, SpillCandidate{ID: id, Size: o.block, Sealed: true, OnDisk: o.disk != nil, LastAccess: o.lastAccess})
	}
	return out
}

// SpillDone records the outcome of writing batch: on success the file w
// holds its objects, whose memory is given up unless a client pinned them
// meanwhile (they keep both copies then); on error the objects stay in
// memory and no spill write starts before a back-off. It returns errStaleIO
// for a batch the store no longer waits for; the caller then removes the
// file, if one was written.
func (s *Store) SpillDone(batch uint64, w spill.Written, err error, now time.Time) error {
	defer s.checkInvariants()
	sp := s.spill
	if sp == nil {
		return errStaleIO
	}
	objs, ok := sp.batches[batch]
	if !ok {
		return errStaleIO
	}
	delete(sp.batches, batch)
	sp.spillingDisk -= batchFileSize(objs)
	for _, o := range objs {
		o.io = ioNone
		sp.spillingBytes -= o.block
	}
	if err == nil && len(w.Extents) != len(objs) {
		err = fmt.Errorf("objectstore: spill file %s lists %d objects, the batch has %d", w.File, len(w.Extents), len(objs))
		s.effects.RemoveFiles = append(s.effects.RemoveFiles, w.File)
	}
	if err != nil {
		sp.spillErrors++
		sp.failures++
		sp.lastErr = err
		sp.retryAt = now.Add(min(spillBackoffMin<<min(sp.failures-1, 16), spillBackoffMax))
		s.newCandidate()
		for _, o := range objs {
			s.freeIfDone(o)
		}
		s.settleAndExpire(now)
		return nil
	}
	sp.failures, sp.lastErr, sp.retryAt = 0, nil, time.Time{}
	f := &spillFile{name: w.File, size: w.Size}
	sp.files[f.name] = f
	sp.fileBytes += f.size
	// Attach every disk copy before freeing any object, so the file
	// cannot reach zero live objects half way.
	for i, o := range objs {
		o.disk = &diskCopy{file: f, ext: w.Extents[i]}
		f.live++
		sp.diskBytes += o.loc.Length
		sp.diskObjects++
		sp.spilledBytes += o.loc.Length
		sp.spilledObjects++
	}
	for _, o := range objs {
		if !s.freeIfDone(o) && o.pins == 0 {
			s.releaseBlock(o)
		}
	}
	sp.epoch++
	s.settleAndExpire(now)
	return nil
}

// dropDiskCopy takes the object out of its spill file, and the file out of
// the store when no live object is left in it.
func (s *Store) dropDiskCopy(o *object) {
	sp, f, ext0 := s.spill, o.disk.file, o.disk.ext
	o.disk = nil
	f.live--
	sp.diskBytes -= o.loc.Length
	sp.diskObjects--
	if f.live == 0 {
		delete(sp.files, f.name)
		sp.fileBytes -= f.size
		s.effects.RemoveFiles = append(s.effects.RemoveFiles, f.name)
		return
	}
	// The others in the file live on: give back this one's pages.
	ext := ext0
	ext.Length = spill.PageAlign(ext.Length)
	s.effects.Punches = append(s.effects.Punches, ext)
}

// batchFileSize is the size of the spill file of a batch.
func batchFileSize(objs []*object) uint64 {
	lengths := make([]uint64, len(objs))
	for i, o := range objs {
		lengths[i] = o.loc.Length
	}
	return spill.FileSize(lengths...)
}

// DiskReserveFraction of the spill disk (at most a batch) is kept free
// for restores: spilling to make room for creations and for the
// threshold stops short of it, so that a Get of a spilled object can
// still spill another one to make room, however full creations made the
// disk.
const DiskReserveFraction = 16

// diskReserve returns the disk space kept for restores.
func (s *Store) diskReserve() uint64 {
	return min(s.spill.diskTotal/DiskReserveFraction, s.spill.policy.BatchBytes)
}

// diskBudget returns how many bytes of spill files may be written now
// (forRestore: to make room for a restore, which may use the reserve),
// and whether the disk is known to be limited at all.
func (s *Store) diskBudget(forRestore bool) (uint64, bool) {
	sp := s.spill
	if !sp.diskKnown {
		return 0, false
	}
	free := sp.diskFree - min(sp.diskFree, sp.spillingDisk)
	if !forRestore {
		free -= min(free, s.diskReserve())
	}
	return free, true
}

// diskTight reports whether spilling for creations has run out of disk:
// what is left is the restores' reserve.
func (s *Store) diskTight() bool {
	free, limited := s.diskBudget(false)
	return limited && free == 0
}

// SetDiskSpace records the disk space of the spill directories as last
// measured: free bytes (with the writes the store has been told of
// counted, and none of the writes in flight) and the file system's size.
// Spilling plans no more files than fit, keeping a reserve for restores
// (DiskReserveFraction).
func (s *Store) SetDiskSpace(free, total uint64, now time.Time) {
	defer s.checkInvariants()
	sp := s.spill
	if sp == nil {
		return
	}
	s.noteDiskSpace(free, total)
	s.settleAndExpire(now)
}

// noteDiskSpace is SetDiskSpace for a caller that settles the store
// itself next (SpillDone).
func (s *Store) noteDiskSpace(free, total uint64) {
	if sp := s.spill; sp != nil {
		sp.diskKnown, sp.diskFree, sp.diskTotal = true, free, total
		s.newCandidate()
	}
}

// fullResource says what a full store ran out of: the disk if the last
// spill pick passed objects over for lack of it or the last spill write
// failed, else memory.
func (s *Store) fullResource() errs.StoreResource {
	if s.spill != nil && (s.spill.diskShort || s.spill.failures > 0) {
		return errs.StoreDisk
	}
	return errs.StoreMemory
}

// abandonIO forgets the spill I/O under way, when the spiller stopped
// before answering (the store actor restarts or stops). Objects being
// spilled stay in memory; blocks being restored are freed, and the
// restores go back to waiting for space (requeue) or are dropped. Late
// answers of the old spiller are then stale (errStaleIO).
func (s *Store) abandonIO(requeue bool) {
	defer s.checkInvariants()
	sp := s.spill
	if sp == nil {
		return
	}
	for id, objs := range sp.batches {
		delete(sp.batches, id)
		sp.spillingDisk -= batchFileSize(objs)
		for _, o := range objs {
			o.io = ioNone
			sp.spillingBytes -= o.block
			s.freeIfDone(o)
		}
	}
	s.abandonRestores(requeue)
	s.newCandidate()
	sp.paused = true
}

// resumeIO lets spill I/O start again after abandonIO, once a new spiller
// runs.
func (s *Store) resumeIO(now time.Time) {
	if s.spill != nil && s.spill.paused {
		s.spill.paused = false
		s.newCandidate()
		s.settle(now)
	}
}

// spillsInFlight reports whether a spill write is under way.
func (s *Store) spillsInFlight() bool { return s.spill != nil && len(s.spill.batches) > 0 }

// spillRetryAt returns when a back-off that holds up spilling ends, or the
// zero time.
func (s *Store) spillRetryAt() time.Time {
	if s.spill == nil || s.spill.retryAt.IsZero() {
		return time.Time{}
	}
	return s.spill.retryAt
}

// spillEpoch returns the current spill epoch (0 when spilling is off).
func (s *Store) spillEpoch() uint64 {
	if s.spill == nil {
		return 0
	}
	return s.spill.epoch
}

// countFallback counts an admitted creation that waited for a spill.
func (s *Store) countFallback(queuedEpoch, size uint64) {
	if s.spill != nil && s.spill.epoch != queuedEpoch {
		s.spill.fallbackCreates++
		s.spill.fallbackBytes += size
	}
}

// newCandidate notes that an object may have become spillable.
func (s *Store) newCandidate() {
	if s.spill != nil {
		s.spill.candEpoch++
	}
}
