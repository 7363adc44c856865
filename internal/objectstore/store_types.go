package objectstore

import (
	"errors"
	"time"

	"github.com/atoll-runtime/atoll/atollpb"
	"github.com/atoll-runtime/atoll/internal/errs"
	"github.com/atoll-runtime/atoll/internal/ids"
	"github.com/atoll-runtime/atoll/internal/objectstore/spill"
)

// ErrObjectExists is matched (errors.Is) by the error of a creation whose id
// is already in the store or already waiting for space. The error is also an
// INVALID_ARGUMENT errs.CodeError whose message contains "object exists".
var ErrObjectExists = errors.New("objectstore: object exists")

type existsError struct{ error }

func (e existsError) Is(target error) bool { return target == ErrObjectExists }
func (e existsError) Unwrap() error        { return e.error }

func objectExists(id ids.ObjectID) error {
	return existsError{errs.Invalidf("object exists: %s", id)}
}

// Location places an object inside the arena.
type Location struct {
	ID     ids.ObjectID
	Offset uint64
	Length uint64
	Codec  atollpb.Codec
}

// CreateRequest asks the Store for space for a new object.
type CreateRequest struct {
	ID     ids.ObjectID
	Size   uint64
	Codec  atollpb.Codec
	Client ids.WorkerID
	// Owner, if set, is the client owning the object: its disconnection
	// frees the object.
	Owner ids.WorkerID
	// Copy marks a copy of an object another node holds (a pull): the
	// Active Memory Manager may drop it (Store.DropCopies).
	Copy bool
	// Deadline is when a creation that must wait for space fails with
	// ObjectStoreFull. A deadline not after now means "fail at once if it
	// does not fit"; the zero time waits forever.
	Deadline time.Time
	// Token is the caller's handle on a queued creation; it comes back in
	// the Completion.
	Token uint64
}

// Completion is the outcome of a creation that was queued: either its
// Location (the object now exists, unsealed, created by the requester) or
// the error it failed with.
type Completion struct {
	Token    uint64
	ID       ids.ObjectID
	Client   ids.WorkerID
	Location Location
	Err      error
}

// Range is a block of the arena, in aligned bytes.
type Range struct {
	Offset, Size uint64
}

// Effects are the deferred outcomes of the operations since the last
// TakeEffects, in the order they happened.
type Effects struct {
	// Completions of queued creations (admitted or failed).
	Completions []Completion
	// Freed blocks: of objects that were freed, and of objects whose
	// memory was given up because they are on disk now.
	Freed []Range
	// Spills are batches to write to disk, one file each; report the
	// outcome with SpillDone.
	Spills []SpillBatch
	// Restores are reads to start, from disk into a freshly allocated
	// block; report the outcome with RestoreDone.
	Restores []RestoreStart
	// Restored are the outcomes of restores, for the Gets waiting on them.
	Restored []RestoreOutcome
	// RemoveFiles are spill files none of whose objects is alive any more.
	RemoveFiles []string
	// Punches are the disk extents (whole pages) of objects that left a
	// spill file others still live in: their space can be given back.
	Punches []spill.Extent
}

// GetResult is the answer to Store.Get.
type GetResult struct {
	// Locations in request order; the entry of a missing id is zero.
	Locations []Location
	// Missing holds the indexes (into the request) of the ids that are not
	// available: unknown, still being written, deleted, or spilled.
	Missing []int
	// Spilled holds the indexes (a subset of Missing) of the ids that are
	// sealed but on disk: Restore brings them back.
	Spilled []int
}

// SpillBatch is one spill file to write: the objects, in file order. Their
// blocks stay allocated and unchanged until SpillDone.
type SpillBatch struct {
	ID      uint64
	Objects []Location
}

// RestoreStart is one read to start: the object's bytes at Extent go into
// the arena at Location, whose block is allocated for it (and must be
// reserved before writing). Ticket identifies the read in RestoreDone.
type RestoreStart struct {
	Ticket   uint64
	Location Location
	Extent   spill.Extent
	// Priority is the highest priority of the Gets waiting for it.
	Priority int32
}

// RestoreRequest asks for a spilled object to be read back into memory on
// behalf of a waiting Get.
type RestoreRequest struct {
	ID ids.ObjectID
	// Waiter is the Get to pin the object for once it is back.
	Waiter RestoreWaiter
	// Priority orders restores waiting for space: higher first (see
	// PriorityGet and its siblings).
	Priority int32
	// Deadline is when a restore still waiting for space fails with
	// ObjectStoreFull; the zero time waits forever.
	Deadline time.Time
}

// RestoreWaiter is a Get waiting for a restore: when the object is back,
// the store pins it Pins times for Client, for the Get identified by Token.
type RestoreWaiter struct {
	Token  uint64
	Client ids.WorkerID
	Pins   int
}

// RestoreOutcome is the end of a restore. With Err nil the object is in
// memory at Location and pinned for every waiter (whether or not its Get
// still waits: a Get that gave up must release its pins). Otherwise Err
// says why: it matches errs.ErrNotFound if the object was deleted meanwhile,
// errs.ErrObjectStoreFull if no space came in time, ErrRestoreFailed if
// the read failed (the object stays on disk).
type RestoreOutcome struct {
	ID       ids.ObjectID
	Location Location
	Waiters  []RestoreWaiter
	Err      error
}

// Priorities of the Gets that restore objects (GetObjectsRequest.priority):
// the object a user's Get blocks on first, then those of a Wait, then task
// arguments, as Ray's pull manager orders them.
const (
	PriorityTaskArgument int32 = 0
	PriorityWait         int32 = 1
	PriorityGet          int32 = 2
)

// ErrRestoreFailed is matched (errors.Is) by the error of a Get whose
// object could not be read back from its spill file (an I/O error, a
// checksum mismatch). The error is also an ObjectLostError; the object
// itself stays on disk, so a later Get tries again.
var ErrRestoreFailed = errors.New("objectstore: restore from spill failed")

// restoreFailedText is in the message of every restore failure, so the
// error keeps matching ErrRestoreFailed after crossing the wire.
const restoreFailedText = "restore from spill failed"

type restoreError struct{ error }

func (e restoreError) Is(target error) bool { return target == ErrRestoreFailed }
func (e restoreError) Unwrap() error        { return e.error }

func restoreFailed(id ids.ObjectID, cause error) error {
	return restoreError{&errs.ObjectLostError{ObjectID: id.String(), Message: restoreFailedText + ": " + cause.Error()}}
}
