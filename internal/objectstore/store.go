package objectstore

import (
	"errors"
	"fmt"
	"time"

	"github.com/atoll-runtime/atoll/internal/errs"
	"github.com/atoll-runtime/atoll/internal/ids"
)

// object is the Store's record of one object.
type object struct {
	// loc places the object in the arena; Offset is meaningful only while
	// the object is resident.
	loc     Location
	block   uint64 // aligned size of its block
	creator ids.WorkerID
	owner   ids.WorkerID // zero: not tied to a client
	// copy: pulled from another node (CreateRequest.Copy); only such an
	// object can be dropped by DropCopies.
	copy       bool
	sealed     bool
	pins       int // sum over clients
	deleted    bool
	lastAccess time.Time
	// resident objects hold a block of the arena; the others live only
	// on disk (disk != nil).
	resident bool
	// io is the spill I/O under way on the object, if any. While it runs
	// the block must stay where it is: the object cannot be freed.
	io ioState
	// disk is the object's copy in a spill file, if it has one.
	disk *diskCopy
}

// ioState is the spill I/O under way on an object.
type ioState uint8

const (
	ioNone ioState = iota
	// ioSpilling: the spiller reads the block into a spill file. The
	// object stays readable (Get may pin it meanwhile).
	ioSpilling
	// ioRestoring: the spiller fills the block from disk. The object is
	// invisible to Get until the read completes.
	ioRestoring
)

// clientState indexes what one client holds, so that a disconnect costs
// O(what it holds). pins is the per-client pin count of each object. An
// entry lives until the client disconnects (clients are a node's workers
// and drivers: few, and reused), so the hot path allocates no maps.
type clientState struct {
	pins     map[ids.ObjectID]int
	creating map[ids.ObjectID]struct{}
}

// Store is the state machine of the objects of one arena. It decides where
// objects go, who pins them, when they are freed and, if spilling is on,
// which ones go to disk and come back; it does no I/O, starts no goroutine
// and reads no clock. It is not safe for concurrent use: the store actor
// owns it.
//
// An object is created (unsealed, writable by its creator only) and then
// sealed (immutable, readable by anyone who pins it with Get) or aborted.
// The creator holds no pin on it once sealed. Delete frees an object at once
// if nothing pins it; otherwise the object is hidden from new Gets and freed
// when its last pin is released (an unsealed object: when sealed or
// aborted).
//
// A spilling store (NewSpillingStore) also moves sealed, unpinned objects
// to disk and back; see SpillPolicy for when, and store_spill.go for the
// object states this adds.
type Store struct {
	alloc   *Allocator
	objects map[ids.ObjectID]*object
	clients map[ids.WorkerID]*clientState
	pending pendingQueue
	// spill is the spilling state; nil when spilling is off.
	spill *spillState
	// freed remembers the ids their owner freed, to count reads after
	// free (StoreStats.reads_after_free_total).
	freed freedIDs

	numSealed   uint64
	pinnedBytes uint64
	created     uint64
	failed      uint64

	effects Effects
}

// NewStore returns an empty store over an arena of capacity bytes that
// never spills: a creation that does not fit waits for frees.
func NewStore(capacity uint64) *Store {
	return &Store{
		alloc:   NewAllocator(capacity),
		objects: make(map[ids.ObjectID]*object),
		clients: make(map[ids.WorkerID]*clientState),
		pending: newPendingQueue(),
	}
}

// ReadsAfterFree counts the Gets of ids Delete had freed, ever: a
// correct runtime never reads an object its owner freed.
func (s *Store) ReadsAfterFree() uint64 { return s.freed.reads }

// LastReadAfterFree is the id of the latest read after free (zero if
// none).
func (s *Store) LastReadAfterFree() ids.ObjectID { return s.freed.lastRead }

// Capacity returns the usable bytes of the store.
func (s *Store) Capacity() uint64 { return s.alloc.Capacity() }

// Used returns the bytes of allocated blocks.
func (s *Store) Used() uint64 { return s.alloc.Used() }

