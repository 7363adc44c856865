package objectstore

import (
	"errors"
	"time"

	"github.com/atoll-runtime/atoll/atollpb"
	"github.com/atoll-runtime/atoll/internal/errs"
	"github.com/atoll-runtime/atoll/internal/ids"
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
	// Freed blocks of objects that were freed.
	Freed []Range
}

// GetResult is the answer to Store.Get.
type GetResult struct {
	// Locations in request order; the entry of a missing id is zero.
	Locations []Location
	// Missing holds the indexes (into the request) of the ids that are not
	// sealed: unknown, still being written, or deleted.
	Missing []int
}