// Len returns the number of objects (sealed or not).
func (s *Store) Len() int { return len(s.objects) }

// Pending returns the number of creations waiting for space.
func (s *Store) Pending() int { return s.pending.Len() }

// Create places a new object. It returns its location, or queued=true when
// the object must wait for space (the outcome comes later as a Completion
// carrying req.Token), or an error: ErrObjectExists, or ObjectStoreFull when
// the object can never fit or its deadline leaves no time to wait.
//
// Creations are admitted in FIFO order: while any creation waits, new ones
// queue behind it even if they would fit, so a large request at the head is
// not starved by a stream of small ones.
func (s *Store) Create(req CreateRequest, now time.Time) (loc Location, queued bool, err error) {
	defer s.checkInvariants()
	if _, ok := s.objects[req.ID]; ok || s.pending.Has(req.ID) {
		return Location{}, false, objectExists(req.ID)
	}
	if s.pending.Len() == 0 && !s.restoresWaiting() {
		if loc, ok := s.place(req, now); ok {
			s.settle(now) // the threshold may be crossed
			return loc, false, nil
		}
	}
	need := BlockSize(req.Size)
	if need == 0 || need > s.Capacity() || (!req.Deadline.IsZero() && !req.Deadline.After(now)) {
		s.failed++
		return Location{}, false, s.fullError(req)
	}
	s.pending.Push(req, s.spillEpoch())
	s.settle(now) // spill to make room
	return Location{}, true, nil
}

func (s *Store) fullError(req CreateRequest) error {
	e := &errs.ObjectStoreFullError{
		ObjectID:  req.ID.String(),
		Requested: req.Size,
		Capacity:  s.Capacity(),
		Used:      s.Used(),
		Resource:  s.fullResource(),
	}
	if sp := s.spill; sp != nil && sp.failures > 0 {
		// Say why nothing moved to disk: the writes fail.
		e.Message = fmt.Sprintf("%d bytes requested, %d of %d used; the last %d spill writes failed, the latest: %v",
			e.Requested, e.Used, e.Capacity, sp.failures, sp.lastErr)
	}
	return e
}

// place allocates and records the object if it fits.
func (s *Store) place(req CreateRequest, now time.Time) (Location, bool) {
	off, ok := s.alloc.Alloc(req.Size)
	if !ok {
		return Location{}, false
	}
	o := &object{
		loc:        Location{ID: req.ID, Offset: off, Length: req.Size, Codec: req.Codec},
		block:      BlockSize(req.Size),
		creator:    req.Client,
		owner:      req.Owner,
		copy:       req.Copy,
		lastAccess: now,
		resident:   true,
	}
	s.objects[req.ID] = o
	s.freed.recreated(req.ID)
	s.client(req.Client).creating[req.ID] = struct{}{}
	s.created++
	return o.loc, true
}

// Seal makes the client's created object immutable and visible to Get.
func (s *Store) Seal(id ids.ObjectID, client ids.WorkerID, now time.Time) error {
	defer s.checkInvariants()
	o, err := s.unsealed(id, client)
	if err != nil {
		return err
	}
	o.sealed = true
	o.lastAccess = now
	s.numSealed++
	s.doneCreating(client, id)
	s.newCandidate()
	s.freeIfDone(o)
	s.settle(now)
	return nil
}

// Abort frees an object the client created and has not sealed, or withdraws
// its creation if it is still waiting for space (its Completion then carries
// an UNAVAILABLE error).
func (s *Store) Abort(id ids.ObjectID, client ids.WorkerID, now time.Time) error {
	defer s.checkInvariants()
	if req, ok := s.pending.Get(id); ok && req.Client == client {
		s.pending.Remove(id)
		s.complete(Completion{Token: req.Token, ID: id, Client: req.Client, Err: errs.Unavailablef("creation of object %s aborted", id)})
		s.settle(now)
		return nil
	}
	o, err := s.unsealed(id, client)
	if err != nil {
		return err
	}
	s.free(o)
	s.settle(now)
	return nil
}

func (s *Store) unsealed(id ids.ObjectID, client ids.WorkerID) (*object, error) {
	o, ok := s.objects[id]
	switch {
	case !ok:
		return nil, errs.NotFoundf("object %s not in store", id)
	case o.sealed:
		return nil, errs.Invalidf("object %s already sealed", id)
	case o.creator != client:
		return nil, errs.Invalidf("object %s was created by client %s, not %s", id, o.creator, client)
	}
	return o, nil
}

// Get pins, for the client, every sealed object in memory among ids (one
// pin per occurrence) and reports the others as missing. Deleted objects
// are missing: they take no new pins. A Get of an id Delete freed (one
// of the latest MaxFreedRemembered, not created again since) counts as a
// read after free (ReadsAfterFree). Sealed objects that are on disk only
// (or being read back) are missing too, and also listed in Spilled: Restore
// brings them back.
func (s *Store) Get(idList []ids.ObjectID, client ids.WorkerID, now time.Time) GetResult {
	defer s.checkInvariants()
	res := GetResult{Locations: make([]Location, len(idList))}
	for i, id := range idList {
		if s.freed.has(id) {
			s.freed.reads++
			s.freed.lastRead = id
		}
		o, ok := s.objects[id]
		if !ok || !o.sealed || o.deleted {
			res.Missing = append(res.Missing, i)
			continue
		}
		if !o.resident || o.io == ioRestoring {
			res.Missing = append(res.Missing, i)
			res.Spilled = append(res.Spilled, i)
			continue
		}
		s.pin(o, client)
		o.lastAccess = now
		res.Locations[i] = o.loc
	}
	return res
}

// Holds reports whether the store holds id (created and not freed) and
// whether it is sealed, without reading it: unlike Get, it takes no pin
// and counts no read after free.
func (s *Store) Holds(id ids.ObjectID) (created, sealed bool) {
	o, ok := s.objects[id]
	if !ok || o.deleted {
		return false, false
	}
	return true, o.sealed
}

// CreatedBy returns the client that created id, if the store holds it.
func (s *Store) CreatedBy(id ids.ObjectID) (ids.WorkerID, bool) {
	o, ok := s.objects[id]
	if !ok || o.deleted {
		return ids.WorkerID{}, false
	}
	return o.creator, true
}

// Release drops one of the client's pins on each id. An object that was
// deleted while pinned is freed with its last pin. Releasing a pin the
// client does not hold is an error (a panic in invariants builds); the
// other ids are still released.
func (s *Store) Release(idList []ids.ObjectID, client ids.WorkerID, now time.Time) error {
	defer s.checkInvariants()
	var bad []error
	for _, id := range idList {
		cs := s.clients[client]
		o, ok := s.objects[id]
		if !ok || cs == nil || cs.pins[id] == 0 {
			err := fmt.Errorf("objectstore: client %s releases object %s it has not pinned", client, id)
			if invariantsEnabled {
				panic(err)
			}
			bad = append(bad, err)
			continue
		}
		s.unpin(o, client, 1)
		s.freeIfDone(o)
	}
	s.settle(now)
	return errors.Join(bad...)
}

// Revive forgets that ids were freed: their owner rebuilds them (a Get
// of them is no read after free). Nothing else changes.
func (s *Store) Revive(idList []ids.ObjectID) {
	for _, id := range idList {
		s.freed.recreated(id)
	}
}

// Delete frees the objects now if nothing pins them, or when their last pin
// is released (unsealed ones: when sealed or aborted). Unknown ids are
// ignored, and so are creations still waiting for space; every id is
// remembered as freed (Get counts the reads after free).
func (s *Store) Delete(idList []ids.ObjectID, now time.Time) { s.delete(idList, now, true) }

// DeleteStrays deletes this store's copies of objects that live on
// elsewhere: copies a late attempt stored here after its owner moved on.
// As Delete, but the ids are not freed: a Get of them waits for them
// again (a pull of the owner's copy).
func (s *Store) DeleteStrays(idList []ids.ObjectID, now time.Time) { s.delete(idList, now, false) }

func (s *Store) delete(idList []ids.ObjectID, now time.Time, freed bool) {
	defer s.checkInvariants()
	for _, id := range idList {
		if freed {
			s.freed.add(id)
		}
		o, ok := s.objects[id]
		if !ok {
			continue
		}
		o.deleted = true
		s.freeIfDone(o)
	}
	s.settle(now)
}

// ClientDisconnected drops every pin of the client, aborts its unsealed
// creations, fails its queued ones, and frees the objects it owned (when
// their last pin goes). It costs O(objects).
func (s *Store) ClientDisconnected(client ids.WorkerID, now time.Time) {
	defer s.checkInvariants()
	for _, req := range s.pending.RemoveClient(client) {
		s.complete(Completion{Token: req.Token, ID: req.ID, Client: req.Client, Err: errs.Unavailablef("client %s disconnected", client)})
	}
	s.dropRestoreWaiters(client)
	cs := s.clients[client]
	if cs != nil {
		for id, n := range cs.pins {
			o := s.objects[id]
			s.unpin(o, client, n)
			s.freeIfDone(o)
		}
		for id := range cs.creating {
			s.free(s.objects[id])
		}
		delete(s.clients, client)
	}
	// Objects the client owned have no one left to release them.
	for _, o := range s.objects {
		if o.owner == client && !client.IsZero() {
			o.deleted = true
			s.freeIfDone(o)
		}
	}
	s.settle(now)
}

func (s *Store) client(c ids.WorkerID) *clientState {
	cs := s.clients[c]
	if cs == nil {
		cs = &clientState{pins: make(map[ids.ObjectID]int), creating: make(map[ids.ObjectID]struct{})}
		s.clients[c] = cs
	}
	return cs
}

func (s *Store) doneCreating(c ids.WorkerID, id ids.ObjectID) {
	if cs := s.clients[c]; cs != nil {
		delete(cs.creating, id)
	}
}

func (s *Store) pin(o *object, c ids.WorkerID) {
	s.client(c).pins[o.loc.ID]++
	if o.pins == 0 {
		s.pinnedBytes += o.block
	}
	o.pins++
}

func (s *Store) unpin(o *object, c ids.WorkerID, n int) {
	cs := s.clients[c]
	if cs.pins[o.loc.ID] -= n; cs.pins[o.loc.ID] <= 0 {
		delete(cs.pins, o.loc.ID)
	}
	o.pins -= n
	if o.pins == 0 {
		s.pinnedBytes -= o.block
		s.newCandidate()
	}
}

// freeIfDone frees a deleted, sealed object once nothing holds it: no pin
// and no spill I/O under way. It reports whether it did.
func (s *Store) freeIfDone(o *object) bool {
	if !o.deleted || !o.sealed || o.pins > 0 || o.io != ioNone {
		return false
	}
	s.free(o)
	return true
}

// free forgets the object: its block returns to the allocator, its disk
// copy leaves its spill file, and a queued restore of it is withdrawn. The
// object has no pins and no spill I/O under way.
func (s *Store) free(o *object) {
	delete(s.objects, o.loc.ID)
	if o.sealed {
		s.numSealed--
	} else {
		s.doneCreating(o.creator, o.loc.ID)
	}
	if o.resident {
		s.releaseBlock(o)
	}
	if o.disk != nil {
		s.dropDiskCopy(o)
	}
	s.withdrawRestore(o)
}

// releaseBlock returns a resident object's block to the allocator.
func (s *Store) releaseBlock(o *object) {
	o.resident = false
	// The store allocated this block itself, so Free fails only on a
	// bookkeeping bug (a panic in invariants builds); the range is not
	// reported as freed then.
	if err := s.alloc.Free(o.loc.Offset); err == nil {
		s.effects.Freed = append(s.effects.Freed, Range{o.loc.Offset, o.block})
	}
}
